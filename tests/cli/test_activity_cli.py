"""`graymatter-tui activity`: the write feed through the real CLI in a subprocess.

The feed, its filters and --follow run on both backends (`any_cli`); an empty store and
bad input stay on LMDB (a read of an empty PostgreSQL database is refused, and bad input
is refused before any store is opened).
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import msgspec
import pytest

from graymatter_tui.core import provenance
from graymatter_tui.core.model import ActivityEntry
from tests.conftest import FIXED_NOW, clean_env
from tests.support.backends import CliStore

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]
ENTRY_KEYS = set(ActivityEntry.__struct_fields__)


def remember(run_cli: RunCli, agent: str, text: str) -> str:
    done = run_cli("remember", agent, text)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_empty_store_has_no_writes(run_cli: RunCli) -> None:
    done = run_cli("activity")
    assert done.returncode == 0
    assert done.stdout.strip() == "no writes yet"
    as_json = run_cli("activity", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


def test_writes_newest_first_with_the_model_fields(any_cli: RunCli) -> None:
    first = remember(any_cli, "ops", "The runbook is in the wiki.")
    second = remember(any_cli, "dev", "CI runs on every push.")
    assert any_cli("pin", first).returncode == 0
    done = any_cli("activity")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("2026-03-01 12:00:00 #3 cli ops pin  The runbook is in the wiki.")
    assert lines[1].startswith("2026-03-01 12:00:00 #2 cli dev add  CI runs on every push.")
    assert lines[1].endswith(f"[{second}]")
    entries = json.loads(any_cli("activity", "--json").stdout)
    assert [e["seq"] for e in entries] == [3, 2, 1]
    assert all(set(e) == ENTRY_KEYS for e in entries)
    assert entries[2] == {
        "seq": 1,
        "at": "2026-03-01T12:00:00.000000Z",
        "source": "cli",
        "agent_id": "ops",
        "action": "add",
        "text": "The runbook is in the wiki.",
        "fact_id": first,
        "cycle_id": "",
        "count": 1,
    }
    limited = json.loads(any_cli("activity", "--limit", "1", "--json").stdout)
    assert [e["seq"] for e in limited] == [3]


def test_filters_by_agent_and_by_source(any_cli: RunCli, cli_store: CliStore) -> None:
    with cli_store.open() as store:
        with provenance.writing_as("mcp:claude"):
            store.put("ops", "claude for ops")
        with provenance.writing_as("mcp:cursor"):
            store.put("dev", "cursor for dev")
    remember(any_cli, "ops", "shell for ops")

    def texts(*args: str) -> list[str]:
        done = any_cli("activity", *args, "--json")
        assert done.returncode == 0, done.stderr
        return [e["text"] for e in json.loads(done.stdout)]

    assert texts("ops") == ["shell for ops", "claude for ops"]
    assert texts("--source", "mcp") == ["cursor for dev", "claude for ops"]
    assert texts("--source", "mcp:cursor") == ["cursor for dev"]
    assert texts("ops", "--source", "cli") == ["shell for ops"]
    nothing = any_cli("activity", "dev", "--source", "cli")
    assert nothing.returncode == 0
    assert nothing.stdout.strip() == "no writes match source cli · agent dev"


def test_stored_text_is_neutralised_and_json_stays_safe(any_cli: RunCli) -> None:
    remember(any_cli, "ops", "[bold]x[/] \x1b[2J clear \u202e rtl\nnext line")
    done = any_cli("activity")
    assert done.returncode == 0
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    assert "[bold]x[/] ␛[2J clear <U+202E> rtl⏎next line" in done.stdout
    raw = any_cli("activity", "--json").stdout
    assert "\x1b" not in raw and "\u202e" not in raw
    assert json.loads(raw)[0]["text"] == "[bold]x[/] \x1b[2J clear \u202e rtl\nnext line"


def test_bad_input_is_one_line_and_reads_nothing(run_cli: RunCli, cli_dir: Path) -> None:
    bad_agent = run_cli("activity", "a\x01b")
    assert bad_agent.returncode == 1
    assert bad_agent.stderr.count("\n") == 1 and "Traceback" not in bad_agent.stderr
    assert "control character" in bad_agent.stderr
    assert run_cli("activity", "--limit", "0").returncode == 2
    assert not cli_dir.exists()  # a read never creates a store


class Lines:
    """The lines a process prints, read by a thread (a pipe's buffered reader can hold
    lines that a select on its descriptor no longer reports)."""

    def __init__(self, process: subprocess.Popen[str], stream: str = "stdout") -> None:
        pipe = process.stdout if stream == "stdout" else process.stderr
        assert pipe is not None
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(pipe,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)

    def next(self, timeout: float = 60.0) -> str:
        """The next line (fails after `timeout` seconds without one)."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line within the timeout") from None


def test_follow_prints_new_writes_until_interrupted(any_cli: RunCli, cli_store: CliStore) -> None:
    remember(any_cli, "ops", "before following 1")
    remember(any_cli, "ops", "before following 2")
    follower = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "activity", "--follow", "--limit", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        env=clean_env({**cli_store.env, "GRAYMATTER_NOW": FIXED_NOW}),
    )
    lines = Lines(follower)
    try:
        assert "before following 2" in lines.next()
        remember(any_cli, "ops", "while following")
        remember(any_cli, "dev", "and another")
        assert "while following" in lines.next()
        assert "and another" in lines.next()
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=60)
        assert follower.stderr is not None
        err = follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    assert "Traceback" not in err


def _follow(cli_dir: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "activity", "--follow", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        env=clean_env({"GRAYMATTER_DIR": str(cli_dir), "GRAYMATTER_NOW": FIXED_NOW}),
    )


def test_follow_sees_a_store_created_after_it_started(run_cli: RunCli, cli_dir: Path) -> None:
    assert not cli_dir.exists()
    follower = _follow(cli_dir)
    lines = Lines(follower)
    waiting = Lines(follower, stream="stderr")
    try:
        # Written only once the follower says it waits: the store is created after it.
        said = [waiting.next(), waiting.next()]  # "no store at …", then the waiting note
        assert "no store there yet; waiting for one" in said[1], said
        assert not cli_dir.exists()
        remember(run_cli, "ops", "the store's first write")
        assert "the store's first write" in lines.next()
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0


def test_follow_with_json_prints_one_entry_a_line(run_cli: RunCli, cli_dir: Path) -> None:
    remember(run_cli, "ops", "first")
    follower = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "activity", "--follow", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        env=clean_env({"GRAYMATTER_DIR": str(cli_dir), "GRAYMATTER_NOW": FIXED_NOW}),
    )
    lines = Lines(follower)
    try:
        line = lines.next()
        remember(run_cli, "ops", "second")
        second = lines.next()
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert msgspec.json.decode(line, type=ActivityEntry).text == "first"
    assert msgspec.json.decode(second, type=ActivityEntry).text == "second"
    assert follower.returncode == 0
