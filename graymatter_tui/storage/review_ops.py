"""The review queue, as functions over one transaction: an agent's change is held as a
proposal, then a person approves it (applied through the same fact_ops as the direct
path, after a staleness check) or rejects it. Every decision is a journal record of kind
"review", and an applied one can be reverted like a cycle (ADR 0027).

The proposal keeps the live facts it matched when it was held (ids, texts, pins): that
fingerprint is what the person saw, so an approval applies only if the store still
matches it, and is otherwise discarded with a reason naming what changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.confidence import Confidence, known
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.model import (
    HELD_ACTIONS,
    PAIR_ACTIONS,
    RETIRED,
    CycleRecord,
    Fact,
    HeldAction,
    HeldMatch,
    ReviewProposal,
    ReviewStatus,
)
from graymatter_tui.core.textsafe import canonical_id
from graymatter_tui.storage import fact_ops, lifespan_ops
from graymatter_tui.storage.codec import decode_proposal, encode
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import ReviewDecision

MAX_REASON = 1000
# meta key: proposals still pending, kept with every hold and decision, so the TUI's badge
# polls one number instead of decoding every proposal ever held.
PENDING_KEY = "review_pending"
_REASON_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def validate_proposal_id(value: str) -> str:
    """A proposal id given in any case, in its canonical (upper-case) form."""
    canonical = canonical_id(value)
    if canonical is None:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise InvalidInput(f"not a proposal id: {shown!r} (expected a 26-character ULID)")
    return canonical


def validate_reason(reason: str) -> str:
    """A rejection's reason: one line of at most 1000 characters, no control or bidi
    characters (it is shown in terminals and journal listings). May be empty."""
    bad = _REASON_FORBIDDEN.search(reason)
    if bad:
        raise InvalidInput(
            f"reason contains a control character (U+{ord(bad.group()):04X}) "
            f"at position {bad.start()}"
        )
    if len(reason) > MAX_REASON:
        raise InvalidInput(f"reason is {len(reason)} characters; the limit is {MAX_REASON}")
    return reason.strip()


# ---- holding --------------------------------------------------------------------------
def hold(
    tx: Transaction,
    agent: str,
    action: str,
    target: str,
    text: str,
    confidence: Confidence | None = None,
) -> ReviewProposal:
    """Hold `action` for review, refused now (as the direct path would refuse it) when it
    could never apply: no live fact has the target text, an update changes nothing, or a
    forget names a pinned fact."""
    if action not in HELD_ACTIONS or action in PAIR_ACTIONS:
        asked = [a for a in HELD_ACTIONS if a not in PAIR_ACTIONS]
        raise InvalidInput(f"{action!r} cannot be held; one of {', '.join(asked)}")
    matches: list[Fact] = []
    if action != "add":
        matches = fact_ops.require_matches(tx, agent, target)
    if action == "update" and target == text:
        raise Conflict("text is unchanged; nothing updated")
    if action == "forget":
        pinned = [f.id for f in matches if f.pinned]
        if pinned:
            raise Conflict(f"fact {pinned[0]} is pinned; unpin it before forgetting it")
    proposal = ReviewProposal(
        id=_new_proposal_ids(tx, 1)[0],
        agent_id=agent,
        action=action,  # narrowed by the check against HELD_ACTIONS above
        target="" if action == "add" else target,
        text=text if action in ("add", "update") else "",
        source=tx.source,
        created_at=clock.format_time(tx.now),
        matches=[_fingerprint(f) for f in matches],
        confidence=confidence if action in ("add", "update") else None,
    )
    tx.put_proposal(proposal.id, encode(proposal))
    tx.bump(PENDING_KEY)
    tx.log(
        "review",
        agent,
        text=f"held {action} for review as {proposal.id}: {proposal.text or proposal.target}",
        count=max(len(matches), 1),
    )
    return proposal


def hold_pair(
    tx: Transaction, kind: str, new: Fact, held: Fact, why: str, *, log: bool = True
) -> ReviewProposal:
    """Hold the pair (`new`, just written; `held`, a live fact of the same agent) as a
    `duplicate` or `possible_update` item for a person. Nothing changes until approved.
    `log` False: the caller writes one activity entry for many (a bulk write)."""
    (proposal,) = hold_pairs(tx, [(kind, new, held, why)])
    if log:
        shown = kind.replace("_", " ")
        tx.log(
            "review",
            new.agent_id,
            text=f"held {shown} of {held.id} for review as {proposal.id}: {new.text}",
            fact_id=new.id,
            count=2,
        )
    return proposal


def hold_pairs(
    tx: Transaction, pairs: Sequence[tuple[str, Fact, Fact, str]]
) -> list[ReviewProposal]:
    """`hold_pair` of each (kind, new, held, why), with no activity entry (the caller
    writes one for all): their ids checked and the pending count raised once, not once
    an item (on a server, each of those is a round trip)."""
    checked = [(_pair_action(kind), new, held, why) for kind, new, held, why in pairs]
    ids = _new_proposal_ids(tx, len(checked))
    held_items = []
    for proposal_id, (kind, new, held, why) in zip(ids, checked, strict=True):
        proposal = ReviewProposal(
            id=proposal_id,
            agent_id=new.agent_id,
            action=kind,
            target=held.text,
            text=new.text,
            source=new.source or tx.source,
            created_at=clock.format_time(tx.now),
            matches=[_fingerprint(held), _fingerprint(new)],
            fact_id=new.id,
            held_id=held.id,
            why=why,
        )
        held_items.append(proposal)
    if held_items:
        tx.put_proposals([(item.id, encode(item)) for item in held_items])
        tx.bump(PENDING_KEY, len(held_items))
    return held_items


def _pair_action(kind: str) -> HeldAction:
    if kind not in PAIR_ACTIONS:
        raise InvalidInput(f"{kind!r} is not a pair; one of {', '.join(PAIR_ACTIONS)}")
    return kind


def _fingerprint(fact: Fact) -> HeldMatch:
    return HeldMatch(id=fact.id, text=fact.text, pinned=fact.pinned, cycle_id=fact.cycle_id)


def _new_proposal_ids(tx: Transaction, count: int) -> list[str]:
    """`count` new ids held by no fact, journal record or review item, asked of the store
    together; minted in order, so a write run again gets the same ones."""
    ids: list[str] = []
    while len(ids) < count:
        minted = [tx.mint(tx.now) for _ in range(count - len(ids))]
        taken = tx.ids_in_use(minted) | tx.proposals_in_use(minted)
        ids += [i for i in minted if i not in taken and i not in ids]
    return ids


# ---- reading --------------------------------------------------------------------------
def find(tx: Transaction, proposal_id: str) -> ReviewProposal | None:
    raw = tx.proposal(proposal_id)
    return None if raw is None else decode_proposal(raw)


def require(tx: Transaction, proposal_id: str) -> ReviewProposal:
    proposal_id = validate_proposal_id(proposal_id)
    proposal = find(tx, proposal_id)
    if proposal is None:
        raise NotFound(f"no proposal with id {proposal_id}")
    return proposal


def listing(
    tx: Transaction, agent: str | None, status: ReviewStatus | None, limit: int | None
) -> list[ReviewProposal]:
    """Proposals newest first, of one agent and in one status when given."""
    out: list[ReviewProposal] = []
    for raw in tx.iter_proposals(newest_first=True):
        proposal = decode_proposal(raw)
        if (agent is None or proposal.agent_id == agent) and (
            status is None or proposal.status == status
        ):
            out.append(proposal)
            if limit is not None and len(out) >= limit:
                break
    return out


def _require_pending(tx: Transaction, proposal_id: str) -> ReviewProposal:
    proposal = require(tx, proposal_id)
    if not proposal.pending:
        by = f" by {proposal.decided_by}" if proposal.decided_by else ""
        raise Conflict(
            f"proposal {proposal_id} was already decided: {proposal.status}{by} "
            f"at {proposal.decided_at}"
        )
    return proposal


# ---- deciding -------------------------------------------------------------------------
def staleness(tx: Transaction, proposal: ReviewProposal) -> str | None:
    """What changed since the proposal was held, in words, or None when the live facts
    it would act on are still exactly those it matched then."""
    if proposal.action == "add":
        return None
    for held in proposal.matches:
        fact = tx.find(held.id)
        if fact is None:
            return f"stale: fact {held.id} no longer exists (pruned)"
        if fact.is_tombstone:
            how = "forgotten" if fact.is_retired else f"superseded by {fact.superseded_by}"
            return f"stale: fact {held.id} was {how} meanwhile"
        if fact.pinned != held.pinned:
            return f"stale: fact {held.id} was {'pinned' if fact.pinned else 'unpinned'} meanwhile"
    if proposal.is_pair:  # the pair is named by ids: another fact of the same text is not
        return None  # a reason to hold back
    held_ids = {m.id for m in proposal.matches}
    added = [f.id for f in fact_ops.live_matches(tx, proposal.agent_id, proposal.target)]
    fresh = [i for i in added if i not in held_ids]
    if fresh:
        return f"stale: fact {fresh[0]} with the same text was written meanwhile"
    return None


def approve(tx: Transaction, proposal_id: str) -> ReviewDecision:
    """Apply a pending proposal in this transaction, or discard it as stale. The facts it
    writes carry the agent's source (the agent wrote them); the decision records the
    approver (this transaction's source)."""
    proposal = _require_pending(tx, proposal_id)
    approver = tx.source
    stamp = clock.format_time(tx.now)
    record_id = tx.new_id()
    stale = staleness(tx, proposal)
    record = _record(proposal, record_id, approver, stamp)
    if stale is not None:
        record = msgspec.structs.replace(record, outcome="discarded", reason=stale)
        decided = _decided(proposal, "discarded", stale, approver, stamp, record_id)
        return _finish(tx, decided, record, False, f"discarded {proposal.id}: {stale}")
    tx.source = proposal.source or approver
    try:
        consumed, written = _apply(tx, proposal, record_id)
    finally:
        tx.source = approver
    record = msgspec.structs.replace(
        record, outcome="applied", consumed=consumed, summary_id=written
    )
    decided = _decided(proposal, "approved", "", approver, stamp, record_id)
    note = f"approved {proposal.action} {proposal.id}: {proposal.text or proposal.target}"
    return _finish(tx, decided, record, True, note, fact_id=written)


def reject(tx: Transaction, proposal_id: str, reason: str) -> ReviewDecision:
    why = validate_reason(reason)
    proposal = _require_pending(tx, proposal_id)
    approver = tx.source
    stamp = clock.format_time(tx.now)
    record_id = tx.new_id()
    record = msgspec.structs.replace(
        _record(proposal, record_id, approver, stamp), outcome="rejected", reason=why
    )
    decided = _decided(proposal, "rejected", why, approver, stamp, record_id)
    note = f"rejected {proposal.action} {proposal.id}" + (f": {why}" if why else "")
    return _finish(tx, decided, record, False, note)


def _apply(tx: Transaction, proposal: ReviewProposal, record_id: str) -> tuple[list[str], str]:
    """(ids made tombstones, id of the fact written or "")."""
    agent, target = proposal.agent_id, proposal.target
    if proposal.is_pair:
        return [_merge_pair(tx, proposal, record_id)], ""
    confidence = known(proposal.confidence)
    if proposal.action == "add":
        written = fact_ops.put(
            tx, agent, proposal.text, False, cycle_id=record_id, confidence=confidence
        )
        return [], written.id
    if proposal.action == "update":
        replacement, tombs = fact_ops.supersede_text(
            tx, agent, target, proposal.text, cycle_id=record_id, confidence=confidence
        )
        return [t.id for t in tombs], replacement.id
    if proposal.action == "forget":
        return [t.id for t in fact_ops.retire_text(tx, agent, target, cycle_id=record_id)], ""
    fact_ops.pin_text(tx, agent, target, proposal.action == "pin")
    return [], ""


def _merge_pair(tx: Transaction, proposal: ReviewProposal, record_id: str) -> str:
    """The dropped fact of an approved pair becomes a tombstone whose receipt names the
    kept one (a pin moves to the kept fact); returns the dropped fact's id."""
    kept, dropped = tx.require(proposal.kept_id), tx.require(proposal.dropped_id)
    if dropped.pinned and not kept.pinned:
        moved = msgspec.structs.replace(kept, pinned=True, pinned_at=clock.format_time(tx.now))
        tx.write_fact(moved, kept)
    tomb = msgspec.structs.replace(
        dropped, superseded_by=kept.id, pinned=False, pinned_at=None, cycle_id=record_id
    )
    tx.write_fact(tomb, dropped)
    lifespan_ops.stopped(tx, dropped, "revised", by=kept.id, record=record_id, kind="review")
    tx.log("update", proposal.agent_id, text=kept.text, fact_id=kept.id)
    return dropped.id


def _record(proposal: ReviewProposal, record_id: str, approver: str, stamp: str) -> CycleRecord:
    return CycleRecord(
        cycle_id=record_id,
        kind="review",
        agent_id=proposal.agent_id,
        batch=[m.id for m in proposal.matches],
        summary_text=proposal.text,
        started_at=proposal.created_at,
        finished_at=stamp,
        proposal_id=proposal.id,
        action=proposal.action,
        target=proposal.target,
        asked_by=proposal.source,
        decided_by=approver,
    )


def _decided(
    proposal: ReviewProposal,
    status: ReviewStatus,
    reason: str,
    approver: str,
    stamp: str,
    record_id: str,
) -> ReviewProposal:
    return msgspec.structs.replace(
        proposal,
        status=status,
        reason=reason,
        decided_at=stamp,
        decided_by=approver,
        record_id=record_id,
    )


def _finish(
    tx: Transaction,
    decided: ReviewProposal,
    record: CycleRecord,
    applied: bool,
    note: str,
    *,
    fact_id: str = "",
) -> ReviewDecision:
    tx.put_proposal(decided.id, encode(decided))
    tx.bump(PENDING_KEY, -1)
    tx.put_record(record)
    tx.log(
        "review",
        decided.agent_id,
        text=note,
        fact_id=fact_id,
        cycle_id=record.cycle_id,
        count=max(len(record.batch), 1),
    )
    return ReviewDecision(proposal=decided, record=record, applied=applied)


# ---- reverting an approval --------------------------------------------------------------
def revert_steps(tx: Transaction, record: CycleRecord) -> list[tuple[Fact, Fact]]:
    """(fact as it is, fact as the revert leaves it) for an applied review record; raises
    Conflict saying why it cannot be reverted. Checked by `cycle_ops._revertible`."""
    cycle = record.cycle_id
    proposal = find(tx, record.proposal_id) if record.proposal_id else None
    held = {m.id: m for m in proposal.matches} if proposal is not None else {}
    stamp = clock.format_time(tx.now)
    steps: list[tuple[Fact, Fact]] = []

    def live_fact(fact_id: str, what: str) -> Fact:
        fact = tx.find(fact_id)
        if fact is None:
            raise Conflict(f"review {cycle} cannot be reverted: {what} {fact_id} is gone (pruned)")
        if fact.is_tombstone:
            how = "retired" if fact.is_retired else f"consumed by {fact.superseded_by}"
            raise Conflict(f"review {cycle} cannot be reverted: {what} {fact_id} was {how} since")
        return fact

    if record.summary_id:  # update or add: the fact it wrote is retired
        written = live_fact(record.summary_id, "the fact it wrote,")
        pins_back = any(held.get(i) and held[i].pinned for i in record.consumed)
        if written.pinned and not pins_back:
            raise Conflict(
                f"review {cycle} cannot be reverted: the fact it wrote, {written.id}, is "
                "pinned; unpin it first"
            )
        retired = msgspec.structs.replace(
            written, superseded_by=RETIRED, pinned=False, pinned_at=None
        )
        steps.append((written, retired))
    kept = proposal.kept_id if proposal is not None and proposal.is_pair else ""
    if kept:  # an approved pair: a pin it moved to the kept fact goes back
        keeper = live_fact(kept, "the fact it kept,")
        moved = held.get(kept) is not None and not held[kept].pinned and keeper.pinned
        if moved and any(held.get(i) and held[i].pinned for i in record.consumed):
            steps.append((keeper, msgspec.structs.replace(keeper, pinned=False, pinned_at=None)))
    for fact_id in record.consumed:  # update or forget: the tombstones live again
        fact = tx.find(fact_id)
        points_at = kept or record.summary_id or RETIRED
        if fact is None:
            raise Conflict(f"review {cycle} cannot be reverted: fact {fact_id} is gone (pruned)")
        if fact.superseded_by != points_at or fact.cycle_id != cycle:
            raise Conflict(f"review {cycle} cannot be reverted: fact {fact_id} was changed since")
        match = held.get(fact_id)
        pinned = match is not None and match.pinned
        restored = msgspec.structs.replace(
            fact,
            superseded_by="",
            cycle_id=match.cycle_id if match is not None else "",
            pinned=pinned,
            pinned_at=stamp if pinned else None,
        )
        steps.append((fact, restored))
    if record.action in ("pin", "unpin"):
        was_pinned = record.action == "unpin"
        for fact_id in record.batch:
            match = held.get(fact_id)
            if match is not None and match.pinned != was_pinned:
                continue  # already so when held: the approval did not change it
            fact = live_fact(fact_id, "fact")
            if fact.pinned != was_pinned:
                flipped = msgspec.structs.replace(
                    fact, pinned=was_pinned, pinned_at=stamp if was_pinned else None
                )
                steps.append((fact, flipped))
    return steps


def undo(tx: Transaction, steps: list[tuple[Fact, Fact]], revert_id: str) -> list[str]:
    """Write the revert's steps (`revert_id`: its journal record); returns the ids made
    live again."""
    restored = []
    for before, after in steps:
        tx.write_fact(after, before)
        if before.is_tombstone and after.is_live:
            lifespan_ops.resumed(tx, before, revert_id)
            restored.append(after.id)
        elif before.is_live and after.is_tombstone:
            lifespan_ops.stopped(tx, before, "retired", by=RETIRED, record=revert_id, kind="revert")
    return restored
