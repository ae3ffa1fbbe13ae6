"""Round trips of every store operation, on both backends (`any_store`: LMDB in a temporary
directory and PostgreSQL on a fresh database).

LMDB only, and why: reopening by path and one `Store` per path (LMDB's environment
registry), use after close, GRAYMATTER_NOW read by `Store.open`, and the raw scan of the
LMDB tables after a delete (the semantic half of that test runs on both)."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.core import clock
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound, StoreError
from graymatter_tui.core.model import RETIRED, Fact, FactState
from graymatter_tui.storage import NewFact
from tests.support.backends import AnyStore
from tests.support.clock import ManualClock

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

UNKNOWN_ID = "01JC0000000000000000000001"  # a well-formed ULID no test store holds
START = datetime(2026, 2, 1, 9, 0, 0, tzinfo=UTC)
STATES: tuple[FactState, ...] = ("live", "tombstones", "all")


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def store_clock(manual_clock: ManualClock) -> ManualClock:
    """`gm` (tests/conftest.py) runs on `manual_clock`."""
    return manual_clock


def stamp(moment: datetime) -> str:
    return clock.format_time(moment)


def ids(facts: list[Fact]) -> list[str]:
    return [f.id for f in facts]


def agent_map(any_store: AnyStore) -> dict[str, Any]:
    return {a.agent_id: a for a in any_store.agents()}


def tables_mentioning(store: LmdbStore, fact_id: str) -> set[str]:
    """Names of the store's tables holding a key that contains `fact_id` (a raw scan)."""

    def scan(tx: Tx) -> set[str]:
        found = set()
        for field in dataclasses.fields(tx.dbs):
            cursor = tx.txn.cursor(db=getattr(tx.dbs, field.name))
            for key in cursor.iternext(keys=True, values=False):
                if fact_id.encode() in bytes(key):
                    found.add(field.name)
        return found

    return store.read(scan)


def page_through(fetch: Callable[[str | None], list[Fact]]) -> list[list[str]]:
    """Keyset paging: call `fetch(before)` until a page comes back empty."""
    pages: list[list[str]] = []
    before: str | None = None
    for _ in range(1000):
        page = fetch(before)
        if not page:
            return pages
        pages.append(ids(page))
        before = page[-1].id
    raise AssertionError("paging never ended")


# ---- put / get / find -----------------------------------------------------------------


def test_put_returns_the_committed_fact(any_store: AnyStore, manual_clock: ManualClock) -> None:
    fact = any_store.put("agent-a", "The staging database listens on port 5432.")
    assert ULID.from_str(fact.id)  # a valid ULID
    assert len(fact.id) == 26
    assert fact.agent_id == "agent-a"
    assert fact.text == "The staging database listens on port 5432."
    assert fact.created_at == fact.accessed_at == stamp(manual_clock.now)
    assert fact.access_count == 0
    assert fact.weight == 1.0
    assert fact.superseded_by == ""
    assert fact.pinned is False
    assert fact.pinned_at is None
    assert fact.cycle_id == ""
    assert any_store.require(fact.id) == fact
    assert any_store.find(fact.id) == fact


def test_put_pinned_sets_pinned_at(any_store: AnyStore, manual_clock: ManualClock) -> None:
    fact = any_store.put("agent-a", "never forget", pinned=True)
    assert fact.pinned is True
    assert fact.pinned_at == stamp(manual_clock.now)
    assert any_store.require(fact.id) == fact


def test_put_keeps_text_exactly(any_store: AnyStore) -> None:
    text = "  line one\n\tline two \u00e9\u4e2d\U0001f600 [bold]x[/bold] \x1b[31m  "
    fact = any_store.put("agent-a", text)
    assert any_store.require(fact.id).text == text


def test_facts_survive_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "reopen"
    first = LmdbStore.open(path)
    written = [first.put("a", f"fact {i}") for i in range(5)]
    first.close()
    second = LmdbStore.open(path)
    try:
        assert second is not first
        assert [second.require(f.id) for f in written] == written
    finally:
        second.close()


