"""The review queue in the store: a held change changes no fact; an approval applies it
in one transaction through the direct path's operations (or discards it as stale, saying
what changed); a rejection keeps its reason; every decision is a journal record, and an
applied one reverts like a cycle. The invariants stay clean after each step."""

from __future__ import annotations

from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core import provenance
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.model import RETIRED, ReviewProposal
from tests.support.backends import AnyStore

AGENT = "agent-a"
AGENT_SOURCE = "mcp:claude-code"
OLD = "Staging database listens on port 5432."
NEW = "Staging database listens on port 5433."


def _clean(store: LmdbStore) -> None:
    problems = [v for check in check_invariants(store) for v in check.violations]
    assert problems == []


def _hold(store: LmdbStore, action: str, target: str = OLD, text: str = "") -> ReviewProposal:
    with provenance.writing_as(AGENT_SOURCE):
        return store.hold_change(AGENT, action, target, text)


def test_a_held_update_changes_nothing_until_approved(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, OLD)
    held = _hold(any_store, "update", OLD, NEW)
    assert held.pending and held.source == AGENT_SOURCE
    assert [(m.id, m.text) for m in held.matches] == [(old.id, OLD)]
    assert [f.text for f in any_store.list_facts(AGENT)] == [OLD]
    assert any_store.proposals(status="pending") == [held]
    assert any_store.activity(limit=1)[0].action == "review"
    _clean(any_store)


def test_held_update_approved_leaves_a_tombstone_with_its_receipt(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, OLD)
    held = _hold(any_store, "update", OLD, NEW)
    with provenance.writing_as(provenance.CLI):
        decision = any_store.approve_proposal(held.id)
    assert decision.applied
    assert decision.proposal.status == "approved"
    assert decision.proposal.decided_by == provenance.CLI
    record = decision.record
    assert (record.kind, record.outcome, record.proposal_id) == ("review", "applied", held.id)
    assert record.consumed == [old.id] and record.decided_by == provenance.CLI
    shown = any_store.show(old.id)
    assert shown.fact.superseded_by == record.summary_id
    assert shown.replaced_by is not None and shown.replaced_by.text == NEW
    # The agent wrote the replacement; the person approved it.
    assert shown.replaced_by.source == AGENT_SOURCE
    assert shown.cycle is not None and shown.cycle.proposal_id == held.id
    assert any_store.require_proposal(held.id).record_id == record.cycle_id
    assert any_store.records()[0] == record
    actions = [(e.action, e.source) for e in any_store.activity(limit=2)]
    assert actions == [("review", provenance.CLI), ("update", AGENT_SOURCE)]
    _clean(any_store)


def test_held_forget_on_a_fact_changed_meanwhile_is_discarded_as_stale(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, OLD)
    held = _hold(any_store, "forget", OLD)
    revision, _ = any_store.revise(old.id, NEW)
    decision = any_store.approve_proposal(held.id)
    assert not decision.applied
    assert decision.proposal.status == "discarded"
    assert (
        decision.proposal.reason
        == f"stale: fact {old.id} was superseded by {revision.id} meanwhile"
    )
    assert decision.record.outcome == "discarded"
    assert any_store.require(revision.id).is_live  # nothing forgotten
    _clean(any_store)


@pytest.mark.parametrize(
    ("meanwhile", "said"),
    [
        (lambda s, f: s.pin(f.id), "was pinned meanwhile"),
        (lambda s, f: s.retire(f.id), "was forgotten meanwhile"),
        (lambda s, f: s.delete([f.id]), "no longer exists"),
        (lambda s, f: s.put(AGENT, OLD), "with the same text was written meanwhile"),
    ],
)
def test_every_kind_of_change_meanwhile_is_named(
    any_store: AnyStore, meanwhile: object, said: str
) -> None:
    fact = any_store.put(AGENT, OLD)
    held = _hold(any_store, "update", OLD, NEW)
    meanwhile(any_store, fact)  # type: ignore[operator]
    decision = any_store.approve_proposal(held.id)
    assert not decision.applied and said in decision.proposal.reason
    assert all(f.text != NEW for f in any_store.list_facts(AGENT, "all"))


