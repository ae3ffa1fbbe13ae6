"""The real app in a real terminal: tmux runs `python -m graymatter_tui`, the test types
keys and reads the pane. One full cycle checked through the CLI afterwards; then the
terminal settings people have (TERM, locale, colour depth, NO_COLOR), each with the fact
rows, the consolidation diff and the Status histogram on screen; and a crash, which must
restore the terminal and exit 1."""

from __future__ import annotations

import json
import re
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
EXIT_LINE = re.compile(r"^exit=(\d+)$", re.MULTILINE)
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

    def start(self, width: int = 120, height: int = 36) -> None:
        shell = (
            f"env -u COLORTERM PS1={shlex.quote(PROMPT + ' ')} TERM=xterm-256color "
            "bash --norc --noprofile"
        )
        self.run(
            "new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height), shell
        )

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def capture(self, *, escapes: bool = False) -> str:
        return self.run("capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.session)

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
            lambda s: "graymatter-tui" in s and "Disk alerts fire at 90% usage" in s,
            "the Facts tab",
        )
        assert "agent ops-agent (100 live)" in screen
        tmux.wait_until_still()

        tmux.send("3")
        tmux.wait_for(lambda s: "No cycle yet." in s, "the Consolidate tab")
        tmux.send("g")
        screen = tmux.wait_for(
            lambda s: "Outcome: applied" in s and "✓ Apply" in s and "2 facts tombstoned" in s,
            "the cycle to finish and its stages to be drawn",
        )
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


def demo_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    made = run_cli("demo", "--dir", str(store))
    assert made.returncode == 0, made.stderr
    return store


def app_command(store: Path, env: dict[str, str]) -> str:
    settings = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    return (
        f"env GRAYMATTER_NOW={FIXED_TEXT} {settings} {shlex.quote(sys.executable)} "
        f"-m graymatter_tui --dir {shlex.quote(str(store))} --llm local"
    )


def exit_status(tmux: Tmux) -> int:
    """Wait for the shell prompt, then ask the shell for the app's exit status."""
    tmux.wait_for(lambda s: last_line(s) == PROMPT, "the shell prompt again")
    tmux.send("status=$?; clear; echo exit=$status", "Enter")
    screen = tmux.wait_for(lambda s: bool(EXIT_LINE.search(s)), "the exit status")
    found = EXIT_LINE.search(screen)
    assert found is not None
    return int(found.group(1))


def assert_terminal_restored(tmux: Tmux) -> None:
    """Back in the shell: line editing and echo on (what `stty` says), the alternate
    screen left, and typed text echoed."""
    tmux.send("clear; stty -a; echo stty-$((6 * 7))", "Enter")
    screen = tmux.wait_for(lambda s: "stty-42" in s, "stty's settings")
    words = set(re.split(r"[\s;]+", screen))
    assert {"icanon", "echo"} <= words and not {"-icanon", "-echo"} & words, screen
    assert tmux.run("display-message", "-p", "-t", tmux.session, "#{alternate_on}").strip() == "0"
    tmux.send("echo typed-$((2 + 3))", "Enter")
    tmux.wait_for(lambda s: "typed-5" in s, "typed text echoed by the shell")


# (id, environment) of the real app at 80×24; `color` says what its escapes may use.
TERMINALS = [
    ("term-dumb", {"TERM": "dumb"}, None),
    ("term-linux", {"TERM": "linux"}, "16"),
    ("term-screen", {"TERM": "screen"}, "16"),
    ("16-colour", {"TERM": "xterm"}, "16"),
    ("256-colour", {"TERM": "xterm-256color"}, "256"),
    ("lang-c", {"TERM": "xterm-256color", "LANG": "C", "LC_ALL": "C"}, "256"),
    ("no-color", {"TERM": "xterm-256color", "NO_COLOR": "1"}, None),
]