def test_get_unknown_id_raises_not_found_and_find_returns_none(any_store: AnyStore) -> None:
    any_store.put("a", "something")
    with pytest.raises(NotFound, match=UNKNOWN_ID):
        any_store.require(UNKNOWN_ID)
    assert any_store.find(UNKNOWN_ID) is None
    assert any_store.find_many([UNKNOWN_ID]) == [None]


def test_find_many_keeps_order_and_marks_missing(any_store: AnyStore) -> None:
    a = any_store.put("a", "one")
    b = any_store.put("b", "two")
    assert any_store.find_many([b.id, UNKNOWN_ID, a.id]) == [b, None, a]


# ---- listing and paging -----------------------------------------------------------------


def _mixed_agent(any_store: AnyStore, clk: ManualClock, agent: str, n: int) -> dict[str, list[str]]:
    """n facts for `agent`, every third retired and every fifth revised. Returns ids by state."""
    made = []
    for i in range(n):
        clk.advance(seconds=1)
        made.append(any_store.put(agent, f"{agent} fact {i}"))
    for i, fact in enumerate(made):
        clk.advance(seconds=1)
        if i % 3 == 0:
            any_store.retire(fact.id)
        elif i % 5 == 0:
            any_store.revise(fact.id, f"{agent} fact {i}, revised")
    everything = any_store.fact_ids(agent, "all")
    return {
        "live": [i for i in everything if any_store.require(i).is_live],
        "tombstones": [i for i in everything if any_store.require(i).is_tombstone],
        "all": everything,
    }


def test_list_per_agent_by_state_newest_first(
    any_store: AnyStore, manual_clock: ManualClock
) -> None:
    by_state = _mixed_agent(any_store, manual_clock, "a", 12)
    _mixed_agent(any_store, manual_clock, "b", 4)  # another agent's facts must not leak in
    assert len(by_state["all"]) == 12 + 2  # 12 puts and 2 revisions (i = 5, 10)
    assert len(by_state["tombstones"]) == 4 + 2  # i = 0, 3, 6, 9 retired; 5, 10 revised
    for state in STATES:
        listed = any_store.list_facts("a", state)
        assert ids(listed) == sorted(by_state[state], reverse=True)
        assert all(f.agent_id == "a" for f in listed)
        if state == "live":
            assert all(f.is_live for f in listed)
        if state == "tombstones":
            assert all(f.is_tombstone for f in listed)
    assert any_store.list_facts("a") == any_store.list_facts("a", "live")
    assert any_store.list_facts("nobody", "all") == []


def test_list_newest_first_follows_creation_order(
    any_store: AnyStore, manual_clock: ManualClock
) -> None:
    created = []
    for i in range(10):
        manual_clock.advance(minutes=1)
        created.append(any_store.put("a", f"fact {i}"))
    assert any_store.list_facts("a") == list(reversed(created))


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("page_size", [1, 4, 7, 50])
def test_keyset_paging_within_an_agent(
    any_store: AnyStore, manual_clock: ManualClock, state: FactState, page_size: int
) -> None:
    _mixed_agent(any_store, manual_clock, "a", 17)
    _mixed_agent(any_store, manual_clock, "b", 5)
    full = ids(any_store.list_facts("a", state))
    pages = page_through(
        lambda before: any_store.list_facts("a", state, limit=page_size, before=before)
    )
    assert all(len(p) <= page_size for p in pages)
    assert all(len(p) == page_size for p in pages[:-1])
    assert [i for p in pages for i in p] == full


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("page_size", [1, 3, 10])
def test_keyset_paging_across_agents(
    any_store: AnyStore, manual_clock: ManualClock, state: FactState, page_size: int
) -> None:
    rng = random.Random(7)
    for i in range(30):  # interleave agents so pages must merge them by id
        manual_clock.advance(milliseconds=rng.randint(0, 3))
        any_store.put(rng.choice(["alpha", "beta", "gamma"]), f"fact {i}")
    for fact in any_store.list_facts("beta")[::2]:
        any_store.retire(fact.id)
    gamma = any_store.list_facts("gamma")
    if gamma:
        any_store.revise(gamma[-1].id, "gamma revised")

    expected = sorted(
        (i for a in ("alpha", "beta", "gamma") for i in any_store.fact_ids(a, state)), reverse=True
    )
    merged = any_store.list_facts(None, state)
    assert ids(merged) == expected
    pages = page_through(
        lambda before: any_store.list_facts(None, state, limit=page_size, before=before)
    )
    flat = [i for p in pages for i in p]
    assert flat == expected  # no gaps, no repeats, newest first
    assert len(set(flat)) == len(flat)


