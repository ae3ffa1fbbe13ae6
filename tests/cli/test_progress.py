"""Progress of long imports and exports: a bar on stderr only when stderr is a terminal
(a real pseudo-terminal here), never with --json, never on stdout; and the core helper's
rule that a job shorter than its delay shows nothing."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.progress import Progress
from graymatter_tui.storage import NewFact
from tests.conftest import FIXED_NOW, clean_env

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

N_FACTS = 5000


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_waits_for_its_delay_then_throttles() -> None:
    shown: list[tuple[str, int, int]] = []
    clock = Clock()
    progress = Progress(lambda *a: shown.append(a), delay=1.0, interval=0.1, clock=clock)
    progress("reading", 10, 100)
    clock.now += 0.5
    progress("reading", 20, 100)
    assert shown == [] and not progress.shown  # a quick job shows nothing
    clock.now += 0.6
    progress("reading", 30, 100)
    progress("reading", 40, 100)  # too soon after the last
    progress("reading", 100, 100)  # the end is always shown
    assert shown == [("reading", 30, 100), ("reading", 100, 100)] and progress.shown


@pytest.fixture
def export_file(tmp_path: Path) -> Path:
    with LmdbStore.open(tmp_path / "source") as store:
        store.put_many(NewFact("a", f"fact number {i}") for i in range(N_FACTS))
    out = tmp_path / "export.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", "export", "--out", str(out)],
        env=clean_env({"GRAYMATTER_DIR": str(tmp_path / "source")}),
        capture_output=True,
        check=True,
    )
    assert done.returncode == 0
    return out


def run_with_terminal_stderr(
    args: list[str], data_dir: Path, *, delay: str = "0", tty: bool = True
) -> tuple[int, bytes, bytes]:
    """Run the CLI with stderr on a pseudo-terminal (or a pipe); (code, stdout, stderr)."""
    env = clean_env(
        {
            "GRAYMATTER_DIR": str(data_dir),
            "GRAYMATTER_NOW": FIXED_NOW,
            "GRAYMATTER_PROGRESS_DELAY": delay,
        }
    )
    if not tty:
        done = subprocess.run(
            [sys.executable, "-m", "graymatter_tui", *args], env=env, capture_output=True
        )
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    collected: dict[int, bytes] = {}
    assert child.stdout is not None
    streams = {leader: bytearray(), child.stdout.fileno(): bytearray()}
    while streams:
        ready, _, _ = select.select(list(streams), [], [], 60)
        assert ready, "the command hung"
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closes with the child
                chunk = b""
            if chunk:
                streams[fd] += chunk
            else:
                collected[fd] = bytes(streams.pop(fd))
    child.wait(timeout=60)
    os.close(leader)
    return child.returncode, collected[child.stdout.fileno()], collected[leader]


def test_import_shows_a_bar_on_a_terminal_and_clears_it(export_file: Path, tmp_path: Path) -> None:
    code, out, err = run_with_terminal_stderr(["import", str(export_file)], tmp_path / "t")
    assert code == 0
    assert out.decode().startswith(f"imported {N_FACTS} facts")
    text = err.decode()
    assert "reading" in text and "writing" in text and "100%" in text
    assert f"{N_FACTS:,}/{N_FACTS:,}" in text
    assert text.endswith("\r\x1b[K")  # the bar's line is cleared at the end
    assert "█" not in out.decode()


def test_import_shows_nothing_with_json_or_without_a_terminal(
    export_file: Path, tmp_path: Path
) -> None:
    code, out, err = run_with_terminal_stderr(
        ["import", str(export_file), "--json"], tmp_path / "json"
    )
    assert code == 0 and err == b""
    assert json.loads(out)["facts_added"] == N_FACTS
    code, out, err = run_with_terminal_stderr(
        ["import", str(export_file)], tmp_path / "pipe", tty=False
    )
    assert code == 0 and err == b""


def test_a_quick_import_shows_nothing(export_file: Path, tmp_path: Path) -> None:
    code, _out, err = run_with_terminal_stderr(
        ["import", str(export_file)], tmp_path / "t", delay="600"
    )
    assert code == 0 and err == b""


@pytest.mark.parametrize("fmt", ["jsonl", "json", "markdown"])
def test_export_to_stdout_keeps_the_bar_on_stderr(
    export_file: Path, tmp_path: Path, fmt: str
) -> None:
    target = tmp_path / "t"
    assert run_with_terminal_stderr(["import", str(export_file)], target, tty=False)[0] == 0
    code, out, err = run_with_terminal_stderr(["export", "--format", fmt], target)
    assert code == 0
    assert "exporting" in err.decode() and "100%" in err.decode()
    if fmt == "jsonl":
        lines = [json.loads(line) for line in out.splitlines()]
        assert sum(1 for line in lines if line["type"] == "fact") == N_FACTS
    elif fmt == "json":
        assert len(json.loads(out)) == N_FACTS
    else:
        assert out.decode().count("### ") == N_FACTS
