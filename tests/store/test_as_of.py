"""Memory as it was: a store taken through additions, revisions, a retirement, a
consolidation and its revert answers every past moment with exactly the facts that were
live then. What was live is not worked out here: at each step the store itself is saved
(LMDB: its files copied, and the copy's live facts listed; PostgreSQL: its live facts
listed then), and `past_facts` of that moment, asked at the end, must give the same set.
On both backends."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core import clock, provenance
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage.values import ApplyRequest, NewFact
from tests.support.backends import AnyStore
from tests.support.clock import ManualClock


@dataclass
class Saved:
    """One step: when it ended, and the live facts (id -> agent) of the store as saved."""

    label: str
    at: datetime
    live: dict[str, str]


@dataclass
class History:
    steps: list[Saved] = field(default_factory=list)
    records: dict[str, Saved] = field(default_factory=dict)  # record id -> step before it


def _live_of(store: AnyStore) -> dict[str, str]:
    return {f.id: f.agent_id for f in store.list_facts(None, "live")}


def _save(store: AnyStore, label: str, tmp_path: Path) -> Saved:
    """The store as it is now: its LMDB files copied and the copy's live facts listed
    (PostgreSQL: the live facts listed)."""
    if isinstance(store, LmdbStore):
        copy = tmp_path / f"copy-{label}"
        copy.mkdir()
        for name in ("data.mdb", "lock.mdb"):
            if (store.path / name).exists():
                shutil.copy2(store.path / name, copy / name)
        with LmdbStore.open(copy, read_only=True) as saved:
            live = _live_of(saved)  # type: ignore[arg-type]
        assert live == _live_of(store)  # the copy is the store of that moment
    else:
        live = _live_of(store)
    return Saved(label, store.now(), live)


def _consolidate(store: AnyStore, agent: str, ids: list[str], summary: str) -> CycleRecord:
    cycle = store.unused_id(store.now())
    started = clock.format_time(store.now())
    shown = {i: store.require(i).text for i in ids}
    request = ApplyRequest(
        cycle_id=cycle, agent_id=agent, summary=summary, consume=ids, snapshot=shown
    )
    record = CycleRecord(
        cycle_id=cycle, agent_id=agent, started_at=started, finished_at=started, batch=ids
    )
    outcome = store.apply_consolidation(request, record)
    assert outcome.applied and outcome.record is not None, outcome.reason
    return outcome.record


def _history(store: AnyStore, tick: ManualClock, tmp_path: Path) -> History:
    """Every kind of write that ends or restores a fact, a minute apart, each step saved."""
    h = History()

    def step(label: str) -> Saved:
        saved = _save(store, label, tmp_path)
        h.steps.append(saved)
        tick.advance(minutes=1)
        return saved

    a = store.put("ops", "The staging database listens on port 5432.")
    b = store.put("ops", "Staging's database is on port 5432.")
    c = store.put("ops", "Backups run nightly at 02:00 UTC.")
    d = store.put("ops", "The on-call rota is in the wiki.")
    e = store.put("support", "Refunds over 100 EUR need a lead.")
    (faint,) = store.put_many([NewFact("ops", "A note nobody reads.", weight=0.005)])
    step("added")
    revised, _ = store.revise(c.id, "Backups run nightly at 03:00 UTC.")
    step("revised")
    store.retire(d.id)
    step("retired")
    before_cycle = step("quiet")  # nothing happens: the moment after it is the same
    first = _consolidate(store, "ops", [a.id, b.id], "Staging's database: port 5432.")
    h.records[first.cycle_id] = before_cycle
    after_cycle = step("consolidated")
    revert = store.revert(first.cycle_id)
    h.records[revert.cycle_id] = after_cycle
    after_revert = step("reverted")
    second = _consolidate(store, "ops", [a.id, revised.id], "Staging on 5432; backups 03:00.")
    h.records[second.cycle_id] = after_revert
    step("consolidated again")
    store.revise(e.id, "Refunds over 200 EUR need a lead.")
    before_prune = step("support revised")
    stamp = clock.format_time(store.now())
    pruning = CycleRecord(
        cycle_id=store.unused_id(store.now()), agent_id="ops", started_at=stamp, finished_at=stamp
    )
    assert [f.id for f in store.prune("ops", pruning).pruned] == [faint.id]
    h.records[pruning.cycle_id] = before_prune
    step("pruned")
    return h


@pytest.fixture
def history(any_store: AnyStore, store_clock: ManualClock, tmp_path: Path) -> History:
    return _history(any_store, store_clock, tmp_path)


def _past_live(store: AnyStore, agent: str | None, as_of: AsOf) -> dict[str, str]:
    past = store.past_facts(agent, as_of)
    ids = [p.fact_id for p in past.facts]
    assert ids == sorted(ids, reverse=True)  # newest first, as `list`
    assert all(p.then == "live" for p in past.facts)
    assert all(p.fact is not None and p.fact.id == p.fact_id for p in past.facts)
    return {p.fact_id: p.fact.agent_id for p in past.facts if p.fact is not None}


def test_each_saved_moment_is_answered_with_the_facts_live_then(
    any_store: AnyStore, history: History
) -> None:
    saved_as = {s.label: s.live for s in history.steps}
    assert saved_as["quiet"] == saved_as["retired"]  # nothing happened in between
    assert saved_as["reverted"] == saved_as["retired"]  # the revert undid the cycle
    assert len({frozenset(live) for live in saved_as.values()}) == 7
    for saved in history.steps:
        got = _past_live(any_store, None, AsOf(time=saved.at))
        assert got == saved.live, saved.label
        ops = {i: a for i, a in saved.live.items() if a == "ops"}
        assert _past_live(any_store, "ops", AsOf(time=saved.at)) == ops, saved.label


def test_a_moment_between_two_steps_is_the_earlier_step(
    any_store: AnyStore, history: History
) -> None:
    from datetime import timedelta

    for saved in history.steps:
        between = saved.at + timedelta(seconds=30)  # the next write is a minute later
        assert _past_live(any_store, None, AsOf(time=between)) == saved.live, saved.label


def test_just_before_a_record_is_the_step_saved_before_it(
    any_store: AnyStore, history: History
) -> None:
    assert len(history.records) == 4  # two consolidations, a revert and a prune
    for record_id, saved in history.records.items():
        past = any_store.past_facts(None, AsOf(record=record_id))
        assert past.agent == "ops"  # the record's own agent
        live = {p.fact_id for p in past.facts}
        assert live == {i for i, a in saved.live.items() if a == "ops"}, saved.label


def test_what_happened_since_names_the_cycle_the_revert_and_the_revision(
    any_store: AnyStore, history: History
) -> None:
    first_cycle = next(iter(history.records))
    record = any_store.find_record(first_cycle)
    assert record is not None
    past = any_store.past_facts("ops", AsOf(record=first_cycle))
    by_id = {p.fact_id: p for p in past.facts}
    consumed = by_id[record.consumed[0]]
    hows = [(e.how, e.record) for e in consumed.later]
    assert hows[0] == ("consumed", first_cycle)
    assert consumed.later[0].by == record.summary_id
    assert consumed.later[0].until  # made live again by the revert...
    revert = next(r for r in history.records if r != first_cycle and r > first_cycle)
    assert consumed.later[0].restored_by == revert
    assert consumed.now in {"live", "tombstone"}
    assert not consumed.approximate  # recorded as it happened, not derived
    retired = [p for p in past.facts if any(e.how == "retired" for e in p.later)]
    assert retired == []  # the fact retired by hand had stopped being live before
    gone = any_store.past_facts("ops", AsOf(record=first_cycle), state="tombstones")
    assert {p.ended.how for p in gone.facts if p.ended is not None} == {"revised", "retired"}


def test_a_summary_retired_by_its_revert_was_live_only_in_between(
    any_store: AnyStore, history: History
) -> None:
    first_cycle = next(iter(history.records))
    record = any_store.find_record(first_cycle)
    assert record is not None
    summary = record.summary_id
    consolidated = next(s for s in history.steps if s.label == "consolidated")
    reverted = next(s for s in history.steps if s.label == "reverted")
    assert summary in _past_live(any_store, "ops", AsOf(time=consolidated.at))
    assert summary not in _past_live(any_store, "ops", AsOf(time=reverted.at))
    then = any_store.past_facts("ops", AsOf(time=consolidated.at))
    item = next(p for p in then.facts if p.fact_id == summary)
    assert [(e.how, e.record_kind) for e in item.later] == [("retired", "revert")]
    assert item.now == "tombstone"


def test_bad_moments_are_refused_clearly(any_store: AnyStore, history: History) -> None:
    first = history.steps[0].at
    from datetime import timedelta

    with pytest.raises(InvalidInput, match="did not exist yet"):
        any_store.past_facts(None, AsOf(time=first - timedelta(days=400)))
    record_id = next(iter(history.records))
    with pytest.raises(Conflict, match="of agent 'ops', not 'support'"):
        any_store.past_facts("support", AsOf(record=record_id))
    with pytest.raises(NotFound, match="no journal record"):
        any_store.past_facts(None, AsOf(record="01JC0000000000000000000001"))


def test_a_pruned_fact_is_shown_live_before_its_prune_from_the_journal_copy(
    any_store: AnyStore, history: History
) -> None:
    pruned_by, saved = list(history.records.items())[-1]
    past = any_store.past_facts("ops", AsOf(time=saved.at))
    (faint,) = [p for p in past.facts if p.now == "pruned"]
    assert faint.fact is not None and faint.fact.text == "A note nobody reads."
    assert [(e.how, e.record) for e in faint.later] == [("pruned", pruned_by)]
    after = any_store.past_facts("ops", AsOf(time=history.steps[-1].at))
    assert faint.fact_id not in {p.fact_id for p in after.facts}


@pytest.mark.parametrize("page", [1, 2, 3])
def test_pages_of_a_past_moment_join_up_to_the_whole_list(
    any_store: AnyStore, history: History, page: int
) -> None:
    for saved in history.steps:
        for state in ("live", "tombstones", "all"):
            whole = any_store.past_facts(None, AsOf(time=saved.at), state=state)  # type: ignore[arg-type]
            paged: list[str] = []
            before: str | None = None
            while True:
                got = any_store.past_facts(
                    None,
                    AsOf(time=saved.at),
                    state=state,
                    limit=page,
                    before=before,  # type: ignore[arg-type]
                )
                assert len(got.facts) <= page
                paged += [p.fact_id for p in got.facts]
                if len(got.facts) < page:
                    break
                before = got.facts[-1].fact_id
            assert paged == [p.fact_id for p in whole.facts], (saved.label, state)


def test_an_approved_review_and_its_revert_are_named_and_undone_in_the_past(
    any_store: AnyStore, store_clock: ManualClock
) -> None:
    old = any_store.put("ops", "Staging listens on 5432.")
    store_clock.advance(minutes=1)
    with provenance.writing_as("mcp:claude-code"):
        held = any_store.hold_change("ops", "update", old.text, "Staging listens on 6543.")
    store_clock.advance(minutes=1)
    decision = any_store.approve_proposal(held.id)
    assert decision.applied
    review = decision.record
    approved_at = any_store.now()
    store_clock.advance(minutes=1)
    revert = any_store.revert(review.cycle_id)
    reverted_at = any_store.now()

    before = any_store.past_facts("ops", AsOf(record=review.cycle_id))
    assert [p.fact_id for p in before.facts] == [old.id]  # the replacement not yet written
    (revised,) = before.facts[0].later
    assert (revised.how, revised.by, revised.record, revised.record_kind) == (
        "revised",
        review.summary_id,
        review.cycle_id,
        "review",
    )
    assert revised.restored_by == revert.cycle_id
    assert revised.source == "mcp:claude-code"  # who asked (the derivation says so too)
    between = any_store.past_facts("ops", AsOf(time=approved_at))
    assert [p.fact_id for p in between.facts] == [review.summary_id]
    (ending,) = between.facts[0].later
    assert (ending.how, ending.record, ending.record_kind) == ("retired", revert.cycle_id, "revert")
    after = any_store.past_facts("ops", AsOf(time=reverted_at))
    assert [p.fact_id for p in after.facts] == [old.id]
    assert {f.id for f in any_store.list_facts("ops")} == {old.id}  # as the store is now
