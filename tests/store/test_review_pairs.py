"""Duplicates and possible updates found on the write path, held as review items.

A fact written is compared with its agent's live facts in the same transaction: a
duplicate or a possible update becomes one item naming both facts and why, and nothing
else changes. Approving supersedes one fact with the other (a receipt and a journal
record of kind review, which reverts); rejecting keeps both, and the pair is never
raised again. An approval after either fact changed is discarded as stale. Both
backends (`any_store`).
"""

from __future__ import annotations

import itertools

import msgspec
import pytest

from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core import provenance
from graymatter_tui.core.conflicts import profile
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import RETIRED, Fact, ReviewProposal
from graymatter_tui.exchange import transfer
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.codec import decode_proposal
from tests.support.backends import AnyStore

AGENT = "ops"
MARCH_3 = "Deploy freeze for billing-api starts on 2026-03-03."
MARCH_10 = "Deploy freeze for billing-api starts on 2026-03-10."
AGAIN_10 = "The deploy freeze for billing-api starts on 2026-03-10."
OTHER = "The staging database listens on port 5432."


def _clean(store: AnyStore) -> None:
    assert [v for check in check_invariants(store) for v in check.violations] == []


def _pending(store: AnyStore) -> list[ReviewProposal]:
    return store.proposals(status="pending")


def _live_texts(store: AnyStore) -> list[str]:
    return sorted(f.text for f in store.list_facts(AGENT))


def test_a_possible_update_is_held_naming_both_facts_and_changes_nothing(
    any_store: AnyStore,
) -> None:
    old = any_store.put(AGENT, MARCH_3)
    any_store.put(AGENT, OTHER)
    with provenance.writing_as("mcp:claude-code"):
        written = any_store.remember(AGENT, MARCH_10)
    [item] = written.held
    assert item.action == "possible_update" and item.pending
    assert (item.fact_id, item.held_id) == (written.fact.id, old.id)
    assert (item.target, item.text) == (MARCH_3, MARCH_10)
    assert [m.id for m in item.matches] == [old.id, written.fact.id]
    assert item.why == "details differ: new 2026-03-10; held 2026-03-03"
    assert item.source == "mcp:claude-code"
    assert _pending(any_store) == [item] and any_store.pending_count() == 1
    assert _live_texts(any_store) == sorted([MARCH_3, MARCH_10, OTHER])
    assert any_store.activity(limit=1)[0].action == "review"
    _clean(any_store)


def test_a_text_holding_nul_around_numbers_is_checked_like_any_other(any_store: AnyStore) -> None:
    # The check marks a URL it keeps whole with NUL and a number; a text holding that
    # itself once crashed `remember` (IndexError) as soon as it had a candidate.
    text = "Deploy notes for billing-api at https://ops.example.com/notes \x000\x00 and \x001\x00."
    held = any_store.put(AGENT, text)
    written = any_store.remember(AGENT, text + " Confirmed.")
    [item] = written.held
    assert (item.action, item.held_id) == ("duplicate", held.id)
    assert profile(text).details["https ops example com notes"] == "https://ops.example.com/notes"


def test_a_duplicate_is_held_and_an_unrelated_fact_holds_nothing(any_store: AnyStore) -> None:
    held = any_store.put(AGENT, MARCH_10)
    assert any_store.remember(AGENT, OTHER).held == []
    written = any_store.remember(AGENT, AGAIN_10)
    [item] = written.held
    assert (item.action, item.held_id, item.fact_id) == ("duplicate", held.id, written.fact.id)
    assert item.why == "same meaning; every key detail is already held"
    assert any_store.pending_count() == 1