def test_paging_before_the_oldest_id_is_empty(any_store: AnyStore) -> None:
    facts = [any_store.put("a", f"f{i}") for i in range(3)]
    assert any_store.list_facts("a", before=facts[0].id) == []
    assert any_store.list_facts(None, before=facts[0].id) == []
    assert ids(any_store.list_facts("a", before=facts[2].id)) == [facts[1].id, facts[0].id]


def test_list_of_an_empty_store_is_empty(any_store: AnyStore) -> None:
    for state in STATES:
        assert any_store.list_facts(None, state) == []
    assert any_store.agents() == []


# ---- agents() ---------------------------------------------------------------------------


def test_agents_counts(any_store: AnyStore) -> None:
    any_store.put_many(
        [
            NewFact("ops", "w 0.2", weight=0.2),
            NewFact("ops", "w 0.4", weight=0.4),
            NewFact("ops", "w 0.9", weight=0.9, pinned=True),
            NewFact("research", "r1"),
        ]
    )
    victim = any_store.put("ops", "to retire", pinned=False)
    any_store.retire(victim.id)  # a tombstone's weight (1.0) must not count in avg_weight
    agents = agent_map(any_store)
    assert set(agents) == {"ops", "research"}
    ops = agents["ops"]
    assert (ops.live_facts, ops.tombstones, ops.pinned) == (3, 1, 1)
    assert ops.avg_weight == pytest.approx(0.5, abs=1e-6)
    research = agents["research"]
    assert (research.live_facts, research.tombstones, research.pinned) == (1, 0, 0)
    assert research.avg_weight == 1.0


def test_agent_with_only_tombstones_is_listed_with_zero_average(any_store: AnyStore) -> None:
    fact = any_store.put("a", "only one")
    any_store.retire(fact.id)
    (summary,) = any_store.agents()
    assert (summary.live_facts, summary.tombstones, summary.pinned) == (0, 1, 0)
    assert summary.avg_weight == 0.0


# ---- pin / unpin ------------------------------------------------------------------------


def test_pin_and_unpin(any_store: AnyStore, manual_clock: ManualClock) -> None:
    fact = any_store.put("a", "pin me")
    when = manual_clock.advance(hours=1)
    pinned = any_store.pin(fact.id)
    assert pinned.pinned is True
    assert pinned.pinned_at == stamp(when)
    assert pinned.text == fact.text and pinned.created_at == fact.created_at
    assert any_store.require(fact.id) == pinned
    assert agent_map(any_store)["a"].pinned == 1

    manual_clock.advance(hours=1)
    again = any_store.pin(fact.id)  # idempotent: same pin, same pinned_at, counted once
    assert again == pinned
    assert any_store.require(fact.id) == pinned
    assert agent_map(any_store)["a"].pinned == 1

    unpinned = any_store.unpin(fact.id)
    assert unpinned.pinned is False
    assert unpinned.pinned_at is None
    assert any_store.require(fact.id) == unpinned
    assert agent_map(any_store)["a"].pinned == 0
    assert any_store.unpin(fact.id) == unpinned  # idempotent too
    assert agent_map(any_store)["a"].live_facts == 1


def test_pin_refuses_a_tombstone(any_store: AnyStore) -> None:
    fact = any_store.put("a", "gone soon")
    tomb = any_store.retire(fact.id)
    with pytest.raises(Conflict, match="tombstone"):
        any_store.pin(fact.id)
    assert any_store.require(fact.id) == tomb
    assert agent_map(any_store)["a"].pinned == 0


