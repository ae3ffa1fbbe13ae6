"""Staleness: a proposal computed outside any transaction must not overwrite a change
another process made before apply. The cycle is stepped by hand; the change is made by
the real CLI in a subprocess between review and apply."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.store import Store
from tests.conftest import clean_env
from tests.engine.helpers import AGENT, MODEL, NOW_TEXT, seed_weighted, snapshot
from tests.support.ollama_server import Reply, ScriptedOllama


def other_process(store_dir: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args, "--dir", str(store_dir), "--json"],
        capture_output=True,
        text=True,
        env=clean_env({"GRAYMATTER_NOW": NOW_TEXT}),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def cycle_at_review(store: Store, server: ScriptedOllama, consume: list[str]) -> Cycle:
    server.script(Reply.proposal("merged garden notes", consume))
    cycle = Cycle(store, AGENT, OllamaSummariser(server.url, MODEL, 2.0), CycleOptions(guard="off"))
    assert cycle.advance().stage == "decay"
    assert cycle.advance().stage == "select"
    assert (await cycle.propose()).stage == "propose"
    review = cycle.advance()
    assert review.stage == "review"
    assert cycle.at_review
    assert cycle.review is not None and cycle.review.plan.consume == consume
    return cycle


def finish(cycle: Cycle) -> None:
    while not cycle.done:
        cycle.advance()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("revise", "{id}", "the garden needs water twice a day"), "superseded meanwhile"),
        (("pin", "{id}"), "pinned meanwhile"),
        (("retire", "{id}"), "superseded meanwhile"),
    ],
    ids=["revise", "pin", "retire"],
)
async def test_change_from_another_process_makes_the_proposal_stale(
    gm: Store, ollama: ScriptedOllama, change: tuple[str, ...], why: str
) -> None:
    batch = [f.id for f in seed_weighted(gm)[:15]]
    consume = batch[:5]
    cycle = await cycle_at_review(gm, ollama, consume)
    target = consume[2]
    other_process(gm.path, *(part.format(id=target) for part in change))
    changed = gm.get(target)
    assert changed.is_tombstone or changed.pinned  # the other process's write is visible
    before = snapshot(gm)

    result = cycle.advance()
    assert result.stage == "apply"
    assert cycle.record.outcome == "discarded"
    assert cycle.record.reason.startswith("stale")
    assert target in cycle.record.reason
    assert why in cycle.record.reason
    assert result.summary.startswith("discarded: stale")
    after = snapshot(gm)
    assert after["facts"] == before["facts"]
    assert after["counters"] == before["counters"]
    assert cycle.record.summary_id == ""
    assert all(f.text != "merged garden notes" for f in gm.all_facts())
    for fact_id in consume:
        if fact_id != target:
            assert gm.get(fact_id).is_live

    finish(cycle)
    journal = gm.record(cycle.record.cycle_id)
    assert journal.outcome == "discarded"
    assert journal.reason.startswith("stale")
    counters = gm.counters()
    assert (counters.consolidations, counters.facts_consolidated) == (0, 0)


async def test_fact_deleted_meanwhile_is_stale(gm: Store, ollama: ScriptedOllama) -> None:
    """A batch fact pruned (deleted) between review and apply."""
    batch = [f.id for f in seed_weighted(gm)[:15]]
    cycle = await cycle_at_review(gm, ollama, batch[:3])
    gm.delete([batch[1]])
    before = snapshot(gm)
    cycle.advance()
    assert cycle.record.outcome == "discarded"
    assert cycle.record.reason == f"stale: fact {batch[1]} no longer exists"
    assert snapshot(gm)["facts"] == before["facts"]


async def test_change_to_a_batch_fact_not_consumed_does_not_block(
    gm: Store, ollama: ScriptedOllama
) -> None:
    batch = [f.id for f in seed_weighted(gm)[:15]]
    cycle = await cycle_at_review(gm, ollama, batch[:3])
    other_process(gm.path, "revise", batch[10], "an unrelated revision")
    cycle.advance()
    assert cycle.record.outcome == "applied", cycle.record.reason
    assert cycle.record.consumed == batch[:3]
    finish(cycle)
    assert gm.counters().facts_consolidated == 3


async def test_consumption_by_a_concurrent_cycle_is_stale(
    gm: Store, ollama: ScriptedOllama
) -> None:
    """Two cycles over one batch: the second to apply finds the facts already consumed."""
    batch = [f.id for f in seed_weighted(gm)[:15]]
    first = await cycle_at_review(gm, ollama, batch[:4])
    second = await cycle_at_review(gm, ollama, batch[2:6])
    first.advance()
    assert first.record.outcome == "applied"
    before = snapshot(gm)
    second.advance()
    assert second.record.outcome == "discarded"
    assert second.record.reason == f"stale: fact {batch[2]} was superseded meanwhile"
    assert snapshot(gm)["facts"] == before["facts"]
    finish(first)
    finish(second)
    counters = gm.counters()
    assert (counters.consolidations, counters.facts_consolidated) == (1, 4)
