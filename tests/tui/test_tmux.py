"""The real app in a real terminal, once: tmux runs `python -m graymatter_tui`, the test
types keys and reads the pane, then checks the store through the CLI."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tui.helpers import FIXED_TEXT, run_cli

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

PROMPT = "gm-tui-test$"
DEADLINE = 60.0  # seconds; the app starts in a second or two on an idle machine


class Tmux:
    """One tmux server on a private socket (other tmux users are never touched)."""

    def __init__(self) -> None:
        self.socket = f"gm-tui-{uuid.uuid4().hex[:12]}"
        self.session = "gm"

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    def start(self) -> None:
        shell = f"env PS1={shlex.quote(PROMPT + ' ')} TERM=xterm-256color bash --norc --noprofile"
        self.run("new-session", "-d", "-s", self.session, "-x", "120", "-y", "36", shell)

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def capture(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def wait_for(self, condition: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + DEADLINE
        screen = self.capture()
        while not condition(screen):
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; the pane shows:\n{screen}")
            time.sleep(0.2)
            screen = self.capture()
        return screen

    def wait_until_still(self) -> None:
        """Wait until the pane stops changing for half a second, so a capture shows what a
        person reads once the screen has settled (the panes behind tabs 2-5 mount just
        after the first frame)."""
        deadline = time.monotonic() + DEADLINE
        before = self.capture()
        while True:
            time.sleep(0.5)
            now = self.capture()
            if now == before or time.monotonic() > deadline:
                return
            before = now

    def kill(self) -> None:
        for command in (["kill-session", "-t", self.session], ["kill-server"]):
            subprocess.run(
                ["tmux", "-L", self.socket, *command], capture_output=True, timeout=30, check=False
            )


def last_line(screen: str) -> str:
    lines = [line for line in screen.splitlines() if line.strip()]
    return lines[-1].rstrip() if lines else ""


def test_run_a_cycle_in_a_real_terminal(tmp_path: Path) -> None:
    store = tmp_path / "store"
    made = run_cli("demo", "--dir", str(store))
    assert made.returncode == 0, made.stderr
    assert "300 facts" in made.stdout

    tmux = Tmux()
    try:
        tmux.start()
        tmux.wait_for(lambda s: last_line(s) == PROMPT, "the shell prompt")
        command = (
            f"export GRAYMATTER_NOW={FIXED_TEXT}; "
            f"{shlex.quote(sys.executable)} -m graymatter_tui --dir {shlex.quote(str(store))} "
            "--llm local"
        )
        tmux.send(command, "Enter")
        screen = tmux.wait_for(
            lambda s: "graymatter-tui" in s and "Backups of the ledger database" in s,
            "the Facts tab",
        )
        assert "agent ops-agent (100 live)" in screen
        tmux.wait_until_still()

        tmux.send("3")
        tmux.wait_for(lambda s: "No cycle yet." in s, "the Consolidate tab")
        tmux.send("g")
        screen = tmux.wait_for(lambda s: "Outcome: applied" in s, "the cycle to finish")
        assert "✓ Apply" in screen and "2 facts tombstoned" in screen
        assert "− The staging database listens on port 5432." in screen

        tmux.send("q")
        screen = tmux.wait_for(lambda s: last_line(s) == PROMPT, "the shell prompt again")
        assert "Traceback" not in screen
        tmux.send("echo exit=$?", "Enter")
        tmux.wait_for(lambda s: "exit=0" in s, "the app's exit status")
    finally:
        tmux.kill()

    status = run_cli("status", "--json", "--dir", str(store))
    assert status.returncode == 0, status.stderr
    payload = json.loads(status.stdout)
    assert payload["consolidations"] == 1
    assert payload["facts_consumed"] == 2
    assert payload["live_facts"] == 299 and payload["tombstones"] == 2
