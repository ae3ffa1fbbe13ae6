"""The fact rows keep a bounded number of facts in memory, however far a list scrolls."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from graymatter_tui.tui.widgets.fact_rows import CACHED_FACTS, FactRows, TombstoneRows


def test_scrolling_through_a_long_list_keeps_a_bounded_cache(empty_store: LmdbStore) -> None:
    empty_store.put_many(NewFact("agent", f"fact {i}") for i in range(CACHED_FACTS * 3))
    ids = empty_store.fact_ids("agent")
    rows = FactRows(ids, empty_store.find_many, empty_store.now())
    for index in range(len(ids)):
        fact = rows.fact(index)
        assert fact is not None and fact.id == ids[index]
    assert len(rows._cache) <= CACHED_FACTS
    assert rows.fact(0) is not None and rows.fact(0).id == ids[0]  # fetched again on demand


def test_tombstone_summaries_are_bounded_too(empty_store: LmdbStore) -> None:
    facts = empty_store.put_many(NewFact("agent", f"fact {i}") for i in range(CACHED_FACTS + 50))
    for fact in facts:
        empty_store.revise(fact.id, fact.text + " (revised)")
    ids = empty_store.fact_ids("agent", "tombstones")
    rows = TombstoneRows(ids, empty_store.find_many, empty_store.now(), 720.0)
    for index in range(len(ids)):
        tomb = rows.fact(index)
        assert tomb is not None
        summary = rows.summary_of(tomb)
        assert summary is not None and summary.text == tomb.text + " (revised)"
    assert len(rows._summaries) <= CACHED_FACTS
