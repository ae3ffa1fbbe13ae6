"""The journal's operations on both backends, from one script with the same clock and
seeded ids: decay, selection, apply (and its staleness refusal), prune, revert, the
review queue, checkpoints, aliases, the knowledge graph and import. Every read must come
out identical, and invariants I-1…I-6 must hold on both after each step."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import msgspec
import pytest

from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core.entities import extract_entities
from graymatter_tui.core.errors import Conflict
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage import ApplyRequest, NewFact
from graymatter_tui.storage.ids import seed_ids
from tests.conformance.conftest import START, AnyStore
from tests.support.clock import ManualClock

AGENT = "ops"


@pytest.fixture(autouse=True)
def unseeded_afterwards() -> Iterator[None]:
    yield
    seed_ids(None)


def _violations(store: AnyStore) -> list[tuple[str, list[str]]]:
    return [(c.name, c.violations) for c in check_invariants(store) if c.violations]


def _cycle(store: AnyStore, clk: ManualClock, consume: list[str], summary: str) -> Any:
    cycle_id = store.unused_id(clk.now)
    facts = [store.require(i) for i in consume]
    record = CycleRecord(cycle_id=cycle_id, agent_id=AGENT, summariser="scripted", batch=consume)
    request = ApplyRequest(
        cycle_id=cycle_id,
        agent_id=AGENT,
        summary=summary,
        consume=consume,
        snapshot={f.id: f.text for f in facts},
    )
    return store.apply_consolidation(request, record)


def _script(store: AnyStore, clk: ManualClock) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    clk.now = START
    seed_ids(4321)
    old = START - timedelta(days=40)
    facts = store.put_many(
        [
            NewFact(AGENT, f"Berlin office note {i}: the Alpha service uses port 80{i:02d}",
                    created_at=old, accessed_at=old, weight=0.9 - i * 0.05)
            for i in range(12)
        ]
    )  # fmt: skip
    store.pin(facts[11].id)
    seen["decay dry run"] = store.decay(AGENT, 24.0 * 30, dry_run=True)
    seen["decay"] = store.decay(AGENT, 24.0 * 30)
    seen["weights"] = store.weights(AGENT, "all")
    seen["selection"] = store.selection(AGENT, 24.0 * 30, max_batch=4)
    seen["checks 1"] = _violations(store)

    clk.advance(minutes=5)
    applied = _cycle(store, clk, [facts[0].id, facts[1].id], "Alpha uses ports 8000 and 8001.")
    seen["apply"] = applied
    store.revise(facts[2].id, "Berlin office note 2: Alpha moved to port 9002")
    seen["stale apply"] = _cycle(store, clk, [facts[3].id], "only three")
    stale = ApplyRequest(
        cycle_id=store.unused_id(clk.now),
        agent_id=AGENT,
        summary="never written",
        consume=[facts[2].id],
        snapshot={facts[2].id: facts[2].text},
    )
    generation = store.generation()
    seen["refused"] = store.apply_consolidation(
        stale, CycleRecord(cycle_id=stale.cycle_id, agent_id=AGENT)
    )
    seen["refusal wrote nothing"] = store.generation() == generation
    seen["checks 2"] = _violations(store)

    clk.advance(days=400)
    store.decay(AGENT, 24.0)
    prune_record = CycleRecord(cycle_id=store.unused_id(clk.now), agent_id=AGENT)
    seen["prune"] = store.prune(AGENT, prune_record)
    seen["revert refusal"] = store.revert_refusal(applied.record.cycle_id)
    try:
        seen["revert"] = store.revert(applied.record.cycle_id)
    except Conflict as exc:
        seen["revert"] = str(exc)
    seen["checks 3"] = _violations(store)

    clk.advance(minutes=1)
    keep = store.put(AGENT, "The Alpha service owner is Dana in Berlin.")
    held = store.hold_change(AGENT, "update", keep.text, "The Alpha service owner is Lee.")
    also = store.hold_change(AGENT, "add", "", "Beta runs in Paris.")
    seen["pending"] = store.pending_count()
    seen["approve"] = store.approve_proposal(held.id)
    seen["reject"] = store.reject_proposal(also.id, "not now")
    seen["proposals"] = store.proposals()
    seen["find proposal"] = store.find_proposal(held.id)

    seen["checkpoint"] = store.save_checkpoint(AGENT, '{"step": 3}')
    seen["latest checkpoint"] = store.latest_checkpoint(AGENT)
    seen["alias"] = store.add_alias(AGENT, "alpha", ["service-a", "svc-a"])
    seen["aliases"] = store.aliases(AGENT)

    seen["extract"] = store.extract_graph(AGENT, extract_entities)
    seen["extract again"] = store.extract_graph(AGENT, extract_entities)
    seen["graph size"] = store.graph_size(AGENT)
    clk.advance(days=30)
    seen["graph decay"] = store.decay_graph(AGENT, 24.0 * 7)
    seen["graph size after"] = store.graph_size(AGENT)

    seen["facts"] = store.all_facts()
    seen["records"] = [msgspec.to_builtins(r) for r in store.records()]
    seen["counters"] = store.counters()
    seen["activity"] = store.activity()
    seen["receipts"] = {f.id: store.receipts(f.id) for f in seen["facts"]}
    seen["checks 4"] = _violations(store)
    return seen


def test_cycles_reviews_and_the_graph_read_the_same_on_both_backends(
    both_stores: tuple[AnyStore, AnyStore], clk: ManualClock
) -> None:
    lmdb_store, pg_store = both_stores
    on_lmdb = _script(lmdb_store, clk)
    on_pg = _script(pg_store, clk)
    for key in on_lmdb:
        assert on_pg[key] == on_lmdb[key], key
    assert on_pg["apply"].applied and not on_pg["refused"].applied
    assert on_pg["refusal wrote nothing"] is True
    assert on_pg["prune"].pruned, "the script must prune something to compare"
    assert all(not on_pg[f"checks {n}"] for n in range(1, 5))


def test_an_export_of_lmdb_imports_whole_into_postgres_and_again_is_skipped(
    both_stores: tuple[AnyStore, AnyStore], clk: ManualClock
) -> None:
    source, target = both_stores
    _script(source, clk)
    facts, records = source.all_facts(), source.records()
    result = target.import_all(facts, records)
    assert (result.facts_added, result.records_added) == (len(facts), len(records))
    assert target.all_facts() == facts
    assert [msgspec.to_builtins(r) for r in target.records()] == [
        msgspec.to_builtins(r) for r in records
    ]
    assert target.counters() == source.counters()
    assert {f.id: target.receipts(f.id) for f in facts} == {
        f.id: source.receipts(f.id) for f in facts
    }
    assert _violations(target) == []
    again = target.import_all(facts, records)
    assert (again.facts_added, again.facts_skipped) == (0, len(facts))
    assert target.all_facts() == facts
