"""`hooks install|uninstall|status` on settings files that already hold a person's own
hooks: only our entries change, a backup comes first, running again changes nothing, and
a file that cannot be edited safely is refused with one line and left as it was. The
installed command is then run the way Claude Code runs it (`sh -c`)."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.hooks.claude_settings import EVENTS
from tests.hooks.conftest import Hook, read_as_client, run_cli

THEIRS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "echo their-context", "timeout": 3}]}
        ],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
    },
}


def user_file(hook: Hook) -> Path:
    return hook.home / ".claude" / "settings.json"


def write_json(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(data, indent=4) + "\n").encode()
    path.write_bytes(raw)
    return raw


def ours(data: dict[str, Any]) -> dict[str, list[str]]:
    """Our commands per event."""
    out: dict[str, list[str]] = {}
    for event, groups in data.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if "graymatter" in handler["command"]:
                    out.setdefault(event, []).append(handler["command"])
    return out


def without_ours(data: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(data))
    for event in list(copy.get("hooks", {})):
        groups = [
            {**g, "hooks": [h for h in g["hooks"] if "graymatter" not in h["command"]]}
            for g in copy["hooks"][event]
        ]
        copy["hooks"][event] = [g for g in groups if g["hooks"]]
        if not copy["hooks"][event]:
            del copy["hooks"][event]
    return copy


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".graymatter*.bak"))


def test_install_adds_our_four_hooks_and_leaves_every_other_setting_alone(hook: Hook) -> None:
    original = write_json(user_file(hook), THEIRS)
    done = run_cli(hook, "hooks", "install", "--dir", str(hook.store), "--json")
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    data = json.loads(user_file(hook).read_text())
    assert set(ours(data)) == set(EVENTS)
    assert without_ours(data) == THEIRS
    assert receipt["changed"] and receipt["file"] == str(user_file(hook))
    assert [a["event"] for a in receipt["added"]] == list(EVENTS) and receipt["removed"] == []
    assert receipt["backup"] == str(backups(user_file(hook))[0])
    assert Path(receipt["backup"]).read_bytes() == original
    for groups in data["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                if "graymatter" in handler["command"]:
                    assert handler["type"] == "command" and handler["timeout"] == 10
                    assert "matcher" not in group
    assert (
        json.loads(user_file(hook).read_text())["hooks"]["UserPromptSubmit"][0]
        == (THEIRS["hooks"]["UserPromptSubmit"][0])
    )


def test_installing_again_changes_nothing_and_makes_no_new_backup(hook: Hook) -> None:
    write_json(user_file(hook), THEIRS)
    assert run_cli(hook, "hooks", "install", "--dir", str(hook.store)).returncode == 0
    before = user_file(hook).read_bytes()
    again = run_cli(hook, "hooks", "install", "--dir", str(hook.store), "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout)["changed"] is False
    assert user_file(hook).read_bytes() == before
    assert len(backups(user_file(hook))) == 1


def test_installing_with_new_flags_replaces_ours_in_place(hook: Hook) -> None:
    write_json(user_file(hook), THEIRS)
    run_cli(hook, "hooks", "install", "--dir", str(hook.store))
    done = run_cli(hook, "hooks", "install", "--dir", str(hook.store), "--review", "all", "--json")
    receipt = json.loads(done.stdout)
    data = json.loads(user_file(hook).read_text())
    assert all(len(commands) == 1 for commands in ours(data).values())
    assert all("--review all" in c[0] for c in ours(data).values())
    assert len(receipt["removed"]) == len(EVENTS) and len(receipt["added"]) == len(EVENTS)
    assert without_ours(data) == THEIRS


def test_uninstall_takes_out_only_ours(hook: Hook) -> None:
    write_json(user_file(hook), THEIRS)
    run_cli(hook, "hooks", "install", "--dir", str(hook.store))
    done = run_cli(hook, "hooks", "uninstall", "--json")
    assert done.returncode == 0
    assert json.loads(user_file(hook).read_text()) == THEIRS
    assert len(json.loads(done.stdout)["removed"]) == len(EVENTS)
    again = run_cli(hook, "hooks", "uninstall")
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_our_handler_inside_a_persons_group_is_removed_without_their_handler(
    hook: Hook,
) -> None:
    mixed = {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": "startup",
                    "hooks": [
                        {"type": "command", "command": "echo hi"},
                        {
                            "type": "command",
                            "command": "/old/venv/bin/graymatter-tui-hook --dir /x",
                        },
                    ],
                }
            ]
        }
    }
    write_json(user_file(hook), mixed)
    assert run_cli(hook, "hooks", "uninstall").returncode == 0
    assert json.loads(user_file(hook).read_text()) == {
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
            ]
        }
    }


def test_a_project_install_writes_the_local_settings_and_fixes_the_agent(hook: Hook) -> None:
    done = run_cli(
        hook, "hooks", "install", "--project", str(hook.project), "--dir", str(hook.store)
    )
    assert done.returncode == 0, done.stderr
    local = hook.project / ".claude" / "settings.local.json"
    commands = {c for cs in ours(json.loads(local.read_text())).values() for c in cs}
    assert len(commands) == 1
    words = shlex.split(commands.pop())
    assert words[words.index("--agent") + 1] == "my-project"
    assert not user_file(hook).exists()
    assert not (hook.project / ".claude" / "settings.json").exists()


def test_dry_run_shows_the_diff_and_writes_nothing(hook: Hook) -> None:
    original = write_json(user_file(hook), THEIRS)
    done = run_cli(hook, "hooks", "install", "--dir", str(hook.store), "--dry-run")
    assert done.returncode == 0
    assert (
        done.stdout.startswith("--- ")
        and "+" in done.stdout
        and "graymatter-tui-hook" in done.stdout
    )
    assert user_file(hook).read_bytes() == original and backups(user_file(hook)) == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"hooks": {"SessionStart": [', "is not valid JSON"),
        (b'["not", "an", "object"]', "does not hold a JSON object"),
        (b'{"hooks": ["a list"]}', "not Claude Code settings as documented"),
        (b'{"hooks": {"SessionEnd": {"an": "object"}}}', "not Claude Code settings"),
    ],
)
def test_a_file_that_cannot_be_edited_safely_is_refused_and_left_alone(
    hook: Hook, content: bytes, words: str
) -> None:
    user_file(hook).parent.mkdir(parents=True)
    user_file(hook).write_bytes(content)
    done = run_cli(hook, "hooks", "install", "--dir", str(hook.store))
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and words in done.stderr
    assert user_file(hook).read_bytes() == content and backups(user_file(hook)) == []


def test_a_read_only_file_is_refused_even_for_root(hook: Hook) -> None:
    original = write_json(user_file(hook), THEIRS)
    user_file(hook).chmod(0o444)
    done = run_cli(hook, "hooks", "install", "--dir", str(hook.store))
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and "is read-only (mode 444)" in done.stderr
    assert user_file(hook).read_bytes() == original and backups(user_file(hook)) == []


def test_a_symlinked_settings_file_is_written_through_and_stays_a_link(hook: Hook) -> None:
    dotfiles = hook.home / "dotfiles" / "claude-settings.json"
    write_json(dotfiles, THEIRS)
    user_file(hook).parent.mkdir(parents=True)
    user_file(hook).symlink_to(dotfiles)
    done = run_cli(hook, "hooks", "install", "--dir", str(hook.store), "--json")
    assert done.returncode == 0, done.stderr
    assert user_file(hook).is_symlink() and os.readlink(user_file(hook)) == str(dotfiles)
    assert set(ours(json.loads(dotfiles.read_text()))) == set(EVENTS)
    assert json.loads(done.stdout)["through_symlink"] == str(dotfiles)


def test_status_reports_where_the_hooks_are_and_the_projects_agent(hook: Hook) -> None:
    write_json(user_file(hook), THEIRS)
    before = json.loads(run_cli(hook, "hooks", "status", "--json").stdout)
    assert before["installed"] is False and before["agent"] == "my-project"
    run_cli(hook, "hooks", "install", "--dir", str(hook.store))
    status = json.loads(run_cli(hook, "hooks", "status", "--json").stdout)
    user = next(f for f in status["files"] if f["scope"] == "user")
    assert status["installed"] and set(user["installed"]) == set(EVENTS)
    assert user["other_hooks"] == 2 and status["store"] == str(hook.store)
    assert status["log"]["file"] == str(hook.store / "hooks" / "hook.log")


def test_the_installed_command_runs_as_claude_code_runs_it(hook: Hook) -> None:
    run_cli(hook, "hooks", "install", "--dir", str(hook.store))
    command = ours(json.loads(user_file(hook).read_text()))["UserPromptSubmit"][0]
    payload = {
        "session_id": "s",
        "cwd": str(hook.project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "remember: installed hooks work",
    }
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook.env(),
        cwd=hook.project,
        timeout=60,
        check=False,
    )
    result = read_as_client(done, "UserPromptSubmit")
    assert result.returncode == 0 and "Stored in memory" in result.context
    assert stat.S_ISDIR((hook.store / "hooks").stat().st_mode)
