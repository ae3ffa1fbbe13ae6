"""The embedder's pass judges the pairs the model finds alike in a read snapshot and holds
them in a short write (`conflict_ops.judge_close`, then `raise_judged`; ADR 0070's
amendment): no writer waits on the judging, and a pair whose facts changed in between is
not raised on what they no longer say."""

from __future__ import annotations

from graymatter_tui.storage import NewFact, conflict_ops
from tests.support.backends import AnyStore

AGENT = "ops-agent"
OLD = "The kids' school starts at 8:00 a.m."
NEW = "School for the kids now begins at 8:20"
TOPICS = (
    "birds bees whales horses rivers mountains deserts oceans planets stars volcanoes "
    "castles trains ships bridges gardens forests insects dragons pirates robots knights "
    "weather music painting cooking football chess dinosaurs islands glaciers caves comets"
).split()


def _judged(store: AnyStore, new_id: str, old_id: str) -> list[conflict_ops.Judged]:
    close = [(new_id, {old_id: 0.86})]
    return store._read(lambda tx: conflict_ops.judge_close(tx, AGENT, close))


def test_a_pair_judged_is_held_in_the_write_after(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, OLD)
    new = any_store.put(AGENT, NEW)
    judged = _judged(any_store, new.id, old.id)
    assert [(kind, n.id, h.id) for kind, _, n, h in judged] == [("possible_update", new.id, old.id)]
    assert any_store.pending_count() == 0  # judging wrote nothing
    raised = any_store._write(lambda tx: conflict_ops.raise_judged(tx, AGENT, judged))
    assert [(p.action, p.fact_id, p.held_id) for p in raised] == [
        ("possible_update", new.id, old.id)
    ]
    # asked once: the same judgement held again raises nothing
    assert any_store._write(lambda tx: conflict_ops.raise_judged(tx, AGENT, judged)) == []


def test_a_fact_changed_between_the_judging_and_the_write_is_not_asked_about(
    any_store: AnyStore,
) -> None:
    old = any_store.put(AGENT, OLD)
    new = any_store.put(AGENT, NEW)
    judged = _judged(any_store, new.id, old.id)
    assert judged
    any_store.retire(old.id)
    assert any_store._write(lambda tx: conflict_ops.raise_judged(tx, AGENT, judged)) == []
    assert any_store.pending_count() == 0


def test_a_dense_cluster_is_judged_against_the_closest_only(any_store: AnyStore) -> None:
    """Each new fact is judged against its `CLOSEST_PER_FACT` closest alike facts only:
    here they all say something compatible, and the one fact it would update is 33rd."""
    count = conflict_ops.CLOSEST_PER_FACT
    related = any_store.put_many(
        NewFact(AGENT, f"The kids' school library lends books about {topic}")
        for topic in TOPICS[:count]
    )
    # written without the write path's own check, which would ask about this pair first
    updated, new = any_store.put_many(
        [NewFact(AGENT, OLD), NewFact(AGENT, "The kids' school starts at 8:20 a.m.")]
    )
    near = {f.id: 0.95 - n * 0.001 for n, f in enumerate(related)} | {updated.id: 0.65}
    judged = any_store._read(lambda tx: conflict_ops.judge_close(tx, AGENT, [(new.id, near)]))
    assert judged == []
    del near[related[-1].id]  # now it is among the closest
    judged = any_store._read(lambda tx: conflict_ops.judge_close(tx, AGENT, [(new.id, near)]))
    assert [(kind, h.id) for kind, _, _, h in judged] == [("possible_update", updated.id)]