def test_pin_and_unpin_unknown_id(any_store: AnyStore) -> None:
    with pytest.raises(NotFound):
        any_store.pin(UNKNOWN_ID)
    with pytest.raises(NotFound):
        any_store.unpin(UNKNOWN_ID)
    assert any_store.find(UNKNOWN_ID) is None


# ---- revise -----------------------------------------------------------------------------


def test_revise_makes_a_new_fact_and_a_tombstone(
    any_store: AnyStore, manual_clock: ManualClock
) -> None:
    old = any_store.put("a", "port 5432")
    when = manual_clock.advance(minutes=5)
    before = any_store.generation()
    revision, tomb = any_store.revise(old.id, "port 6543")
    assert any_store.generation() == before + 1  # one transaction
    assert revision.id != old.id and revision.id > old.id
    assert revision.agent_id == "a"
    assert revision.text == "port 6543"
    assert revision.is_live
    assert revision.created_at == stamp(when)
    assert tomb.id == old.id
    assert tomb.text == old.text  # text never rewritten in place
    assert tomb.superseded_by == revision.id
    assert any_store.require(old.id) == tomb
    assert any_store.require(revision.id) == revision
    assert ids(any_store.list_facts("a", "live")) == [revision.id]
    assert ids(any_store.list_facts("a", "tombstones")) == [old.id]
    summary = agent_map(any_store)["a"]
    assert (summary.live_facts, summary.tombstones) == (1, 1)


def test_revise_moves_the_pin_to_the_revision(any_store: AnyStore) -> None:
    old = any_store.put("a", "pinned text", pinned=True)
    revision, tomb = any_store.revise(old.id, "pinned text, revised")
    assert revision.pinned is True and revision.pinned_at is not None
    assert tomb.pinned is False and tomb.pinned_at is None
    assert any_store.require(old.id).pinned is False
    summary = agent_map(any_store)["a"]
    assert (summary.live_facts, summary.tombstones, summary.pinned) == (1, 1, 1)


def test_revise_refuses_a_tombstone(any_store: AnyStore) -> None:
    old = any_store.put("a", "v1")
    revision, tomb = any_store.revise(old.id, "v2")
    generation = any_store.generation()
    with pytest.raises(Conflict, match="tombstone"):
        any_store.revise(old.id, "v3")
    assert any_store.require(old.id) == tomb
    assert ids(any_store.list_facts("a", "all")) == [revision.id, old.id]
    assert any_store.generation() == generation


def test_revise_rejects_bad_text_and_unknown_ids(any_store: AnyStore) -> None:
    old = any_store.put("a", "v1")
    with pytest.raises(InvalidInput):
        any_store.revise(old.id, "   ")
    with pytest.raises(NotFound):
        any_store.revise(UNKNOWN_ID, "text")
    assert any_store.list_facts("a", "all") == [old]


# ---- retire -----------------------------------------------------------------------------


def test_retire(any_store: AnyStore) -> None:
    fact = any_store.put("a", "obsolete")
    tomb = any_store.retire(fact.id)
    assert tomb.superseded_by == RETIRED == "agent"
    assert tomb.text == fact.text
    assert any_store.require(fact.id) == tomb
    assert any_store.list_facts("a") == []
    assert ids(any_store.list_facts("a", "tombstones")) == [fact.id]


def test_retire_refuses_a_tombstone(any_store: AnyStore) -> None:
    fact = any_store.put("a", "obsolete")
    tomb = any_store.retire(fact.id)
    with pytest.raises(Conflict):
        any_store.retire(fact.id)
    assert any_store.require(fact.id) == tomb
    assert agent_map(any_store)["a"].tombstones == 1


def test_retire_refuses_a_pinned_fact(any_store: AnyStore) -> None:
    fact = any_store.put("a", "keep", pinned=True)
    with pytest.raises(Conflict, match="pinned"):
        any_store.retire(fact.id)
    assert any_store.require(fact.id) == fact
    assert agent_map(any_store)["a"].pinned == 1


