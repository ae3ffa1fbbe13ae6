"""Revert: an applied cycle undone in one transaction, and every refusal leaving the store
exactly as it was (same facts, counters, receipts, journal and generation)."""

from __future__ import annotations

from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.errors import Conflict, NotFound
from graymatter_tui.core.model import RETIRED, CycleRecord
from graymatter_tui.storage import NewFact
from tests.engine.helpers import AGENT, MODEL, NOW, seed_weighted, snapshot, violations
from tests.support.backends import AnyStore
from tests.support.ollama_fake import FakeOllama, Reply


def cycle(store: LmdbStore, server: FakeOllama | None, **options: Any) -> CycleRecord:
    opts = {"guard": "off", **options}
    summariser = (
        OllamaSummariser(server.url, MODEL, 2.0, transport=server.transport) if server else None
    )
    return Cycle(store, AGENT, summariser, CycleOptions(**opts)).run_sync()


def applied(
    store: LmdbStore, server: FakeOllama, consume: list[str], **options: Any
) -> CycleRecord:
    server.script(Reply.proposal("merged garden notes", consume))
    record = cycle(store, server, **options)
    assert record.outcome == "applied", record.reason
    return record


def assert_refused(store: LmdbStore, cycle_id: str, error: type[Exception], words: str) -> None:
    before = snapshot(store)
    generation = store.generation()
    # Asked beforehand (as the TUI does before its confirmation), the store gives the
    # very reason the revert itself then refuses with, and writes nothing.
    refusal = store.revert_refusal(cycle_id)
    assert store.generation() == generation
    with pytest.raises(error) as caught:
        store.revert(cycle_id)
    assert words in str(caught.value)
    assert refusal == str(caught.value)
    assert snapshot(store) == before
    assert store.generation() == generation


def test_revert_round_trip(any_store: AnyStore, ollama: FakeOllama) -> None:
    facts = seed_weighted(any_store)
    batch = [f.id for f in facts[:15]]
    original = {f.id: f for f in facts}
    record = applied(any_store, ollama, batch[:6])
    summary_id = record.summary_id
    counters = any_store.counters()
    assert any_store.revert_refusal(record.cycle_id) is None

    revert = any_store.revert(record.cycle_id)

    assert revert.kind == "revert"
    assert revert.outcome == "applied"
    assert revert.reverted_cycle_id == record.cycle_id
    assert revert.restored == batch[:6]
    assert revert.retired_summary_id == summary_id
    assert revert.agent_id == AGENT
    assert any_store.require_record(revert.cycle_id) == revert
    for fact_id in batch[:6]:
        fact = any_store.require(fact_id)
        assert fact.is_live
        assert fact.superseded_by == ""
        assert fact.cycle_id == ""
        assert fact.text == original[fact_id].text
        assert fact.weight == original[fact_id].weight
    summary = any_store.require(summary_id)
    assert summary.superseded_by == RETIRED
    assert any_store.receipts(summary_id) == []
    assert any_store.require_record(record.cycle_id).reverted_by == revert.cycle_id
    after = any_store.counters()
    assert after.reverts == counters.reverts + 1
    assert (after.consolidations, after.facts_consolidated) == (
        counters.consolidations,
        counters.facts_consolidated,
    )
    assert any_store.records(AGENT)[0] == revert  # newest first
    assert violations(check_invariants(any_store)) == []
    live = {f.id for f in any_store.list_facts(AGENT, "live")}
    assert live == {f.id for f in facts}


def test_reverted_facts_can_be_consolidated_again(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    first = applied(any_store, ollama, batch[:3])
    any_store.revert(first.cycle_id)
    second = applied(any_store, ollama, batch[:3])
    assert second.consumed == batch[:3]
    assert violations(check_invariants(any_store)) == []


def test_unknown_cycle_is_not_found(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    applied(any_store, ollama, batch[:2])
    assert_refused(any_store, "01JZZZZZZZZZZZZZZZZZZZZZZZ", NotFound, "no cycle")


def test_skipped_cycle_is_refused(any_store: AnyStore) -> None:
    seed_weighted(any_store)
    record = cycle(any_store, None)
    assert record.outcome == "skipped"
    assert_refused(any_store, record.cycle_id, Conflict, "nothing was applied")


def test_discarded_cycle_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    seed_weighted(any_store)
    ollama.script(Reply.text("prose, not a proposal"))
    record = cycle(any_store, ollama)
    assert record.outcome == "discarded"
    assert_refused(any_store, record.cycle_id, Conflict, "nothing was applied")


def test_failed_cycle_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    seed_weighted(any_store)
    ollama.script(Reply.error(400, "bad"))
    record = cycle(any_store, ollama)
    assert record.outcome == "failed"
    assert_refused(any_store, record.cycle_id, Conflict, "nothing was applied")


def test_a_revert_record_is_not_revertible(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    revert = any_store.revert(applied(any_store, ollama, batch[:2]).cycle_id)
    assert_refused(any_store, revert.cycle_id, Conflict, "itself a revert")


def test_reverting_twice_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, batch[:4])
    revert = any_store.revert(record.cycle_id)
    assert_refused(any_store, record.cycle_id, Conflict, f"already reverted by {revert.cycle_id}")


def test_retired_summary_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, batch[:4])
    any_store.retire(record.summary_id)
    assert_refused(any_store, record.cycle_id, Conflict, "summary was retired")
    for fact_id in batch[:4]:
        assert any_store.require(fact_id).superseded_by == record.summary_id


def test_revised_summary_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, batch[:4])
    revision, _ = any_store.revise(record.summary_id, "a better summary")
    assert_refused(any_store, record.cycle_id, Conflict, f"consumed by {revision.id}")


