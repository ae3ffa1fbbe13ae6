"""Driving the hooks as Claude Code drives them: a process started with the hook's
command line, the event as JSON on stdin, stdout read as Claude Code reads it (exit 0;
nothing, or one JSON object whose `hookSpecificOutput.additionalContext` is added to the
model's context and whose `systemMessage` is shown to the person).

HOME points at a temporary directory in every test here, so no test can read or change
the developer's own ~/.claude, ~/.cursor or ~/.codex."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env

ROOT = Path(__file__).resolve().parents[2]
HOOK_TIMEOUT = 60


@dataclass(frozen=True)
class HookResult:
    returncode: int
    stdout: str
    stderr: str
    context: str  # additionalContext ("" when none)
    message: str  # systemMessage ("" when none)
    output: dict[str, Any] | None  # the JSON object printed (None: nothing printed)


def read_as_client(done: subprocess.CompletedProcess[bytes], event: str) -> HookResult:
    """The hook's answer, checked the way Claude Code reads it."""
    stdout = done.stdout.decode("utf-8")
    stderr = done.stderr.decode("utf-8", errors="replace")
    output: dict[str, Any] | None = None
    context = message = ""
    if stdout.strip():
        output = json.loads(stdout)  # stdout must hold only the JSON object
        assert isinstance(output, dict), stdout
        specific = output.get("hookSpecificOutput")
        if specific is not None:
            assert specific["hookEventName"] == event
            context = specific["additionalContext"]
            assert isinstance(context, str)
        message = output.get("systemMessage", "")
        assert set(output) <= {"hookSpecificOutput", "systemMessage"}, output
    return HookResult(done.returncode, stdout, stderr, context, message, output)


class Hook:
    """The hook of one test: its store, its HOME, and a way to send it events."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.store = tmp_path / "store"
        self.project = tmp_path / "My Project"
        self.project.mkdir()
        self.session = "session-1"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The client's environment: HOME here, the project in CLAUDE_PROJECT_DIR (as
        Claude Code sets it), plus `extra` (an empty value removes a variable)."""
        merged = {
            "HOME": str(self.home),
            "CLAUDE_PROJECT_DIR": str(self.project),
            "CLAUDE_CONFIG_DIR": "",
            "XDG_CONFIG_HOME": "",
            "CODEX_HOME": "",
            # Helpers the tests start leave soon (and are stopped at teardown).
            "GRAYMATTER_HOOK_HELPER_IDLE": "30",
            **(extra or {}),
        }
        env = clean_env({k: v for k, v in merged.items() if v})
        for key, value in merged.items():
            if not value:
                env.pop(key, None)
        env["PYTHONPATH"] = str(ROOT)
        return env

    def raw(
        self,
        data: bytes,
        *args: str,
        env: Mapping[str, str] | None = None,
        default_store: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        options = ["--dir", str(self.store)] if default_store else []
        return subprocess.run(
            [sys.executable, "-m", "graymatter_tui.hooks", *options, *args],
            input=data,
            capture_output=True,
            env=self.env(env),
            cwd=self.project,
            timeout=HOOK_TIMEOUT,
            check=False,
        )

    def send(
        self,
        event: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> HookResult:
        payload = {
            "session_id": self.session,
            "transcript_path": str(self.home / ".claude" / "projects" / "t.jsonl"),
            "cwd": str(self.project),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        done = self.raw(json.dumps(payload).encode(), *args, env=env)
        result = read_as_client(done, event)
        assert result.returncode == 0, result.stderr
        assert result.stderr == "", result.stderr
        return result

    def prompt(self, text: str, *args: str, **kw: Any) -> HookResult:
        return self.send("UserPromptSubmit", *args, prompt=text, **kw)

    def log_lines(self) -> list[str]:
        path = self.store / "hooks" / "hook.log"
        return path.read_text().splitlines() if path.exists() else []


def stop_helpers(root: Path) -> None:
    """Stop the hook helpers started under `root`, each by the pid it wrote."""
    for pid_file in root.rglob("helper.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)


@pytest.fixture
def hook(tmp_path: Path, clean_graymatter_env: None) -> Iterator[Hook]:
    yield Hook(tmp_path)
    stop_helpers(tmp_path)


def run_cli(hook: Hook, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real `graymatter-tui ARGS` in a subprocess, with the test's HOME."""
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args],
        capture_output=True,
        env=hook.env({"CLAUDE_PROJECT_DIR": ""}),
        cwd=cwd or hook.project,
        timeout=HOOK_TIMEOUT * 2,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )
