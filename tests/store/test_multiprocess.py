"""Several processes on one store: concurrent writers, and a writer killed mid-transaction."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from graymatter_tui.store import Store

N_PER_WRITER = 150
BATCH = 500
KILLS = 10

# Waits for the go file, then remembers N distinct facts, one transaction each.
REMEMBER = textwrap.dedent(
    """
    import os, sys, time
    from graymatter_tui.store import Store
    path, agent, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = Store.open(path)
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

# Writes transactions of BATCH facts in a loop until killed.
BULK_WRITER = textwrap.dedent(
    f"""
    import sys
    from graymatter_tui.store import NewFact, Store
    store = Store.open(sys.argv[1])
    print("ready", flush=True)
    b = 0
    while True:
        store.put_many(
            [NewFact("writer", f"batch {{b}} fact {{j}} " + "z" * 100) for j in range({BATCH})]
        )
        b += 1
    """
)


def test_two_writers_at_once(tmp_path: Path) -> None:
    path = tmp_path / "store"
    go = tmp_path / "go"
    with Store.open(path) as created:
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

    with Store.open(path) as store:
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
    parent = Store.open(path)
    try:
        for kill in range(KILLS):
            proc = subprocess.Popen(
                [sys.executable, "-c", BULK_WRITER, str(path)],
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
                assert summary.live_facts == len(parent.fact_ids(agent))
                assert summary.tombstones == len(parent.fact_ids(agent, "tombstones"))
            writer_ids = parent.fact_ids("writer")
            assert len(writer_ids) % BATCH == 0
            if writer_ids:
                assert summaries["writer"].live_facts == len(writer_ids)
            # ... and the dead writer's lock is released: the parent can write at once.
            parent.put("parent", f"written after kill {kill}")
            assert len(parent.fact_ids("parent")) == kill + 1

            # A fresh process opens the store (clearing stale readers) and agrees.
            check = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; from graymatter_tui.store import Store; "
                    "s = Store.open(sys.argv[1]); "
                    "print(len(s.fact_ids('writer')), len(s.list_facts('writer')))",
                    str(path),
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert check.returncode == 0, check.stderr
            assert check.stdout.split() == [str(len(writer_ids))] * 2
    finally:
        parent.close()

    with Store.open(path) as reopened:
        total = len(reopened.fact_ids("writer"))
        assert total % BATCH == 0
        assert len(reopened.list_facts("writer")) == total
        assert len(reopened.fact_ids("parent")) == KILLS
