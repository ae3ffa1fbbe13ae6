"""Staleness: a proposal computed outside any transaction must not overwrite a change
another process made before apply. The cycle is stepped by hand; the change is made by
the real CLI in a subprocess between review and apply. On both backends: the other
process reaches the store through `--store`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.model import CycleRecord, fact_to_dict
from graymatter_tui.storage import ApplyRequest
from tests.conftest import clean_env
from tests.engine.helpers import AGENT, MODEL, NOW_TEXT, seed_weighted, snapshot
from tests.support.backends import AnyStore, location_of
from tests.support.ollama_fake import FakeOllama, Reply

CYCLE_ID = "01KJMMA2G0CCCCCCCCCCCCCCCC"


def other_process(store: AnyStore, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args, "--store", location_of(store), "--json"],
        capture_output=True,
        text=True,
        env=clean_env({"GRAYMATTER_NOW": NOW_TEXT}),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def cycle_at_review(store: AnyStore, server: FakeOllama, consume: list[str]) -> Cycle:
    server.script(Reply.proposal("merged garden notes", consume))
    summariser = OllamaSummariser(server.url, MODEL, 2.0, transport=server.transport)
    cycle = Cycle(store, AGENT, summariser, CycleOptions(guard="off"))
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
    any_store: AnyStore, ollama: FakeOllama, change: tuple[str, ...], why: str
) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    consume = batch[:5]
    cycle = await cycle_at_review(any_store, ollama, consume)
    target = consume[2]
    other_process(any_store, *(part.format(id=target) for part in change))
    changed = any_store.require(target)
    assert changed.is_tombstone or changed.pinned  # the other process's write is visible
    before = snapshot(any_store)

    result = cycle.advance()
    assert result.stage == "apply"
    assert cycle.record.outcome == "discarded"
    assert cycle.record.reason.startswith("stale")
    assert target in cycle.record.reason
    assert why in cycle.record.reason
    assert result.summary.startswith("discarded: stale")
    after = snapshot(any_store)
    assert after["facts"] == before["facts"]
    assert after["counters"] == before["counters"]
    assert cycle.record.summary_id == ""
    assert all(f.text != "merged garden notes" for f in any_store.all_facts())
    for fact_id in consume:
        if fact_id != target:
            assert any_store.require(fact_id).is_live

    finish(cycle)
    journal = any_store.require_record(cycle.record.cycle_id)
    assert journal.outcome == "discarded"
    assert journal.reason.startswith("stale")
    counters = any_store.counters()
    assert (counters.consolidations, counters.facts_consolidated) == (0, 0)


async def test_fact_deleted_meanwhile_is_stale(any_store: AnyStore, ollama: FakeOllama) -> None:
    """A batch fact pruned (deleted) between review and apply."""
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    cycle = await cycle_at_review(any_store, ollama, batch[:3])
    any_store.delete([batch[1]])
    before = snapshot(any_store)
    cycle.advance()
    assert cycle.record.outcome == "discarded"
    assert cycle.record.reason == f"stale: fact {batch[1]} no longer exists"
    assert snapshot(any_store)["facts"] == before["facts"]


async def test_change_to_a_batch_fact_not_consumed_does_not_block(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    cycle = await cycle_at_review(any_store, ollama, batch[:3])
    other_process(any_store, "revise", batch[10], "an unrelated revision")
    cycle.advance()
    assert cycle.record.outcome == "applied", cycle.record.reason
    assert cycle.record.consumed == batch[:3]
    finish(cycle)
    assert any_store.counters().facts_consolidated == 3


async def test_consumption_by_a_concurrent_cycle_is_stale(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    """Two cycles over one batch: the second to apply finds the facts already consumed."""
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    first = await cycle_at_review(any_store, ollama, batch[:4])
    second = await cycle_at_review(any_store, ollama, batch[2:6])
    first.advance()
    assert first.record.outcome == "applied"
    before = snapshot(any_store)
    second.advance()
    assert second.record.outcome == "discarded"
    assert second.record.reason == f"stale: fact {batch[2]} was superseded meanwhile"
    assert snapshot(any_store)["facts"] == before["facts"]
    finish(first)
    finish(second)
    counters = any_store.counters()
    assert (counters.consolidations, counters.facts_consolidated) == (1, 4)


async def test_fact_brought_back_under_its_id_with_another_text_is_stale(
    any_store: AnyStore, ollama: FakeOllama, tmp_path: Path
) -> None:
    """A fact's text is never rewritten in place, but its id can come back with another
    text: the fact is pruned, then an import (here by another process) carries the same id
    with a different text. The fact is then live, unpinned and of the same agent, so only
    the text check stands between apply and consuming a text the summariser never saw."""
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    consume = batch[:3]
    target = consume[1]
    cycle = await cycle_at_review(any_store, ollama, consume)
    header = {"type": "header", "format": "graymatter-tui", "version": 1}
    entry = {
        "type": "fact",
        "fact": {**fact_to_dict(any_store.require(target)), "text": "rewritten"},
    }
    backup = tmp_path / "edited.jsonl"
    backup.write_text(f"{json.dumps(header)}\n{json.dumps(entry)}\n", encoding="utf-8")
    any_store.delete([target])
    other_process(any_store, "import", str(backup))
    returned = any_store.require(target)
    assert returned.text == "rewritten" and returned.is_live and not returned.pinned
    before = snapshot(any_store)

    result = cycle.advance()
    assert result.stage == "apply"
    assert cycle.record.outcome == "discarded"
    assert cycle.record.reason == f"stale: fact {target} changed meanwhile"
    after = snapshot(any_store)
    assert after["facts"] == before["facts"]
    assert after["counters"] == before["counters"]
    assert after["receipts"] == before["receipts"]
    assert cycle.record.summary_id == ""
    assert all(f.text != "merged garden notes" for f in any_store.all_facts())
    finish(cycle)
    assert any_store.require_record(cycle.record.cycle_id).outcome == "discarded"
    counters = any_store.counters()
    assert (counters.consolidations, counters.facts_consolidated) == (0, 0)


def test_apply_refuses_a_snapshot_whose_text_differs_from_the_store(any_store: AnyStore) -> None:
    """A summariser shown a stale batch: the snapshot (what it was shown) holds a text the
    store no longer has. Apply refuses and writes nothing; the same request with the
    stored text applies, so the text alone decided."""
    facts = seed_weighted(any_store, n=6)
    consume = [f.id for f in facts[:3]]
    shown = {f.id: f.text for f in facts}
    shown[consume[2]] = "an older text of this fact"

    def request(snapshot_texts: dict[str, str]) -> ApplyRequest:
        return ApplyRequest(
            cycle_id=CYCLE_ID,
            agent_id=AGENT,
            summary="merged garden notes",
            consume=consume,
            snapshot=snapshot_texts,
        )

    before = snapshot(any_store)
    record = CycleRecord(cycle_id=CYCLE_ID, agent_id=AGENT)
    outcome = any_store.apply_consolidation(request(shown), record)
    assert not outcome.applied
    assert outcome.reason == f"stale: fact {consume[2]} changed meanwhile"
    assert (outcome.summary, outcome.consumed) == (None, [])
    assert snapshot(any_store) == before  # no summary, no tombstones, no receipts, no journal entry
    assert record.outcome == "" and record.summary_id == ""

    shown[consume[2]] = facts[2].text
    applied = any_store.apply_consolidation(request(shown), record)
    assert applied.applied and applied.consumed == consume
