"""The hooks' pure parts: recognising secrets (and not refusing ordinary notes), naming a
project's agent, the hook's own flags, which handlers are ours, a TOML table edited in
place, and the sources a hook writes as."""

from __future__ import annotations

import tomllib

import pytest

from graymatter_tui.core import provenance
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.project_names import agent_from_directory_name
from graymatter_tui.core.secrets import find_secret
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.exchange.client_files import with_toml_table
from graymatter_tui.hooks import options
from graymatter_tui.hooks.claude_settings import is_ours
from graymatter_tui.hooks.prompt_lines import parse


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "an Anthropic API key"),
        ("key sk-abcdefghijklmnopqrstuvwxyz0123", "an OpenAI API key"),
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        ("ghp_0123456789abcdefghijklmnopqrstuvwxyz", "a GitHub token"),
        ("xoxb-123456789012-abcdefghij", "a Slack token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "a private key"),
        ("-----BEGIN PRIVATE KEY-----", "a private key"),
        ("password=correct-horse", "a password"),
        ("the Password: hunter22", "a password"),
        ("API_KEY=abcdef123456", "a credential"),
        ("postgresql://app:s3cret@db/app", "a password in a URL"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123", "a bearer token"),
    ],
)
def test_secrets_are_recognised_by_kind(text: str, kind: str) -> None:
    assert find_secret(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "The password policy asks for 12 characters",
        "Rotate the API key every 90 days",
        "secret management lives in vault",
        "token: see the onboarding doc",
        "postgresql://app@db/app needs ~/.pgpass",
        "task-ant-colony is the codename",
        "We use sk-learn for the model",
    ],
)
def test_ordinary_notes_about_secrets_are_not_refused(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("graymatter-tui", "graymatter-tui"),
        ("My Project (2)", "my-project-2"),
        ("__shared__", "shared"),
        (".dotfiles", "dotfiles"),
        ("Café Ünïcode", "café-ünïcode"),
        ("हिन्दी ऐप", "हिन्दी-ऐप"),
        ("", "project"),
        ("🙂🙂", "project"),
        ("x" * 300, "x" * 64),
    ],
)
def test_a_project_directory_becomes_a_valid_agent_id(name: str, agent: str) -> None:
    assert agent_from_directory_name(name) == agent
    assert validate_agent(agent_from_directory_name(name))


def test_the_hook_flags_read_back_what_they_write() -> None:
    hook = options.HookOptions(
        data_dir="/a b", agent="ops west", read_only=True, review="all", consolidate=True
    )
    assert options.parse(hook.args()) == hook
    assert options.parse(["--dir=/x", "--review", "off"]).review == "none"
    for bad in (["--dir"], ["--review", "maybe"], ["--dir", "a", "--store", "b"], ["-x"]):
        with pytest.raises(InvalidInput):
            options.parse(bad)


@pytest.mark.parametrize(
    ("command", "mine"),
    [
        ("/venv/bin/graymatter-tui-hook --dir /x", True),
        ("'/my venv/bin/graymatter-tui-hook'", True),
        ("/usr/bin/python3 -m graymatter_tui.hooks --dir /x", True),
        ("echo graymatter-tui-hook", False),
        ("graymatter-tui-hooks-extra", False),
        ("unbalanced 'quote", False),
    ],
)
def test_our_handlers_are_told_apart_by_what_they_run(command: str, mine: bool) -> None:
    assert is_ours({"type": "command", "command": command}) is mine
    assert not is_ours({"type": "http", "url": command})


def test_a_toml_table_is_replaced_in_place_and_the_rest_kept_byte_for_byte() -> None:
    before = (
        'model = "o3"\n\n[mcp_servers.graymatter]\ncommand = "old"\n\n'
        '[mcp_servers.graymatter.env]\nA = "1"\n\n[profiles.x]\nmodel = "m"\n'
    )
    table = '[mcp_servers.graymatter]\ncommand = "new"\n'
    after = with_toml_table(before, ["mcp_servers", "graymatter"], table)
    assert after == 'model = "o3"\n\n' + table + '[profiles.x]\nmodel = "m"\n'
    assert tomllib.loads(after)["mcp_servers"]["graymatter"] == {"command": "new"}
    assert with_toml_table(after, ["mcp_servers", "graymatter"], None) == (
        'model = "o3"\n\n[profiles.x]\nmodel = "m"\n'
    )


def test_remember_lines_are_found_only_at_the_start_of_a_line() -> None:
    parsed = parse("please remember: not this\nREMEMBER :  this one  \nrest")
    assert [(r.text, r.shared) for r in parsed.remembers] == [("this one", False)]
    assert parsed.rest == "please remember: not this\nrest"


def test_a_hook_writes_as_hook_and_the_name_is_valid_on_import() -> None:
    assert provenance.hook_source("claude-code") == "hook:claude-code"
    assert provenance.hook_source("we ird/na me") == "hook:we-ird-na-me"
    assert provenance.is_valid("hook:claude-code")
    assert not provenance.is_valid("hook:")
    assert not provenance.is_valid("hook:bad name")