def test_approve_then_revert_an_update(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, OLD, pinned=True)
    held = _hold(any_store, "update", OLD, NEW)
    decision = any_store.approve_proposal(held.id)
    replacement = any_store.require(decision.record.summary_id)
    assert replacement.pinned  # the pin moved, as on the direct path
    assert any_store.revert_refusal(decision.record.cycle_id) is None
    revert = any_store.revert(decision.record.cycle_id)
    assert revert.kind == "revert" and revert.restored == [old.id]
    back = any_store.require(old.id)
    assert back.is_live and back.pinned and back.cycle_id == ""
    assert any_store.require(replacement.id).superseded_by == RETIRED
    assert not any_store.require(replacement.id).pinned
    assert any_store.counters().reverts == 1
    refusal = any_store.revert_refusal(decision.record.cycle_id)
    assert refusal is not None and "already reverted" in refusal
    _clean(any_store)


def test_approve_then_revert_forget_pin_unpin_and_add(any_store: AnyStore) -> None:
    gone = any_store.put(AGENT, OLD)
    forgot = any_store.approve_proposal(_hold(any_store, "forget", OLD).id)
    assert any_store.require(gone.id).superseded_by == RETIRED
    any_store.revert(forgot.record.cycle_id)
    assert any_store.require(gone.id).is_live

    pinned = any_store.approve_proposal(_hold(any_store, "pin", OLD).id)
    assert any_store.require(gone.id).pinned
    any_store.revert(pinned.record.cycle_id)
    assert not any_store.require(gone.id).pinned

    any_store.pin(gone.id)
    unpinned = any_store.approve_proposal(_hold(any_store, "unpin", OLD).id)
    assert not any_store.require(gone.id).pinned
    any_store.revert(unpinned.record.cycle_id)
    assert any_store.require(gone.id).pinned

    added = any_store.approve_proposal(_hold(any_store, "add", "", NEW).id)
    fact = any_store.require(added.record.summary_id)
    assert fact.text == NEW and fact.source == AGENT_SOURCE
    any_store.revert(added.record.cycle_id)
    assert any_store.require(fact.id).superseded_by == RETIRED
    assert any_store.counters().reverts == 4
    assert any_store.counters().cycles == 0  # a review is not a consolidation cycle
    _clean(any_store)


def test_a_revert_that_cannot_apply_says_why(any_store: AnyStore) -> None:
    any_store.put(AGENT, OLD)
    decision = any_store.approve_proposal(_hold(any_store, "update", OLD, NEW).id)
    any_store.pin(decision.record.summary_id)
    refusal = any_store.revert_refusal(decision.record.cycle_id)
    assert refusal is not None and "is pinned; unpin it first" in refusal
    with pytest.raises(Conflict, match="unpin it first"):
        any_store.revert(decision.record.cycle_id)
    any_store.unpin(decision.record.summary_id)
    any_store.retire(decision.record.summary_id)
    refusal = any_store.revert_refusal(decision.record.cycle_id)
    assert refusal is not None and "was retired since" in refusal

    any_store.put(AGENT, "Another fact to reject.")
    rejected = any_store.reject_proposal(
        _hold(any_store, "forget", "Another fact to reject.").id, "no"
    )
    refusal = any_store.revert_refusal(rejected.record.cycle_id)
    assert refusal is not None and "nothing was applied (outcome rejected)" in refusal
    _clean(any_store)


def test_a_change_that_can_never_apply_is_refused_when_held(any_store: AnyStore) -> None:
    with pytest.raises(NotFound, match="no live fact"):
        _hold(any_store, "forget", "never written")
    any_store.put(AGENT, OLD, pinned=True)
    with pytest.raises(Conflict, match="pinned"):
        _hold(any_store, "forget", OLD)
    with pytest.raises(Conflict, match="unchanged"):
        _hold(any_store, "update", OLD, OLD)
    with pytest.raises(InvalidInput):
        _hold(any_store, "link", OLD, NEW)
    assert any_store.proposals() == []