def test_retire_unknown_id(any_store: AnyStore) -> None:
    with pytest.raises(NotFound):
        any_store.retire(UNKNOWN_ID)


# ---- touch ------------------------------------------------------------------------------


def test_touch_updates_live_facts_only(any_store: AnyStore, manual_clock: ManualClock) -> None:
    live = any_store.put("a", "live")
    dead = any_store.put("a", "dead")
    tomb = any_store.retire(dead.id)
    when = manual_clock.advance(hours=3)
    touched = any_store.touch([live.id, dead.id, UNKNOWN_ID, live.id])
    assert touched == 1  # one fact; tombstones and unknown ids are skipped
    after = any_store.require(live.id)
    assert after.access_count == 2  # named twice: two accesses (a batch of two searches)
    assert after.accessed_at == stamp(when)
    assert after.created_at == live.created_at
    assert after.weight == live.weight
    assert any_store.require(dead.id) == tomb  # not resurrected, not counted
    assert any_store.find(UNKNOWN_ID) is None  # never recreated
    assert any_store.fact_ids("a", "all") == sorted([live.id, dead.id], reverse=True)
    summary = agent_map(any_store)["a"]
    assert (summary.live_facts, summary.tombstones) == (1, 1)

    manual_clock.advance(hours=1)
    assert any_store.touch([live.id]) == 1
    assert any_store.require(live.id).access_count == 3


def test_touch_after_delete_does_not_recreate(any_store: AnyStore) -> None:
    fact = any_store.put("a", "short-lived")
    any_store.delete([fact.id])
    assert any_store.touch([fact.id]) == 0
    assert any_store.find(fact.id) is None
    assert any_store.agents() == []


# ---- delete -----------------------------------------------------------------------------


def test_delete_leaves_no_key_in_any_lmdb_table(store: LmdbStore) -> None:
    """LMDB only: a raw scan of every table (what each view shows after a delete is
    checked on both backends below)."""
    keep = store.put("a", "keep")
    gone = store.put("a", "gone")
    dead = store.put("a", "dead")
    store.retire(dead.id)
    for fact_id in (gone.id, dead.id):
        assert {"facts", "ids", "state"} <= tables_mentioning(store, fact_id)
    store.delete([gone.id, dead.id])
    for fact_id in (gone.id, dead.id):
        # no row, id index entry or state index entry is left behind, in any table: only
        # the record of when it stopped being live (schema 6), which is history
        assert tables_mentioning(store, fact_id) == {"lifespans"}
    assert {"facts", "ids", "state"} <= tables_mentioning(store, keep.id)


def test_delete_removes_the_fact_from_every_view(any_store: AnyStore) -> None:
    keep = any_store.put("a", "keep the red lamp")
    gone = any_store.put("a", "gone with the red lamp")
    dead = any_store.put("a", "dead red lamp")
    any_store.retire(dead.id)
    removed = any_store.delete([gone.id, dead.id, UNKNOWN_ID])
    assert sorted(ids(removed)) == sorted([gone.id, dead.id])
    for fact_id in (gone.id, dead.id):
        assert any_store.find(fact_id) is None
        with pytest.raises(NotFound):
            any_store.require(fact_id)
    assert any_store.fact_ids("a", "live") == [keep.id]
    assert any_store.fact_ids("a", "tombstones") == []
    assert any_store.list_facts("a", "all") == [keep]
    summary = agent_map(any_store)["a"]
    assert (summary.live_facts, summary.tombstones, summary.pinned) == (1, 0, 0)

    def postings(index: Any) -> tuple[int, list[str]]:
        (term,) = index.terms("lamp")
        return index.document_frequency("a", term), [p[0] for p in index.iter_postings("a", term)]

    assert any_store.read_index(postings) == (1, [keep.id])


def test_delete_of_an_agents_last_fact_drops_the_agent(any_store: AnyStore) -> None:
    a = any_store.put("a", "only")
    b = any_store.put("b", "other", pinned=True)
    assert [x.id for x in any_store.delete([a.id, a.id])] == [a.id]
    assert set(agent_map(any_store)) == {"b"}
    any_store.delete([b.id])
    assert any_store.agents() == []
    assert any_store.list_facts(None, "all") == []