def test_approving_a_possible_update_supersedes_the_older_fact_and_reverts(
    any_store: AnyStore,
) -> None:
    old = any_store.put(AGENT, MARCH_3, pinned=True)
    new = any_store.remember(AGENT, MARCH_10)
    [item] = new.held
    with provenance.writing_as(provenance.CLI):
        decision = any_store.approve_proposal(item.id)
    assert decision.applied and decision.proposal.status == "approved"
    record = decision.record
    assert (record.kind, record.action, record.outcome) == ("review", "possible_update", "applied")
    assert record.consumed == [old.id] and record.summary_id == ""
    tomb = any_store.require(old.id)
    assert tomb.superseded_by == new.fact.id and tomb.cycle_id == record.cycle_id
    kept = any_store.require(new.fact.id)
    assert kept.is_live and kept.pinned  # the pin moved to the fact kept
    assert any_store.show(old.id).replaced_by == kept
    assert any_store.pending_count() == 0
    _clean(any_store)
    any_store.revert(record.cycle_id)
    assert any_store.require(old.id).is_live and any_store.require(old.id).pinned
    assert any_store.require(new.fact.id).is_live and not any_store.require(new.fact.id).pinned
    _clean(any_store)


def test_approving_a_duplicate_supersedes_the_newer_copy(any_store: AnyStore) -> None:
    held = any_store.put(AGENT, MARCH_10)
    copy = any_store.remember(AGENT, AGAIN_10)
    decision = any_store.approve_proposal(copy.held[0].id)
    assert decision.applied and decision.record.consumed == [copy.fact.id]
    assert any_store.require(copy.fact.id).superseded_by == held.id
    assert _live_texts(any_store) == [MARCH_10]
    _clean(any_store)


def test_rejecting_keeps_both_and_the_pair_is_never_raised_again(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, MARCH_3)
    [item] = any_store.remember(AGENT, MARCH_10).held
    decision = any_store.reject_proposal(item.id, "two freezes, both real")
    assert not decision.applied and decision.proposal.status == "rejected"
    assert decision.record.reason == "two freezes, both real"
    assert _live_texts(any_store) == sorted([MARCH_3, MARCH_10])
    # The same text again is a duplicate of the copy held; it is not asked about the
    # held fact again (the pair's two texts were decided).
    again = any_store.remember(AGENT, MARCH_10)
    assert [(i.action, i.held_id) for i in again.held] == [("duplicate", item.fact_id)]
    assert all(i.held_id != old.id for i in again.held)
    assert any_store.proposals(status="rejected") == [decision.proposal]


def test_a_fact_both_duplicate_and_update_gives_one_item_each_without_a_loop(
    any_store: AnyStore,
) -> None:
    march_3 = any_store.put(AGENT, MARCH_3)
    [first] = any_store.remember(AGENT, MARCH_10).held
    march_10 = first.fact_id
    both = any_store.remember(AGENT, AGAIN_10)
    kinds = {i.action: i for i in both.held}
    assert sorted(kinds) == ["duplicate", "possible_update"]
    assert kinds["duplicate"].held_id == march_10
    assert kinds["possible_update"].held_id == march_3.id
    assert any_store.pending_count() == 3
    # The duplicate approved, the copy is a tombstone: its possible update is stale.
    assert any_store.approve_proposal(kinds["duplicate"].id).applied
    stale = any_store.approve_proposal(kinds["possible_update"].id)
    assert not stale.applied and stale.proposal.status == "discarded"
    assert stale.proposal.reason == (
        f"stale: fact {both.fact.id} was superseded by {march_10} meanwhile"
    )
    assert stale.record.outcome == "discarded"
    # The first pair still applies: March 10 supersedes March 3, and every chain ends.
    assert any_store.approve_proposal(first.id).applied
    assert _live_texts(any_store) == [MARCH_10]
    assert any_store.pending_count() == 0
    _clean(any_store)


