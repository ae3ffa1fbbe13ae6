"""The review queue in the store: a held change changes no fact; an approval applies it
in one transaction through the direct path's operations (or discards it as stale, saying
what changed); a rejection keeps its reason; every decision is a journal record, and an
applied one reverts like a cycle. The invariants stay clean after each step."""

from __future__ import annotations

import pytest

from graymatter_tui import provenance
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.model import RETIRED, ReviewProposal
from graymatter_tui.store import Store

AGENT = "agent-a"
AGENT_SOURCE = "mcp:claude-code"
OLD = "Staging database listens on port 5432."
NEW = "Staging database listens on port 5433."


def _clean(store: Store) -> None:
    problems = [v for check in check_invariants(store) for v in check.violations]
    assert problems == []


def _hold(store: Store, action: str, target: str = OLD, text: str = "") -> ReviewProposal:
    with provenance.writing_as(AGENT_SOURCE):
        return store.hold_change(AGENT, action, target, text)


def test_a_held_update_changes_nothing_until_approved(gm: Store) -> None:
    old = gm.put(AGENT, OLD)
    held = _hold(gm, "update", OLD, NEW)
    assert held.pending and held.source == AGENT_SOURCE
    assert [(m.id, m.text) for m in held.matches] == [(old.id, OLD)]
    assert [f.text for f in gm.list_facts(AGENT)] == [OLD]
    assert gm.proposals(status="pending") == [held]
    assert gm.activity(limit=1)[0].action == "review"
    _clean(gm)


def test_held_update_approved_leaves_a_tombstone_with_its_receipt(gm: Store) -> None:
    old = gm.put(AGENT, OLD)
    held = _hold(gm, "update", OLD, NEW)
    with provenance.writing_as(provenance.CLI):
        decision = gm.approve_proposal(held.id)
    assert decision.applied
    assert decision.proposal.status == "approved"
    assert decision.proposal.decided_by == provenance.CLI
    record = decision.record
    assert (record.kind, record.outcome, record.proposal_id) == ("review", "applied", held.id)
    assert record.consumed == [old.id] and record.decided_by == provenance.CLI
    shown = gm.show(old.id)
    assert shown.fact.superseded_by == record.summary_id
    assert shown.replaced_by is not None and shown.replaced_by.text == NEW
    # The agent wrote the replacement; the person approved it.
    assert shown.replaced_by.source == AGENT_SOURCE
    assert shown.cycle is not None and shown.cycle.proposal_id == held.id
    assert gm.require_proposal(held.id).record_id == record.cycle_id
    assert gm.records()[0] == record
    actions = [(e.action, e.source) for e in gm.activity(limit=2)]
    assert actions == [("review", provenance.CLI), ("update", AGENT_SOURCE)]
    _clean(gm)


def test_held_forget_on_a_fact_changed_meanwhile_is_discarded_as_stale(gm: Store) -> None:
    old = gm.put(AGENT, OLD)
    held = _hold(gm, "forget", OLD)
    revision, _ = gm.revise(old.id, NEW)
    decision = gm.approve_proposal(held.id)
    assert not decision.applied
    assert decision.proposal.status == "discarded"
    assert (
        decision.proposal.reason
        == f"stale: fact {old.id} was superseded by {revision.id} meanwhile"
    )
    assert decision.record.outcome == "discarded"
    assert gm.require(revision.id).is_live  # nothing forgotten
    _clean(gm)


@pytest.mark.parametrize(
    ("meanwhile", "said"),
    [
        (lambda s, f: s.pin(f.id), "was pinned meanwhile"),
        (lambda s, f: s.retire(f.id), "was forgotten meanwhile"),
        (lambda s, f: s.delete([f.id]), "no longer exists"),
        (lambda s, f: s.put(AGENT, OLD), "with the same text was written meanwhile"),
    ],
)
def test_every_kind_of_change_meanwhile_is_named(gm: Store, meanwhile: object, said: str) -> None:
    fact = gm.put(AGENT, OLD)
    held = _hold(gm, "update", OLD, NEW)
    meanwhile(gm, fact)  # type: ignore[operator]
    decision = gm.approve_proposal(held.id)
    assert not decision.applied and said in decision.proposal.reason
    assert all(f.text != NEW for f in gm.list_facts(AGENT, "all"))