def test_delete_unknown_is_a_no_op(any_store: AnyStore) -> None:
    fact = any_store.put("a", "x")
    assert any_store.delete([UNKNOWN_ID]) == []
    assert any_store.list_facts("a") == [fact]


# ---- show, counters, fact_ids -----------------------------------------------------------


def test_show_receipt_chain_of_a_revision(any_store: AnyStore) -> None:
    old = any_store.put("a", "v1")
    revision, tomb = any_store.revise(old.id, "v2")
    shown = any_store.show(old.id)
    assert shown.fact == tomb
    assert shown.replaced_by == revision
    assert shown.consumed == []
    assert shown.cycle is None

    newer = any_store.show(revision.id)
    assert newer.fact == revision
    assert newer.replaced_by is None
    assert newer.consumed == []
    assert newer.cycle is None

    # a chain of two revisions: each tombstone points at its direct replacement
    third, second_tomb = any_store.revise(revision.id, "v3")
    assert any_store.show(revision.id).replaced_by == third
    assert any_store.show(revision.id).fact == second_tomb
    assert any_store.show(old.id).replaced_by == second_tomb


def test_show_of_a_retired_fact_has_no_replacement(any_store: AnyStore) -> None:
    fact = any_store.put("a", "x")
    tomb = any_store.retire(fact.id)
    shown = any_store.show(fact.id)
    assert shown.fact == tomb
    assert shown.replaced_by is None


def test_show_unknown(any_store: AnyStore) -> None:
    with pytest.raises(NotFound):
        any_store.show(UNKNOWN_ID)


def test_counters_of_a_fresh_store_are_zero(any_store: AnyStore) -> None:
    counters = any_store.counters()
    assert (
        counters.consolidations,
        counters.facts_consolidated,
        counters.reverts,
        counters.cycles,
    ) == (0, 0, 0, 0)
    any_store.put("a", "x")  # curation never moves a consolidation counter
    assert any_store.counters() == counters


def test_fact_ids(any_store: AnyStore) -> None:
    made = [any_store.put("a", f"f{i}") for i in range(6)]
    any_store.put("b", "other agent")
    any_store.retire(made[1].id)
    any_store.retire(made[4].id)
    assert any_store.fact_ids("a") == [made[i].id for i in (5, 3, 2, 0)]
    assert any_store.fact_ids("a", "tombstones") == [made[4].id, made[1].id]
    assert any_store.fact_ids("a", "all") == [f.id for f in reversed(made)]
    assert any_store.fact_ids("unknown-agent", "all") == []


# ---- generation -------------------------------------------------------------------------


def test_generation_bumps_once_per_write_and_never_on_reads(any_store: AnyStore) -> None:
    start = any_store.generation()
    assert start >= 1

    def bumped_by(action: Callable[[], object]) -> int:
        before = any_store.generation()
        action()
        return any_store.generation() - before

    a = any_store.put("a", "one")
    assert any_store.generation() == start + 1
    b = any_store.put("a", "two")
    assert bumped_by(lambda: any_store.put_many([NewFact("b", f"n{i}") for i in range(50)])) == 1
    assert bumped_by(lambda: any_store.pin(a.id)) == 1
    assert bumped_by(lambda: any_store.unpin(a.id)) == 1
    assert bumped_by(lambda: any_store.revise(a.id, "one, revised")) == 1
    assert bumped_by(lambda: any_store.retire(b.id)) == 1
    c = any_store.put("a", "three")
    assert bumped_by(lambda: any_store.touch([c.id])) == 1
    assert bumped_by(lambda: any_store.delete([c.id])) == 1

    reads: list[Callable[[], object]] = [
        lambda: any_store.require(a.id),
        lambda: any_store.find(UNKNOWN_ID),
        lambda: any_store.find_many([a.id, b.id]),
        lambda: any_store.list_facts(None, "all"),
        lambda: any_store.list_facts("a", "tombstones", limit=1),
        lambda: any_store.fact_ids("a", "all"),
        lambda: any_store.agents(),
        lambda: any_store.counters(),
        lambda: any_store.info(),
        lambda: any_store.show(a.id),
        lambda: any_store.all_facts(),
    ]
    for read in reads:
        assert bumped_by(read) == 0