def summary_of_summary(store: LmdbStore, server: FakeOllama) -> tuple[CycleRecord, CycleRecord]:
    """Two applied cycles, the second consuming the first one's summary.

    A(0.1) B(0.2) are the first batch; C and D are then pinned, so the second cycle's only
    unpinned live facts are the summary and two newer facts: its batch of one is the
    summary (weight 1.0, the oldest id)."""
    a, b, c, d = store.put_many(
        NewFact(agent_id=AGENT, text=text, weight=w, created_at=NOW, accessed_at=NOW)
        for text, w in (("fact a", 0.1), ("fact b", 0.2), ("fact c", 0.9), ("fact d", 0.95))
    )
    first = applied(store, server, [a.id, b.id], threshold=1)
    store.pin(c.id)
    store.pin(d.id)
    store.put(AGENT, "newer fact e")
    store.put(AGENT, "newer fact f")
    second = applied(store, server, [first.summary_id], threshold=1)
    assert second.batch == [first.summary_id]
    assert store.require(first.summary_id).superseded_by == second.summary_id
    return first, second


def test_summary_consumed_by_a_later_cycle_is_refused(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    first, second = summary_of_summary(any_store, ollama)
    assert_refused(any_store, first.cycle_id, Conflict, f"consumed by {second.summary_id}")
    # the later cycle can be reverted, and then the first one too
    any_store.revert(second.cycle_id)
    assert any_store.require(first.summary_id).is_live
    any_store.revert(first.cycle_id)
    live = {f.text for f in any_store.list_facts(AGENT, "live")}
    assert {"fact a", "fact b"} <= live
    assert "merged garden notes" not in live


def test_consuming_a_summary_keeps_the_invariants(any_store: AnyStore, ollama: FakeOllama) -> None:
    summary_of_summary(any_store, ollama)
    assert violations(check_invariants(any_store)) == []


def test_revert_restores_a_summary_with_its_own_cycle(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    first, second = summary_of_summary(any_store, ollama)
    any_store.revert(second.cycle_id)
    assert any_store.require(first.summary_id).cycle_id == first.cycle_id
    assert violations(check_invariants(any_store)) == []


def test_consumed_fact_pruned_by_the_cycle_itself_is_refused(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    facts = seed_weighted(any_store)
    [weak] = any_store.put_many([NewFact(agent_id=AGENT, text="nearly forgotten", weight=0.005)])
    batch = [weak.id, *(f.id for f in facts[:14])]
    record = applied(any_store, ollama, [weak.id, batch[1]])
    assert record.batch == batch
    assert any_store.find(weak.id) is None  # the tombstone kept 0.005 and this cycle pruned it
    assert [f.id for f in record.pruned] == [weak.id]
    assert record.pruned[0].superseded_by == record.summary_id
    assert violations(check_invariants(any_store)) == []
    assert_refused(any_store, record.cycle_id, Conflict, f"consumed fact {weak.id} is gone")


def test_consumed_fact_deleted_later_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, batch[:3])
    any_store.delete([batch[1]])
    assert_refused(any_store, record.cycle_id, Conflict, f"consumed fact {batch[1]} is gone")
    assert any_store.require(batch[0]).superseded_by == record.summary_id


def test_pruned_summary_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, batch[:3])
    any_store.delete([record.summary_id])
    assert_refused(any_store, record.cycle_id, Conflict, "has been pruned")


def test_revert_leaves_other_agents_alone(any_store: AnyStore, ollama: FakeOllama) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    other = seed_weighted(any_store, agent="agent-b")
    record = applied(any_store, ollama, batch[:3])
    before_other = {f.id: f for f in any_store.list_facts("agent-b", "all")}
    any_store.revert(record.cycle_id)
    assert {f.id: f for f in any_store.list_facts("agent-b", "all")} == before_other
    assert len(before_other) == len(other)


def test_pinning_a_restored_fact_keeps_the_invariants(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, batch[:2])
    any_store.revert(record.cycle_id)
    any_store.pin(batch[0])
    assert violations(check_invariants(any_store)) == []


def test_pinned_summary_is_refused(any_store: AnyStore, ollama: FakeOllama) -> None:
    """Retiring a pinned summary would leave a pinned tombstone (found by the crash soak)."""
    ids = [f.id for f in seed_weighted(any_store)[:15]]
    record = applied(any_store, ollama, ids[:3])
    any_store.pin(record.summary_id)
    before = snapshot(any_store)
    with pytest.raises(Conflict, match="pinned"):
        any_store.revert(record.cycle_id)
    assert snapshot(any_store) == before
    any_store.unpin(record.summary_id)
    revert = any_store.revert(record.cycle_id)
    assert sorted(revert.restored) == sorted(ids[:3])
    assert all(check.ok for check in check_invariants(any_store))