def test_hostile_decisions_are_refused_and_lose_nothing(any_store: AnyStore) -> None:
    any_store.put(AGENT, OLD)
    held = _hold(any_store, "update", OLD, NEW)
    first = any_store.approve_proposal(held.id)
    with pytest.raises(Conflict, match="already decided: approved"):
        any_store.approve_proposal(held.id)
    with pytest.raises(Conflict, match="already decided"):
        any_store.reject_proposal(held.id, "too late")

    other = _hold(any_store, "forget", NEW)
    any_store.reject_proposal(other.id, "keep it")
    with pytest.raises(Conflict, match="already decided: rejected"):
        any_store.approve_proposal(other.id)
    with pytest.raises(NotFound, match="no proposal with id"):
        any_store.approve_proposal("01JC0000000000000000000001")
    for bad in ("not-an-id", "", "x" * 100, "../../etc"):
        with pytest.raises(InvalidInput, match="not a proposal id"):
            any_store.approve_proposal(bad)
        with pytest.raises(InvalidInput, match="not a proposal id"):
            any_store.require_proposal(bad)
    assert any_store.find_proposal("not-an-id") is None
    assert any_store.require(first.record.summary_id).is_live
    _clean(any_store)


def test_a_reason_with_control_characters_is_refused_and_markup_kept(any_store: AnyStore) -> None:
    any_store.put(AGENT, OLD)
    held = _hold(any_store, "forget", OLD)
    for bad in ("evil\x1b[31m red", "two\nlines", "bidi \u202e txet"):
        with pytest.raises(InvalidInput, match="control character"):
            any_store.reject_proposal(held.id, bad)
    with pytest.raises(InvalidInput, match="limit is 1000"):
        any_store.reject_proposal(held.id, "x" * 1001)
    assert any_store.require_proposal(held.id).pending
    assert any_store.pending_count() == 1
    markup = "[bold red]no[/] [link=http://x]this[/link]"
    decision = any_store.reject_proposal(held.id, markup)
    assert decision.proposal.reason == markup == decision.record.reason
    assert any_store.list_facts(AGENT)[0].text == OLD


def test_listing_filters_by_agent_and_status_newest_first(any_store: AnyStore) -> None:
    any_store.put(AGENT, OLD)
    any_store.put("agent-b", OLD)
    first = _hold(any_store, "pin", OLD)
    second = _hold(any_store, "forget", OLD)
    with provenance.writing_as(AGENT_SOURCE):
        third = any_store.hold_change("agent-b", "forget", OLD, "")
    any_store.reject_proposal(first.id)
    assert [p.id for p in any_store.proposals()] == [third.id, second.id, first.id]
    assert [p.id for p in any_store.proposals(AGENT, status="pending")] == [second.id]
    assert [p.id for p in any_store.proposals(status="rejected")] == [first.id]
    assert any_store.pending_count() == 2 == len(any_store.proposals(status="pending"))
    assert any_store.proposals("nobody") == []


def test_review_records_survive_export_and_import(any_store: AnyStore, tmp_path: Path) -> None:
    any_store.put(AGENT, OLD)
    decision = any_store.approve_proposal(_hold(any_store, "update", OLD, NEW).id)
    facts, records = any_store.all_facts(), any_store.records()
    with LmdbStore.open(tmp_path / "copy") as copy:
        copy.import_all(facts, records)
        assert copy.require_record(decision.record.cycle_id) == decision.record
        assert copy.counters() == any_store.counters()
        _clean(copy)
        # Proposals stay in their store (export writes facts and the journal); the
        # record alone is enough to revert the approval.
        assert copy.proposals() == []
        copy.revert(decision.record.cycle_id)
        assert [f.text for f in copy.list_facts(AGENT)] == [OLD]
        _clean(copy)