def test_failed_writes_do_not_bump_the_generation(any_store: AnyStore) -> None:
    fact = any_store.put("a", "x")
    any_store.retire(fact.id)
    pinned = any_store.put("a", "p", pinned=True)
    generation = any_store.generation()
    failing: list[Callable[[], object]] = [
        lambda: any_store.pin(fact.id),
        lambda: any_store.revise(fact.id, "y"),
        lambda: any_store.retire(fact.id),
        lambda: any_store.retire(pinned.id),
        lambda: any_store.pin(UNKNOWN_ID),
        lambda: any_store.put("a", ""),
        lambda: any_store.put("", "text"),
        lambda: any_store.put_many([NewFact("a", "ok"), NewFact("a", "bad weight", weight=1.5)]),
    ]
    for action in failing:
        with pytest.raises((Conflict, NotFound, InvalidInput)):
            action()
    assert any_store.generation() == generation
    assert len(any_store.list_facts("a", "all")) == 2


# ---- the clock and ids ------------------------------------------------------------------


def test_graymatter_now_pins_created_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_NOW", "2026-01-15T14:30:00.25+02:00")
    with LmdbStore.open(tmp_path / "pinned-clock") as opened:
        fact = opened.put("a", "as of a date")
        assert fact.created_at == "2026-01-15T12:30:00.250000Z"
        assert fact.accessed_at == fact.created_at
        expected_ms = int(datetime(2026, 1, 15, 12, 30, 0, 250000, tzinfo=UTC).timestamp() * 1000)
        assert ULID.from_str(fact.id).milliseconds == expected_ms
        assert opened.now() == datetime(2026, 1, 15, 12, 30, 0, 250000, tzinfo=UTC)


def test_a_malformed_graymatter_now_is_invalid_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LmdbStore.open(tmp_path / "bad-clock") as opened:
        monkeypatch.setenv("GRAYMATTER_NOW", "yesterday")
        with pytest.raises(InvalidInput, match="GRAYMATTER_NOW"):
            opened.put("a", "x")
        monkeypatch.delenv("GRAYMATTER_NOW")
        assert opened.list_facts("a") == []


def test_ids_sort_by_creation_time(any_store: AnyStore, manual_clock: ManualClock) -> None:
    rng = random.Random(3)
    made: list[Fact] = []
    for i in range(60):
        # many facts share a millisecond; some steps are large
        manual_clock.advance(milliseconds=rng.choice([0, 0, 0, 1, 7, 86_400_000]))
        made.append(any_store.put("a", f"fact {i}"))
    assert ids(made) == sorted(ids(made))
    assert len(set(ids(made))) == len(made)
    for fact in made:
        created = clock.parse_time(fact.created_at)
        assert ULID.from_str(fact.id).milliseconds == int(created.timestamp() * 1000)
    assert any_store.list_facts("a") == list(reversed(made))


# ---- one Store per path, closing --------------------------------------------------------


