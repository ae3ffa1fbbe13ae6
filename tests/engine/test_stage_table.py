"""`Cycle.advance` runs stages from one table: every stage but `propose` is in it, so a new
stage cannot be added to STAGES and forgotten by the stepper."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import STAGES, Cycle


def test_every_stage_but_propose_is_in_the_table(store: LmdbStore) -> None:
    cycle = Cycle(store, "agent", None)
    assert set(cycle._store_stages()) == set(STAGES) - {"propose"}


def test_advance_runs_the_stages_in_order_without_a_summariser(store: LmdbStore) -> None:
    store.put("agent", "a fact")
    cycle = Cycle(store, "agent", None)
    ran = []
    while not cycle.done:
        ran.append(cycle.next_stage)
        if cycle.next_stage == "propose":
            import asyncio

            asyncio.run(cycle.propose())
        else:
            cycle.advance()
    assert ran == list(STAGES)
    assert [s.stage for s in cycle.record.stages] == list(STAGES)
    assert cycle.record.outcome == "skipped"