@pytest.mark.parametrize(
    ("env", "color"), [t[1:] for t in TERMINALS], ids=[t[0] for t in TERMINALS]
)
def test_every_terminal_shows_facts_diff_and_histogram(
    tmp_path: Path, env: dict[str, str], color: str | None
) -> None:
    store = demo_store(tmp_path)
    tmux = Tmux()
    try:
        tmux.start(80, 24)
        tmux.wait_for(lambda s: last_line(s) == PROMPT, "the shell prompt")
        tmux.send(app_command(store, env), "Enter")
        screen = tmux.wait_for(
            lambda s: "Disk alerts fire at 90% usage" in s and "? Help" in s, "the fact rows"
        )
        assert "pin       weight age ↑ uses  text" in screen
        tmux.wait_until_still()
        if color == "16":
            escapes = tmux.capture(escapes=True)
            assert "38;5;" not in escapes and "38;2;" not in escapes
            assert re.search(r"\x1b\[[0-9;]*(3[0-7]|9[0-7])m", escapes)
        elif color == "256":
            escapes = tmux.capture(escapes=True)
            assert "38;5;" in escapes and "38;2;" not in escapes

        tmux.send("3")
        tmux.wait_for(lambda s: "No cycle yet." in s, "the Consolidate tab")
        for stage in ("✓Decay", "✓Select", "✓Propose", "✓Review"):
            tmux.send("n")
            tmux.wait_for(lambda s, stage=stage: stage in s, stage)  # type: ignore[misc]
        screen = tmux.wait_for(
            lambda s: "+ The staging database listens on port 5432. Use the VPN" in s,
            "the proposal's summary line",
        )
        assert "− The staging database listens on port 5432." in screen

        tmux.send("5")
        tmux.wait_for(lambda s: "300 live" in s, "the Status tab")
        tmux.send("End")
        screen = tmux.wait_for(lambda s: "0.9–1.0" in s, "the weight histogram")
        assert "Weights of ops-agent's live facts" in screen
        assert "Traceback" not in screen

        tmux.send("q")
        assert exit_status(tmux) == 0
        assert_terminal_restored(tmux)
    finally:
        tmux.kill()


def test_a_crash_restores_the_terminal_and_exits_1(tmp_path: Path) -> None:
    """An unhandled error inside the running app must not end in exit status 0. Textual's
    own screenshot setting pointed at a missing directory raises inside the app."""
    store = demo_store(tmp_path)
    missing = tmp_path / "no" / "such" / "dir"
    tmux = Tmux()
    try:
        tmux.start(80, 24)
        tmux.wait_for(lambda s: last_line(s) == PROMPT, "the shell prompt")
        env = {"TEXTUAL_SCREENSHOT": "1", "TEXTUAL_SCREENSHOT_LOCATION": str(missing)}
        tmux.send(app_command(store, env), "Enter")
        screen = tmux.wait_for(lambda s: "FileNotFoundError" in s, "the traceback")
        assert "no/such/dir" in screen.replace("\n", "")
        assert exit_status(tmux) == 1
        assert_terminal_restored(tmux)
    finally:
        tmux.kill()


@pytest.mark.parametrize("answer", ["q", "r", "c"])
def test_a_mistyped_dir_is_asked_about_before_anything_is_created(
    tmp_path: Path, answer: str
) -> None:
    """`graymatter-tui --dir PATH` where PATH holds no store: the real command asks, and
    only "create" (c) leaves a store there; quit (q) and read-only (r) leave nothing."""
    missing = tmp_path / "stores" / "mistyped"
    tmux = Tmux()
    try:
        tmux.start(80, 24)
        tmux.wait_for(lambda s: last_line(s) == PROMPT, "the shell prompt")
        env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
        tmux.send(app_command(missing, env), "Enter")
        # The dialog paints over more than one frame: wait for its buttons, not its first line.
        screen = tmux.wait_for(
            lambda s: "There is no store at" in s and "Create it (c)" in s and "Quit (q)" in s,
            "the question and its answers",
        )
        assert "Read-only" in screen or "(r)" in screen
        assert not (tmp_path / "stores").exists()
        tmux.send(answer)
        if answer != "q":
            said = "Created a new store" if answer == "c" else "nothing was created"
            tmux.wait_for(lambda s: said in s, "the answer taken")
            tmux.send("q")
        assert exit_status(tmux) == 0
    finally:
        tmux.kill()
    assert (missing / "data.mdb").exists() is (answer == "c")
    if answer != "c":
        assert not (tmp_path / "stores").exists() and not (tmp_path / "xdg").exists()
