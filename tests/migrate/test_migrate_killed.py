"""A migration killed with SIGKILL leaves the target empty (killed while copying, inside
the one transaction) or complete (killed while verifying, after the commit), and the
same command run again finishes the job. The real CLI runs with its stderr on a
pseudo-terminal, so its progress bar says which phase it is in when it is killed."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.opening import open_location
from graymatter_tui.core.store_url import parse_store_url
from graymatter_tui.storage import NewFact
from tests.conftest import FIXED_NOW, clean_env

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

Run = Callable[..., CompletedProcess[str]]
# Five of migrate_ops' chunks, so a kill at the first "copying" report lands
# with most of the facts still to insert.
N_FACTS = 12_000


@pytest.fixture
def source(cli_dir: Path) -> Path:
    with LmdbStore.open(cli_dir) as store:
        store.put_many(
            NewFact(f"agent-{i % 3}", f"fact {i} about topic {i % 97}") for i in range(N_FACTS)
        )
        store.add_probe("agent-0", "topic")
    return cli_dir


def _kill_at(phase: bytes, source: Path, target: str) -> bytes:
    """Run migrate with stderr on a pty; SIGKILL it when its bar first shows `phase`.
    Returns what the bar had drawn."""
    master, slave = pty.openpty()
    env = clean_env({"GRAYMATTER_NOW": FIXED_NOW, "GRAYMATTER_PROGRESS_DELAY": "0"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "migrate", "--from", str(source), "--to", target],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while phase not in seen:
            assert time.monotonic() < deadline, f"never saw {phase!r}: {seen[-300:]!r}"
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:  # the child is gone: its pty closed
                    break
            assert proc.poll() is None or phase in seen, f"it finished first: {seen[-300:]!r}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        os.close(master)
    assert proc.returncode == -signal.SIGKILL
    return seen


def _facts_in(target: str) -> int:
    with open_location(parse_store_url(target), read_only=True) as store:
        return len(store.snapshot().facts)


def _export(run_cli: Run, *location: str) -> str:
    done = run_cli("export", "--format", "jsonl", "--out", "-", *location)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(params=["lmdb", "postgres"])
def new_target(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes an empty target of the test's backend each time it is called."""
    made: list[str] = []

    def make() -> str:
        made.append(str(tmp_path / f"target-{len(made)}"))
        if request.param == "postgres":
            cluster = request.getfixturevalue("pg_cluster")
            name = cluster.new_database()
            request.addfinalizer(lambda: cluster.drop_database(name))
            made[-1] = str(cluster.url(name))
        return made[-1]

    return make


@pytest.fixture
def target(new_target: Callable[[], str]) -> str:
    return new_target()


# A quiet machine can insert every chunk before this process reads the first report;
# such a kill lands after the commit, which is the next test's case, not this one's. Each
# try after that copies a source five times larger, so the chunks take five times longer.
ATTEMPTS = 3


def _grow(source: Path, facts: int) -> int:
    """Add 4 × `facts` facts to the source; its new size."""
    with LmdbStore.open(source) as store:
        store.put_many(
            NewFact(f"agent-{i % 3}", f"more {i} about topic {i % 89}") for i in range(4 * facts)
        )
    return 5 * facts


def test_killed_while_copying_leaves_the_target_empty(
    run_cli: Run, source: Path, new_target: Callable[[], str]
) -> None:
    facts = N_FACTS
    for attempt in range(ATTEMPTS):
        if attempt:
            facts = _grow(source, facts)
        target = new_target()
        drawn = _kill_at(b"copying", source, target)
        # Killed with facts still to insert: inside the transaction, not after it.
        if f"{facts:,}/{facts:,}".encode() not in drawn.split(b"copying", 1)[1]:
            break
    else:
        pytest.fail(f"every one of {ATTEMPTS} kills landed after the last chunk")
    assert _facts_in(target) == 0
    again = run_cli("migrate", "--from", str(source), "--to", target)
    assert again.returncode == 0, again.stderr
    assert _export(run_cli, "--store", target) == _export(run_cli)


def test_killed_while_verifying_leaves_a_whole_copy_that_a_rerun_accepts(
    run_cli: Run, source: Path, target: str
) -> None:
    _kill_at(b"verifying", source, target)
    assert _facts_in(target) == N_FACTS
    again = run_cli("migrate", "--from", str(source), "--to", target)
    assert again.returncode == 0, again.stderr
    assert "already holds this copy" in again.stdout
    assert _export(run_cli, "--store", target) == _export(run_cli)
