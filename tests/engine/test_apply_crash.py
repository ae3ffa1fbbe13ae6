"""kill -9 in the middle of a cycle: apply is one transaction (I-4), so after any number of
SIGKILLs every applied cycle is whole (summary, tombstones, receipts, counters, record) and
nothing of an interrupted one is visible."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.storage import NewFact
from tests.conftest import clean_env
from tests.engine.helpers import NOW, NOW_TEXT, violations

AGENT = "crash-agent"
CLUSTERS = 500
KILLS = 15
SEED = 20260301

# Runs cycles with the offline summariser until killed. It creates no facts itself.
CYCLER = textwrap.dedent(
    """
    import sys
    from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
    from graymatter_tui.consolidation.summarisers import LocalSummariser
    from graymatter_tui.backends.lmdb import LmdbStore
    store = LmdbStore.open(sys.argv[1])
    print("ready", flush=True)
    while True:
        Cycle(store, sys.argv[2], LocalSummariser(), CycleOptions(threshold=5)).run_sync()
    """
)


def prepare(store: LmdbStore) -> int:
    """Clusters of near-duplicate facts: cluster j weighs 0.02 + j/10^4 (weakest first, no
    decay at the fixed clock, nothing prunable), so each cycle's batch holds a few whole
    clusters and the local summariser merges one of them."""
    facts = []
    for j in range(CLUSTERS):
        base = f"Customer number {j} asked about invoice INV-{j} in the billing portal"
        for suffix in ("", " again", " today", " again today", " this morning"):
            facts.append(
                NewFact(
                    agent_id=AGENT,
                    text=base + suffix + ".",
                    created_at=NOW,
                    accessed_at=NOW,
                    weight=0.02 + j / 10_000,
                )
            )
    store.put_many(facts)
    return len(facts)


def assert_whole(store: LmdbStore) -> int:
    """Every applied cycle landed whole; no summary or consumption tombstone without one."""
    assert violations(check_invariants(store)) == []
    facts = {f.id: f for f in store.all_facts()}
    records = {r.cycle_id: r for r in store.records(AGENT)}
    applied = [r for r in records.values() if r.outcome == "applied"]
    for record in applied:
        summary = facts[record.summary_id]
        assert summary.cycle_id == record.cycle_id
        assert summary.is_live
        assert store.receipts(summary.id) == record.consumed
        assert len(record.consumed) >= 2
        for fact_id in record.consumed:
            assert facts[fact_id].superseded_by == summary.id
            assert facts[fact_id].cycle_id == record.cycle_id
    summaries = {r.summary_id for r in applied}
    for fact in facts.values():
        if fact.cycle_id:  # written or consumed by a cycle: that cycle's record says so
            record = records.get(fact.cycle_id)
            assert record is not None, f"fact {fact.id} of an unrecorded cycle {fact.cycle_id}"
            assert record.outcome == "applied"
            assert fact.id == record.summary_id or fact.id in record.consumed
        if fact.is_tombstone:
            assert fact.superseded_by in summaries
    counters = store.counters()
    assert counters.consolidations == len(applied)
    assert counters.facts_consolidated == sum(len(r.consumed) for r in applied)
    return len(applied)


def test_sigkill_during_cycles_leaves_whole_cycles(tmp_path: Path) -> None:
    path = tmp_path / "store"
    rng = random.Random(SEED)
    with LmdbStore.open(path, clock_fn=lambda: NOW) as store:
        total = prepare(store)
        first = Cycle(store, AGENT, LocalSummariser(), CycleOptions(threshold=5)).run_sync()
        assert first.outcome == "applied", first.reason  # the setup gives apply work
        assert len(first.consumed) == 5

    env = clean_env({"GRAYMATTER_NOW": NOW_TEXT})
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    try:
        applied_counts = [assert_whole(store)]
        for _ in range(KILLS):
            child = subprocess.Popen(
                [sys.executable, "-c", CYCLER, str(path), AGENT],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                text=True,
            )
            try:
                assert child.stdout is not None
                assert child.stdout.readline().strip() == "ready"
                time.sleep(rng.uniform(0.05, 0.5))
                assert child.poll() is None, child.stderr.read() if child.stderr else ""
                os.kill(child.pid, signal.SIGKILL)
                assert child.wait(timeout=30) == -signal.SIGKILL
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
                if child.stdout:
                    child.stdout.close()
                if child.stderr:
                    child.stderr.close()
            applied_counts.append(assert_whole(store))

        assert applied_counts == sorted(applied_counts)  # nothing applied was lost
        assert applied_counts[-1] > applied_counts[0]  # the children did apply cycles
        live = len(store.list_facts(AGENT, "live"))
        tombstones = len(store.list_facts(AGENT, "tombstones"))
        assert live + tombstones == total + applied_counts[-1]  # one summary per cycle
    finally:
        store.close()

    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui.backends.lmdb.verify", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
