"""A short run of the several-hosts soak (benchmarks/pg_soak.py): 4 writer processes with
their own pools, a cycler and a checking reader on one store. Correctness only (zero lost
writes, zero half-applied cycles, no StoreError); the 60 s figures are in
benchmarks/README.md."""

from __future__ import annotations

from pathlib import Path

import psycopg

from benchmarks.pg_soak import report, run
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from tests.support.pg_worker import OPTIONS, TEXTS, lost_writes, violations_now

SECONDS = 10.0


def test_several_hosts_lose_no_write_and_never_show_half_a_cycle(
    pg_url: str, tmp_path: Path
) -> None:
    soak = run(pg_url, SECONDS, tmp_path)
    print("\n" + report(soak))
    assert soak.crashed == []
    assert soak.lost == []
    assert soak.half_applied == []
    assert soak.final_violations == []
    assert soak.store_errors == 0, soak.refusals
    assert soak.deadlocks == 0  # one lock, always taken first (ADR 0041)
    assert soak.writes > 0 and soak.checks > 0
    assert soak.cycles["applied"] > 0  # the reader checked while cycles really applied


def test_the_checks_see_a_lost_write_and_a_half_applied_cycle(pg_url: str) -> None:
    """The soak's two checks can fail: a write that vanished and a cycle whose consumed
    fact was put back live behind the store's back are both reported."""
    with PgStore.open(pg_url) as store:
        facts = [store.put("ann", TEXTS[2]) for _ in range(8)]
        record = Cycle(store, "ann", LocalSummariser(), OPTIONS).run_sync()
        assert record.outcome == "applied"
        acked = [{"op": "remember", "id": f.id, "ms": 1.0} for f in facts]
        assert lost_writes(store, acked) == [] and violations_now(store) == []
        with psycopg.connect(pg_url, autocommit=True) as raw:
            raw.execute("UPDATE facts SET superseded_by = '' WHERE id = %s", (record.consumed[0],))
            untouched = next(f.id for f in facts if f.id not in record.consumed)
            raw.execute("DELETE FROM weights WHERE fact_id = %s", (untouched,))
            raw.execute("DELETE FROM facts WHERE id = %s", (untouched,))
        assert any(f"cycle {record.cycle_id}" in v for v in violations_now(store))
        lost = f"remember {untouched}: acknowledged but not in the store"
        assert lost_writes(store, acked) == [lost]