@pytest.mark.parametrize("change", ["forget", "pin"])
def test_approving_after_a_fact_changed_is_discarded_as_stale(
    any_store: AnyStore, change: str
) -> None:
    old = any_store.put(AGENT, MARCH_3)
    [item] = any_store.remember(AGENT, MARCH_10).held
    if change == "forget":
        any_store.retire(old.id)
        why = f"stale: fact {old.id} was forgotten meanwhile"
    else:
        any_store.pin(item.fact_id)
        why = f"stale: fact {item.fact_id} was pinned meanwhile"
    decision = any_store.approve_proposal(item.id)
    assert not decision.applied and decision.proposal.reason == why
    assert any_store.require(item.fact_id).is_live


def test_bulk_writes_and_imports_hold_their_pairs(any_store: AnyStore) -> None:
    any_store.put(AGENT, MARCH_3)
    written = any_store.put_many([NewFact(agent_id=AGENT, text=MARCH_10)], check_pairs=True)
    [item] = _pending(any_store)
    assert item.fact_id == written[0].id
    assert any_store.put_many([NewFact(agent_id=AGENT, text=AGAIN_10)])  # unchecked
    assert any_store.pending_count() == 1
    line = (
        msgspec.json.encode(
            Fact(
                id="01KJ0000000000000000000001",
                agent_id=AGENT,
                text="Deploy freeze for billing-api starts on 2026-03-17.",
                created_at="2026-11-30T12:00:00Z",
                accessed_at="2026-11-30T12:00:00Z",
            )
        )
        + b"\n"
    )
    result = transfer.import_file(any_store, line)
    assert result.facts_added == 1 and result.review_held == 1
    assert {p.fact_id for p in _pending(any_store)} == {written[0].id, "01KJ0000000000000000000001"}
    # A fact our export carries was written (and checked) where it came from: no pair.
    exported = msgspec.json.encode(
        Fact(
            id="01KJ0000000000000000000002",
            agent_id=AGENT,
            text="Deploy freeze for billing-api starts on 2026-03-24.",
            created_at="2026-11-30T12:00:00Z",
            accessed_at="2026-11-30T12:00:00Z",
            source="cli",
        )
    )
    copied = transfer.import_file(any_store, exported + b"\n")
    assert copied.facts_added == 1 and copied.review_held == 0


def test_a_pair_early_in_a_long_bulk_write_is_held(any_store: AnyStore) -> None:
    """Each fact of a batch is compared with those written before it, however many later
    facts of the batch share its words (the newest postings of every subject term)."""
    fillers = [
        f"Deploy freeze for billing-api starts after the {''.join(p)}ox review."
        for p in itertools.product("klmnpqrs", repeat=3)
    ][:300]
    written = any_store.put_many(
        [NewFact(agent_id=AGENT, text=t) for t in (MARCH_3, MARCH_10, *fillers)],
        check_pairs=True,
    )
    held = {(p.fact_id, p.held_id) for p in _pending(any_store) if p.action == "possible_update"}
    assert (written[1].id, written[0].id) in held


def test_an_agent_cannot_hold_a_pair_itself(any_store: AnyStore) -> None:
    any_store.put(AGENT, MARCH_3)
    for action in ("duplicate", "possible_update"):
        with pytest.raises(InvalidInput, match="cannot be held"):
            any_store.hold_change(AGENT, action, MARCH_3, MARCH_10)


def test_a_proposal_stored_before_pair_items_still_decodes() -> None:
    raw = (
        b'{"id":"01KJ0000000000000000000009","agent_id":"ops","action":"forget",'
        b'"target":"x","matches":[{"id":"01KJ0000000000000000000001","text":"x"}]}'
    )
    proposal = decode_proposal(raw)
    assert (proposal.fact_id, proposal.held_id, proposal.why) == ("", "", "")
    assert not proposal.is_pair and proposal.target == "x"


def test_a_forgotten_fact_is_not_compared(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, MARCH_3)
    any_store.retire(old.id)
    assert any_store.require(old.id).superseded_by == RETIRED
    assert any_store.remember(AGENT, MARCH_10).held == []