def test_approve_then_revert_an_update(gm: Store) -> None:
    old = gm.put(AGENT, OLD, pinned=True)
    held = _hold(gm, "update", OLD, NEW)
    decision = gm.approve_proposal(held.id)
    replacement = gm.require(decision.record.summary_id)
    assert replacement.pinned  # the pin moved, as on the direct path
    assert gm.revert_refusal(decision.record.cycle_id) is None
    revert = gm.revert(decision.record.cycle_id)
    assert revert.kind == "revert" and revert.restored == [old.id]
    back = gm.require(old.id)
    assert back.is_live and back.pinned and back.cycle_id == ""
    assert gm.require(replacement.id).superseded_by == RETIRED
    assert not gm.require(replacement.id).pinned
    assert gm.counters().reverts == 1
    refusal = gm.revert_refusal(decision.record.cycle_id)
    assert refusal is not None and "already reverted" in refusal
    _clean(gm)


def test_approve_then_revert_forget_pin_unpin_and_add(gm: Store) -> None:
    gone = gm.put(AGENT, OLD)
    forgot = gm.approve_proposal(_hold(gm, "forget", OLD).id)
    assert gm.require(gone.id).superseded_by == RETIRED
    gm.revert(forgot.record.cycle_id)
    assert gm.require(gone.id).is_live

    pinned = gm.approve_proposal(_hold(gm, "pin", OLD).id)
    assert gm.require(gone.id).pinned
    gm.revert(pinned.record.cycle_id)
    assert not gm.require(gone.id).pinned

    gm.pin(gone.id)
    unpinned = gm.approve_proposal(_hold(gm, "unpin", OLD).id)
    assert not gm.require(gone.id).pinned
    gm.revert(unpinned.record.cycle_id)
    assert gm.require(gone.id).pinned

    added = gm.approve_proposal(_hold(gm, "add", "", NEW).id)
    fact = gm.require(added.record.summary_id)
    assert fact.text == NEW and fact.source == AGENT_SOURCE
    gm.revert(added.record.cycle_id)
    assert gm.require(fact.id).superseded_by == RETIRED
    assert gm.counters().reverts == 4
    assert gm.counters().cycles == 0  # a review is not a consolidation cycle
    _clean(gm)


def test_a_revert_that_cannot_apply_says_why(gm: Store) -> None:
    gm.put(AGENT, OLD)
    decision = gm.approve_proposal(_hold(gm, "update", OLD, NEW).id)
    gm.pin(decision.record.summary_id)
    refusal = gm.revert_refusal(decision.record.cycle_id)
    assert refusal is not None and "is pinned; unpin it first" in refusal
    with pytest.raises(Conflict, match="unpin it first"):
        gm.revert(decision.record.cycle_id)
    gm.unpin(decision.record.summary_id)
    gm.retire(decision.record.summary_id)
    refusal = gm.revert_refusal(decision.record.cycle_id)
    assert refusal is not None and "was retired since" in refusal

    gm.put(AGENT, "Another fact to reject.")
    rejected = gm.reject_proposal(_hold(gm, "forget", "Another fact to reject.").id, "no")
    refusal = gm.revert_refusal(rejected.record.cycle_id)
    assert refusal is not None and "nothing was applied (outcome rejected)" in refusal
    _clean(gm)


