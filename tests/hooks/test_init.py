"""`init`: the MCP entry written into each client's own config file, with every serving
flag, other servers untouched, idempotent, refused as a whole when any file cannot be
edited; and the written entry serves the store to a real MCP client."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from graymatter_tui.backends.lmdb import LmdbStore
from tests.hooks.conftest import ROOT, Hook, run_cli

CODEX_BEFORE = """# my Codex settings
model = "o3"   # a comment that must survive

[mcp_servers.other]
command = "other-server"
args = ["--flag"]

[profiles.fast]
model = "mini"
"""


def files(hook: Hook) -> dict[str, Path]:
    return {
        "claude-code": hook.project / ".mcp.json",
        "cursor": hook.home / ".cursor" / "mcp.json",
        "codex": hook.home / ".codex" / "config.toml",
        "claude-desktop": hook.home / ".config" / "Claude" / "claude_desktop_config.json",
    }


def entry_of(client: str, path: Path) -> dict[str, Any]:
    if client == "codex":
        return dict(tomllib.loads(path.read_text())["mcp_servers"]["graymatter"])
    return dict(json.loads(path.read_text())["mcpServers"]["graymatter"])


def init(hook: Hook, *args: str) -> Any:
    done = run_cli(hook, "init", "--dir", str(hook.store), *args)
    return done


ALL = ["--client", "claude-code", "--client", "cursor", "--client", "codex"]
ALL += ["--client", "claude-desktop"]


def test_init_writes_every_clients_entry_with_every_flag(hook: Hook) -> None:
    paths = files(hook)
    paths["codex"].parent.mkdir(parents=True)
    paths["codex"].write_text(CODEX_BEFORE)
    paths["cursor"].parent.mkdir(parents=True)
    paths["cursor"].write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}}))
    done = init(hook, *ALL, "--review", "curation", "--read-only", "--json")
    assert done.returncode == 0, done.stderr
    receipts = {r["client"]: r for r in json.loads(done.stdout)["clients"]}
    store = str(hook.store)
    for client, path in paths.items():
        entry = entry_of(client, path)
        assert Path(entry["command"]).is_absolute()
        args = entry["args"]
        assert args[:3] == ["mcp", "--dir", store]
        assert "--read-only" in args and args[args.index("--review") + 1] == "curation"
        assert receipts[client]["action"] == "added"
    # A project's file names the project's agent; files every project shares name none.
    code_args = entry_of("claude-code", paths["claude-code"])["args"]
    assert code_args[code_args.index("--agent") + 1] == "my-project"
    assert "--agent" not in entry_of("cursor", paths["cursor"])["args"]
    assert entry_of("claude-code", paths["claude-code"])["type"] == "stdio"
    assert json.loads(paths["cursor"].read_text())["mcpServers"]["github"] == {"command": "gh-mcp"}
    text = paths["codex"].read_text()
    assert text.startswith(CODEX_BEFORE)  # every byte of the person's file kept
    assert tomllib.loads(text)["mcp_servers"]["other"] == {
        "command": "other-server",
        "args": ["--flag"],
    }
    assert receipts["codex"]["backup"] and Path(receipts["codex"]["backup"]).read_text() == (
        CODEX_BEFORE
    )


def test_init_again_changes_nothing(hook: Hook) -> None:
    assert init(hook, *ALL).returncode == 0
    before = {c: p.read_bytes() for c, p in files(hook).items()}
    again = init(hook, *ALL, "--json")
    assert again.returncode == 0
    assert {r["action"] for r in json.loads(again.stdout)["clients"]} == {"unchanged"}
    assert {c: p.read_bytes() for c, p in files(hook).items()} == before


def test_init_with_other_flags_updates_only_our_entry(hook: Hook) -> None:
    paths = files(hook)
    paths["codex"].parent.mkdir(parents=True)
    paths["codex"].write_text(CODEX_BEFORE)
    init(hook, "--client", "codex")
    done = init(hook, "--client", "codex", "--agent", "ops", "--json")
    receipt = json.loads(done.stdout)["clients"][0]
    assert receipt["action"] == "updated"
    text = paths["codex"].read_text()
    assert text.count("[mcp_servers.graymatter]") == 1
    assert entry_of("codex", paths["codex"])["args"][-2:] == ["--agent", "ops"]
    assert text.startswith(CODEX_BEFORE)


def test_dry_run_shows_diffs_and_writes_nothing(hook: Hook) -> None:
    done = init(hook, "--client", "claude-code", "--client", "cursor", "--dry-run")
    assert done.returncode == 0
    assert done.stdout.count("+++ ") == 2 and '"graymatter"' in done.stdout
    assert not any(p.exists() for p in files(hook).values())


def test_one_file_that_cannot_be_edited_stops_every_write(hook: Hook) -> None:
    paths = files(hook)
    paths["cursor"].parent.mkdir(parents=True)
    paths["cursor"].write_text("{ this is not json")
    done = init(hook, "--client", "claude-code", "--client", "cursor")
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and "is not valid JSON" in done.stderr
    assert not paths["claude-code"].exists()
    assert paths["cursor"].read_text() == "{ this is not json"


def test_a_codex_file_that_is_not_toml_is_refused(hook: Hook) -> None:
    path = files(hook)["codex"]
    path.parent.mkdir(parents=True)
    path.write_text("model = \n[[[")
    done = init(hook, "--client", "codex")
    assert done.returncode == 1 and "is not valid TOML" in done.stderr
    assert path.read_text() == "model = \n[[["


def test_http_entries_carry_the_url_and_never_the_token(hook: Hook) -> None:
    done = init(hook, "--client", "claude-code", "--client", "codex", "--http", "127.0.0.1:8799")
    assert done.returncode == 0, done.stderr
    code = entry_of("claude-code", files(hook)["claude-code"])
    assert code == {
        "type": "http",
        "url": "http://127.0.0.1:8799/mcp",
        "headers": {"Authorization": "Bearer ${GRAYMATTER_MCP_TOKEN}"},
    }
    assert entry_of("codex", files(hook)["codex"])["bearer_token_env_var"] == (
        "GRAYMATTER_MCP_TOKEN"
    )
    assert "start the server the clients connect to" in done.stderr
    desktop = init(hook, "--client", "claude-desktop", "--http", "127.0.0.1:8799")
    assert desktop.returncode == 2 and "claude-desktop" in desktop.stderr


def test_without_a_client_named_only_those_found_here_are_wired(hook: Hook) -> None:
    none = init(hook)
    assert none.returncode == 1 and "no agent client found" in none.stderr
    (hook.home / ".cursor").mkdir()
    found = init(hook, "--json")
    assert [r["client"] for r in json.loads(found.stdout)["clients"]] == ["cursor"]


def test_init_with_hooks_wires_the_server_and_the_hooks_of_the_project(hook: Hook) -> None:
    done = init(hook, "--client", "claude-code", "--hooks", "--json")
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    local = hook.project / ".claude" / "settings.local.json"
    assert receipt["hooks"]["file"] == str(local) and receipt["hooks"]["changed"]
    text = local.read_text()
    assert "graymatter-tui-hook" in text and "--agent my-project" in text


@pytest.mark.parametrize("client", ["claude-code", "cursor"])
async def test_the_written_entry_serves_the_store_to_an_mcp_client(hook: Hook, client: str) -> None:
    assert init(hook, "--client", client, "--project", str(hook.project)).returncode == 0
    path = hook.project / (".mcp.json" if client == "claude-code" else ".cursor/mcp.json")
    entry = entry_of(client, path)
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=hook.env(), cwd=str(ROOT)
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=types.Implementation(name=client, version="1")) as s,
    ):
        init_result = await s.initialize()
        assert 'agent_id "my-project"' in (init_result.instructions or "")
        result = await s.call_tool("memory_add", {"agent_id": "my-project", "text": "wired"})
        assert not result.is_error
    with LmdbStore.open(hook.store, read_only=True) as store:
        assert [(f.text, f.source) for f in store.list_facts("my-project")] == [
            ("wired", f"mcp:{client}")
        ]
