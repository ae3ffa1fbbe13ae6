"""Several processes on one store: concurrent writers, and a writer killed mid-transaction.

LMDB only: processes sharing one LMDB file (PostgreSQL's concurrent writers:
tests/pg/test_pg_concurrency.py).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import StoreError

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

N_PER_WRITER = 150
BATCH = 500
KILLS = 10

# Waits for the go file, then remembers N distinct facts, one transaction each.
REMEMBER = textwrap.dedent(
    """
    import os, sys, time
    from graymatter_tui.backends.lmdb import LmdbStore
    path, agent, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = LmdbStore.open(path)
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("never told to go")
        time.sleep(0.005)
    for i in range(n):
        store.put(agent, f"{agent} remembers fact number {i}")
    store.close()
    """
)

# Writes transactions of BATCH facts for agent argv[2] in a loop until killed.
BULK_WRITER = textwrap.dedent(
    f"""
    import sys
    from graymatter_tui.storage import NewFact
    from graymatter_tui.backends.lmdb import LmdbStore
    store = LmdbStore.open(sys.argv[1])
    agent = sys.argv[2]
    print("ready", flush=True)
    b = 0
    while True:
        store.put_many(
            [NewFact(agent, f"batch {{b}} fact {{j}} " + "z" * 100) for j in range({BATCH})]
        )
        b += 1
    """
)

# Opens the store in a fresh process and prints every agent's live count and id count.
COUNTS = textwrap.dedent(
    """
    import sys
    from graymatter_tui.backends.lmdb import LmdbStore
    store = LmdbStore.open(sys.argv[1])
    for a in store.agents():
        print(a.agent_id, a.live_facts, len(store.fact_ids(a.agent_id)))
    """
)


def test_two_writers_at_once(tmp_path: Path) -> None:
    path = tmp_path / "store"
    go = tmp_path / "go"
    with LmdbStore.open(path) as created:
        start_generation = created.generation()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", REMEMBER, str(path), agent, str(N_PER_WRITER), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for agent in ("writer-one", "writer-two")
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        go.touch()  # both start writing together
        for proc in procs:
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    with LmdbStore.open(path) as store:
        counts = {a.agent_id: (a.live_facts, a.tombstones, a.pinned) for a in store.agents()}
        assert counts == {
            "writer-one": (N_PER_WRITER, 0, 0),
            "writer-two": (N_PER_WRITER, 0, 0),
        }
        for agent in ("writer-one", "writer-two"):
            texts = {f.text for f in store.list_facts(agent)}
            assert texts == {f"{agent} remembers fact number {i}" for i in range(N_PER_WRITER)}
        all_ids = [f.id for f in store.list_facts(None, "all")]
        assert len(all_ids) == len(set(all_ids)) == 2 * N_PER_WRITER
        assert store.generation() >= start_generation + 2 * N_PER_WRITER


def test_writer_killed_mid_transaction(tmp_path: Path) -> None:
    path = tmp_path / "store"
    rng = random.Random(20261130)
    parent = LmdbStore.open(path)
    try:
        for kill in range(KILLS):
            writer = f"writer-{kill}"
            proc = subprocess.Popen(
                [sys.executable, "-c", BULK_WRITER, str(path), writer],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert proc.stdout is not None
                assert proc.stdout.readline().strip() == "ready"
                time.sleep(rng.uniform(0.05, 0.4))
                assert proc.poll() is None, proc.communicate()[1]  # still writing
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            assert proc.returncode == -signal.SIGKILL

            # The parent's long-open store sees only whole transactions ...
            summaries = {a.agent_id: a for a in parent.agents()}
            for agent, summary in summaries.items():
                assert summary.live_facts == len(parent.fact_ids(agent)), agent
                assert summary.tombstones == len(parent.fact_ids(agent, "tombstones")) == 0
            written = len(parent.fact_ids(writer))
            assert written % BATCH == 0
            assert summaries.get(writer) is None or summaries[writer].live_facts == written
            # ... and the dead writer's lock is released: the parent can write at once.
            parent.put("parent", f"written after kill {kill}")
            assert len(parent.fact_ids("parent")) == kill + 1

        # A fresh process opens the store (clearing stale readers) and agrees.
        check = subprocess.run(
            [sys.executable, "-c", COUNTS, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert check.returncode == 0, check.stderr
        counts = {a.agent_id: a.live_facts for a in parent.agents()}
    finally:
        parent.close()

    rows = [line.split() for line in check.stdout.splitlines()]
    assert {agent: int(live) for agent, live, _ in rows} == counts
    assert all(live == n for _, live, n in rows)
    assert counts["parent"] == KILLS
    assert sum(counts.values()) > KILLS  # some batches did commit before the kills
    assert all(n % BATCH == 0 for agent, n in counts.items() if agent != "parent")
    with LmdbStore.open(path) as reopened:
        for agent, n in counts.items():
            assert len(reopened.list_facts(agent)) == n


# ---- fork -------------------------------------------------------------------------------


def _in_forked_child(check: Callable[[], int]) -> int:
    """Run `check` in a forked child; return its exit code (anything raised is 99)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            code = check()
        except BaseException as exc:
            print(f"forked child failed: {exc!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_store_is_not_usable_after_fork(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "store") as parent:
        fact = parent.put("a", "x")

        def child() -> int:
            try:
                parent.require(fact.id)
            except StoreError as exc:
                return 0 if "fork" in str(exc) else 2
            return 1

        assert _in_forked_child(child) == 0
        assert parent.require(fact.id) == fact  # the parent's store is unaffected


def test_a_forked_child_gets_a_clear_error_opening_the_store(tmp_path: Path) -> None:
    """py-lmdb refuses a second Environment on the same files in a process that inherited
    one through fork(); the store says so clearly instead of leaking lmdb's message."""
    path = tmp_path / "store"
    with LmdbStore.open(path) as parent:
        fact = parent.put("a", "x")

        def child() -> int:
            try:
                LmdbStore.open(path)
            except StoreError as exc:
                return 0 if "spawn" in str(exc) and "fork" in str(exc) else 3
            return 1

        assert _in_forked_child(child) == 0
        assert parent.require(fact.id) == fact


# Waits for the go file, then opens (creating) the store and remembers one fact.
CREATE_AND_REMEMBER = textwrap.dedent(
    """
    import os, sys, time
    from graymatter_tui.backends.lmdb import LmdbStore
    path, agent, go = sys.argv[1], sys.argv[2], sys.argv[3]
    deadline = time.monotonic() + 60
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("never told to go")
        time.sleep(0.001)
    with LmdbStore.open(path) as store:
        store.put(agent, f"{agent} was here")
    """
)


@pytest.mark.parametrize("attempt", range(3))
def test_processes_creating_one_new_store_at_once(tmp_path: Path, attempt: int) -> None:
    """Six processes open a store that does not exist yet at the same moment: none is told
    the half-created file is empty or truncated, none re-initialises what another made."""
    path = tmp_path / "new-store"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CREATE_AND_REMEMBER, str(path), f"agent-{i}", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    time.sleep(0.5)  # let every interpreter start and wait on the go file
    go.touch()
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 6, [err for _out, err in results]
    with LmdbStore.open(path) as store:
        assert sorted(a.agent_id for a in store.agents()) == [f"agent-{i}" for i in range(6)]
        # Each put bumped the generation once after the single initialisation.
        assert store.info().generation == 1 + 6