def test_a_change_that_can_never_apply_is_refused_when_held(gm: Store) -> None:
    with pytest.raises(NotFound, match="no live fact"):
        _hold(gm, "forget", "never written")
    gm.put(AGENT, OLD, pinned=True)
    with pytest.raises(Conflict, match="pinned"):
        _hold(gm, "forget", OLD)
    with pytest.raises(Conflict, match="unchanged"):
        _hold(gm, "update", OLD, OLD)
    with pytest.raises(InvalidInput):
        _hold(gm, "link", OLD, NEW)
    assert gm.proposals() == []


def test_hostile_decisions_are_refused_and_lose_nothing(gm: Store) -> None:
    gm.put(AGENT, OLD)
    held = _hold(gm, "update", OLD, NEW)
    first = gm.approve_proposal(held.id)
    with pytest.raises(Conflict, match="already decided: approved"):
        gm.approve_proposal(held.id)
    with pytest.raises(Conflict, match="already decided"):
        gm.reject_proposal(held.id, "too late")

    other = _hold(gm, "forget", NEW)
    gm.reject_proposal(other.id, "keep it")
    with pytest.raises(Conflict, match="already decided: rejected"):
        gm.approve_proposal(other.id)
    with pytest.raises(NotFound, match="no proposal with id"):
        gm.approve_proposal("01JC0000000000000000000001")
    for bad in ("not-an-id", "", "x" * 100, "../../etc"):
        with pytest.raises(InvalidInput, match="not a proposal id"):
            gm.approve_proposal(bad)
        with pytest.raises(InvalidInput, match="not a proposal id"):
            gm.require_proposal(bad)
    assert gm.find_proposal("not-an-id") is None
    assert gm.require(first.record.summary_id).is_live
    _clean(gm)


def test_a_reason_with_control_characters_is_refused_and_markup_kept(gm: Store) -> None:
    gm.put(AGENT, OLD)
    held = _hold(gm, "forget", OLD)
    for bad in ("evil\x1b[31m red", "two\nlines", "bidi \u202e txet"):
        with pytest.raises(InvalidInput, match="control character"):
            gm.reject_proposal(held.id, bad)
    with pytest.raises(InvalidInput, match="limit is 1000"):
        gm.reject_proposal(held.id, "x" * 1001)
    assert gm.require_proposal(held.id).pending
    assert gm.pending_count() == 1
    markup = "[bold red]no[/] [link=http://x]this[/link]"
    decision = gm.reject_proposal(held.id, markup)
    assert decision.proposal.reason == markup == decision.record.reason
    assert gm.list_facts(AGENT)[0].text == OLD


def test_listing_filters_by_agent_and_status_newest_first(gm: Store) -> None:
    gm.put(AGENT, OLD)
    gm.put("agent-b", OLD)
    first = _hold(gm, "pin", OLD)
    second = _hold(gm, "forget", OLD)
    with provenance.writing_as(AGENT_SOURCE):
        third = gm.hold_change("agent-b", "forget", OLD, "")
    gm.reject_proposal(first.id)
    assert [p.id for p in gm.proposals()] == [third.id, second.id, first.id]
    assert [p.id for p in gm.proposals(AGENT, status="pending")] == [second.id]
    assert [p.id for p in gm.proposals(status="rejected")] == [first.id]
    assert gm.pending_count() == 2 == len(gm.proposals(status="pending"))
    assert gm.proposals("nobody") == []


def test_review_records_survive_export_and_import(gm: Store) -> None:
    gm.put(AGENT, OLD)
    decision = gm.approve_proposal(_hold(gm, "update", OLD, NEW).id)
    facts, records = gm.all_facts(), gm.records()
    with Store.open(gm.path.parent / "copy") as copy:
        copy.import_all(facts, records)
        assert copy.require_record(decision.record.cycle_id) == decision.record
        assert copy.counters() == gm.counters()
        _clean(copy)
        # Proposals stay in their store (export writes facts and the journal); the
        # record alone is enough to revert the approval.
        assert copy.proposals() == []
        copy.revert(decision.record.cycle_id)
        assert [f.text for f in copy.list_facts(AGENT)] == [OLD]
        _clean(copy)