def test_open_twice_returns_the_same_store(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    first = LmdbStore.open(path)
    try:
        assert LmdbStore.open(path) is first
        assert LmdbStore.open(str(path)) is first
        assert LmdbStore.open(tmp_path / "." / "shared") is first
        link = tmp_path / "link"
        os.symlink(path, link)
        assert LmdbStore.open(link) is first
    finally:
        first.close()
    reopened = LmdbStore.open(path)
    try:
        assert reopened is not first
    finally:
        reopened.close()


def test_use_after_close_raises_store_error(tmp_path: Path) -> None:
    opened = LmdbStore.open(tmp_path / "closing")
    fact = opened.put("a", "x")
    opened.close()
    opened.close()  # closing twice is harmless
    actions: list[Callable[[], object]] = [
        lambda: opened.put("a", "y"),
        lambda: opened.require(fact.id),
        lambda: opened.find(fact.id),
        lambda: opened.list_facts("a"),
        lambda: opened.agents(),
        lambda: opened.generation(),
        lambda: opened.pin(fact.id),
        lambda: opened.touch([fact.id]),
        lambda: opened.delete([fact.id]),
    ]
    for action in actions:
        with pytest.raises(StoreError, match="closed"):
            action()
    with LmdbStore.open(tmp_path / "closing") as again:
        assert again.require(fact.id) == fact  # nothing was lost or changed


def test_context_manager_closes(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "ctx") as opened:
        opened.put("a", "x")
    with pytest.raises(StoreError):
        opened.agents()


# ---- validation limits ------------------------------------------------------------------


def test_text_and_agent_size_limits_are_bytes(any_store: AnyStore) -> None:
    assert any_store.put("a", "x" * 65536).text == "x" * 65536  # exactly 64 KiB is fine
    assert any_store.put("é" * 128, "ok").agent_id == "é" * 128  # 256 bytes is fine
    with pytest.raises(InvalidInput, match="65537 bytes"):
        any_store.put("a", "x" * 65537)
    with pytest.raises(InvalidInput, match="65537 bytes"):
        any_store.put("a", "x" * 65535 + "é")  # 65536 characters but 65537 bytes
    with pytest.raises(InvalidInput, match="257"):
        any_store.put("a" * 257, "x")
    with pytest.raises(InvalidInput, match="258"):
        any_store.put("é" * 129, "x")
    with pytest.raises(InvalidInput):
        any_store.put("a", "bad \ud800 surrogate")
    for bad in ("a\nb", "a\tb", "a\x7fb", "a\x85b", "a\u202eb", "a\u2066b"):
        with pytest.raises(InvalidInput, match="control character"):
            any_store.put(bad, "x")
    assert {a.agent_id for a in any_store.agents()} == {"a", "é" * 128}


def test_show_of_a_tombstone_whose_replacement_was_deleted(any_store: AnyStore) -> None:
    old = any_store.put("a", "v1")
    revision, tomb = any_store.revise(old.id, "v2")
    any_store.delete([revision.id])
    shown = any_store.show(old.id)
    assert shown.fact == tomb
    assert shown.replaced_by is None


# ---- hostile text, malformed ids, the demo's claim ----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a NUL \x00 inside, twice \x00",
        "\x00",
        "quotes ' \" and a backslash \\ and %s %(x)s {x}",
        "Robert'); DROP TABLE facts;--",
        "emoji \U0001f600 and RTL \u202e override",
    ],
)
def test_hostile_text_is_kept_exactly_and_found(any_store: AnyStore, text: str) -> None:
    fact = any_store.put("a", text)
    assert any_store.require(fact.id).text == text
    assert any_store.list_facts("a") == [fact]
    revision, tomb = any_store.revise(fact.id, text + " (revised)")
    assert any_store.require(tomb.id).text == text
    assert any_store.texts("a") == ([revision.id], [text + " (revised)"])
    assert any_store.retire_text("a", text + " (revised)")[0].id == revision.id


def test_unknown_and_malformed_ids_are_not_found(any_store: AnyStore) -> None:
    for bad in ("", "x" * 100, "nul\x00id", "01JC000000000000000000000'"):
        assert any_store.find(bad) is None
        assert any_store.find_record(bad) is None
        assert any_store.find_many([bad]) == [None]


def test_the_demo_claims_only_an_empty_store(any_store: AnyStore) -> None:
    assert any_store.is_demo() is False
    any_store.claim_for_demo()
    assert any_store.is_demo() is True
    any_store.put("a", "a demo fact")
    any_store.claim_for_demo()  # claimed already: nothing to refuse


def test_the_demo_refuses_a_store_with_facts_it_did_not_put(any_store: AnyStore) -> None:
    any_store.put("a", "somebody's fact")
    with pytest.raises(Conflict, match="already holds 1 fact that the demo did not put") as caught:
        any_store.claim_for_demo()
    assert "***" in str(caught.value) or "store-" in str(caught.value)
    assert any_store.is_demo() is False
