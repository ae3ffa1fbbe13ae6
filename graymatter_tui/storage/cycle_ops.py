"""Store operations of the consolidation cycle, as functions over one transaction:
decay, selection, apply, prune, revert and the journal.

Apply re-reads every fact it will consume and refuses a stale proposal, so a proposal
computed outside any transaction can never overwrite a change another process made in
the meantime.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import TypeVar

import msgspec

from graymatter_tui.core import clock, provenance
from graymatter_tui.core.confidence import lowest
from graymatter_tui.core.errors import Conflict, NotFound
from graymatter_tui.core.model import RETIRED, CycleRecord, Fact, FactState
from graymatter_tui.core.words import counted
from graymatter_tui.storage import lifespan_ops, review_ops
from graymatter_tui.storage.protocol import KeywordIndex
from graymatter_tui.storage.transaction import FLAG_PINNED, FLAG_TOMBSTONE, SEP, Transaction
from graymatter_tui.storage.values import (
    PRUNE_BELOW,
    ApplyOutcome,
    ApplyRequest,
    DecayOutcome,
    JournalDecay,
    PruneOutcome,
    Selection,
    TrialApply,
    WeightChange,
)

T = TypeVar("T")


def decay(
    tx: Transaction, agent: str, half_life_hours: float, journal: JournalDecay | None = None
) -> DecayOutcome:
    """Decay every unpinned fact of `agent` (tombstones too). Only the vitals rows are
    rewritten; in a read transaction (a dry run) nothing is, and the outcome says what
    would change. `journal` builds the cycle's record from the outcome, saved here."""
    now_ms = tx.now.timestamp() * 1000
    rate = math.log(2) / (half_life_hours * 3_600_000)
    prefix_len = len(agent.encode()) + 1
    exp = math.exp
    examined = changed = 0
    drops: list[tuple[float, bytes, float, float]] = []
    weight_sum = 0.0

    def weigh(key: bytes, weight: float, accessed: int, flags: int) -> float:
        nonlocal examined, changed, weight_sum
        examined += 1
        if not flags & FLAG_PINNED:
            # Per fact, 100k times a cycle: no builtin calls where a comparison does.
            elapsed = now_ms - accessed
            fresh = exp(-rate * elapsed) if elapsed > 0.0 else 1.0
            if fresh < weight:
                changed += 1
                drop = weight - fresh
                if len(drops) < 5:
                    heapq.heappush(drops, (drop, bytes(key), weight, fresh))
                elif drop > drops[0][0]:
                    heapq.heapreplace(drops, (drop, bytes(key), weight, fresh))
                weight = fresh
        if not flags & FLAG_TOMBSTONE:
            weight_sum += weight
        return weight

    tx.reweigh(agent, weigh, write=tx.write)
    if tx.write:
        tx.set_weight_sum(agent, weight_sum)
    largest = [
        WeightChange(key[prefix_len:].decode(), before, after)
        for _drop, key, before, after in sorted(drops, reverse=True)
    ]
    outcome = DecayOutcome(examined=examined, changed=changed, largest_drops=largest)
    if journal is not None and tx.write:
        save_record(tx, journal(outcome))
    return outcome


def weights(tx: Transaction, agent: str, state: FactState = "live") -> dict[str, float]:
    """Current weight of each fact of `agent` in `state`, from vitals (no JSON)."""
    prefix_len = len(agent.encode()) + 1
    want_tomb = {"live": (False,), "tombstones": (True,), "all": (False, True)}[state]
    return {
        key[prefix_len:].decode(): weight
        for key, weight, _accessed, flags in tx.iter_vitals(agent)
        if bool(flags & FLAG_TOMBSTONE) in want_tomb
    }


def selection(tx: Transaction, agent: str, half_life_hours: float, max_batch: int) -> Selection:
    """The live count, every live unpinned fact's (weight, id) from vitals alone, and
    the batch: the weakest half of them (weakest first, ties by id), at most
    `max_batch`. Weights are taken as decay would leave them now, so a dry run
    selects exactly what a real cycle would."""
    now_ms = tx.now.timestamp() * 1000
    rate = math.log(2) / (half_life_hours * 3_600_000)
    prefix_len = len(agent.encode()) + 1
    live = 0
    out: list[tuple[float, str]] = []
    exp = math.exp
    for key, weight, accessed, flags in tx.iter_vitals(agent):
        if flags & FLAG_TOMBSTONE:
            continue
        live += 1
        if flags & FLAG_PINNED:
            continue
        elapsed = now_ms - accessed
        fresh = exp(-rate * elapsed) if elapsed > 0.0 else 1.0
        out.append((weight if weight <= fresh else fresh, key[prefix_len:].decode()))
    size = min(len(out) // 2, max_batch)
    batch = [(weight, tx.require(fact_id)) for weight, fact_id in heapq.nsmallest(size, out)]
    return Selection(live=live, candidates=out, batch=batch)


def apply_consolidation(
    tx: Transaction, request: ApplyRequest, record: CycleRecord
) -> ApplyOutcome:
    """Summary, tombstones, receipts, counters and journal record: all or nothing.
    `record` is left as it is; the outcome carries the record as committed.

    Refuses (returns applied=False, writes nothing) when any fact to consume is gone,
    already a tombstone, pinned, or no longer has the text the summariser saw.
    """
    current: list[Fact] = []
    for fact_id in request.consume:
        fact = tx.find(fact_id)
        if fact is None:
            return _refused(tx, f"stale: fact {fact_id} no longer exists")
        if fact.is_tombstone:
            return _refused(tx, f"stale: fact {fact_id} was superseded meanwhile")
        if fact.pinned:
            return _refused(tx, f"stale: fact {fact_id} was pinned meanwhile")
        if fact.text != request.snapshot.get(fact_id):
            return _refused(tx, f"stale: fact {fact_id} changed meanwhile")
        if fact.agent_id != request.agent_id:
            return _refused(tx, f"fact {fact_id} belongs to another agent")
        current.append(fact)
    stamp = clock.format_time(tx.now)
    summary = Fact(
        id=tx.new_id(),
        agent_id=request.agent_id,
        text=request.summary,
        created_at=stamp,
        accessed_at=stamp,
        cycle_id=request.cycle_id,
        # A summary is no surer than the least sure fact it consumes.
        confidence=lowest(f.confidence for f in current),
        source=provenance.CONSOLIDATION,
    )
    tx.write_fact(summary, None)
    for fact in current:
        tomb = msgspec.structs.replace(fact, superseded_by=summary.id, cycle_id=request.cycle_id)
        tx.write_fact(tomb, fact)
        lifespan_ops.stopped(
            tx, fact, "consumed", by=summary.id, record=request.cycle_id, kind="consolidate"
        )
    consumed = [f.id for f in current]
    tx.put_receipts(summary.id, consumed)
    tx.bump("consolidations")
    tx.bump("facts_consolidated", len(consumed))
    applied = msgspec.structs.replace(
        record, outcome="applied", reason="", summary_id=summary.id, consumed=consumed
    )
    save_record(tx, applied)
    tx.log(
        "consolidation",
        request.agent_id,
        text=request.summary,
        fact_id=summary.id,
        cycle_id=request.cycle_id,
        count=len(consumed),
    )
    return ApplyOutcome(True, summary=summary, consumed=consumed, record=applied)


def trial_apply(
    tx: Transaction, request: ApplyRequest, look: Callable[[KeywordIndex], T]
) -> TrialApply[T]:
    """`look` before and after the very apply `apply_consolidation` makes, in this write
    transaction, which is then abandoned: the second look is of the real post-apply
    state, with no second ranking code to drift from the first (ADR 0039)."""
    before = look(tx)
    record = CycleRecord(cycle_id=request.cycle_id, agent_id=request.agent_id)
    outcome = apply_consolidation(tx, request, record)
    if not outcome.applied:
        return tx.unchanged(TrialApply(False, before, reason=outcome.reason))
    assert outcome.summary is not None
    after = look(tx)
    return tx.abandon(
        TrialApply(True, before, after, consumed=outcome.consumed, summary_id=outcome.summary.id)
    )


def _refused(tx: Transaction, reason: str) -> ApplyOutcome:
    return tx.unchanged(ApplyOutcome(False, reason))


def prune(tx: Transaction, agent: str, record: CycleRecord) -> PruneOutcome:
    """Delete unpinned facts below 0.01 and copy each into the journal record, together.
    `record` is left as it is; the outcome carries the record as committed."""
    doomed_keys = [
        key
        for key, weight, _accessed, flags in tx.iter_vitals(agent)
        if not flags & FLAG_PINNED and weight < PRUNE_BELOW
    ]
    doomed = [tx.require(key.split(SEP, 1)[1].decode()) for key in doomed_keys]
    for fact in doomed:
        tx.delete_fact(fact)
        lifespan_ops.stopped(tx, fact, "pruned", record=record.cycle_id, kind="consolidate")
    saved = msgspec.structs.replace(record, pruned=[*record.pruned, *doomed])
    save_record(tx, saved)
    if doomed:
        text = f"pruned {counted(len(doomed), 'fact')} below weight {PRUNE_BELOW}"
        tx.log("prune", agent, text=text, cycle_id=record.cycle_id, count=len(doomed))
    return PruneOutcome(pruned=doomed, record=saved)


def revert_refusal(tx: Transaction, cycle_id: str) -> str | None:
    """Why `revert(cycle_id)` would be refused right now, or None: the same checks, so a
    UI can say so before asking for confirmation (the revert itself checks again)."""
    try:
        original = _applied_record(tx, cycle_id)
        if original.kind == "review":
            review_ops.revert_steps(tx, original)
        else:
            _revertible(tx, cycle_id)
    except (Conflict, NotFound) as exc:
        return str(exc)
    return None


def revert(tx: Transaction, cycle_id: str) -> CycleRecord:
    """Undo an applied cycle: consumed facts live again, summary retired. An approved
    review is undone likewise: what it made tombstones lives again, the fact it wrote is
    retired, a pin it changed goes back."""
    if _applied_record(tx, cycle_id).kind == "review":
        return _revert_review(tx, cycle_id)
    original, summary, restored = _revertible(tx, cycle_id)
    revert_id = tx.new_id()
    origins = _summary_origins(tx, {f.id for f in restored})
    for fact in restored:
        # A restored summary of an earlier cycle gets that cycle's id back.
        origin = origins.get(fact.id, "")
        tx.write_fact(msgspec.structs.replace(fact, superseded_by="", cycle_id=origin), fact)
        lifespan_ops.resumed(tx, fact, revert_id)
    tx.write_fact(msgspec.structs.replace(summary, superseded_by=RETIRED), summary)
    lifespan_ops.stopped(tx, summary, "retired", by=RETIRED, record=revert_id, kind="revert")
    tx.delete_receipts(summary.id)
    return _record_revert(
        tx,
        revert_id,
        original,
        reason=f"revert of cycle {cycle_id}",
        restored=[f.id for f in restored],
        retired=summary.id,
        said=f"revert of cycle {cycle_id}: {len(restored)} restored, summary retired",
        count=len(restored),
    )


def _revert_review(tx: Transaction, cycle_id: str) -> CycleRecord:
    original = _applied_record(tx, cycle_id)
    revert_id = tx.new_id()
    restored = review_ops.undo(tx, review_ops.revert_steps(tx, original), revert_id)
    return _record_revert(
        tx,
        revert_id,
        original,
        reason=f"revert of review {cycle_id} ({original.action} {original.proposal_id})",
        restored=restored,
        retired=original.summary_id,
        said=f"revert of review {cycle_id}: {original.action} undone",
        count=max(len(original.batch), 1),
    )


def _record_revert(
    tx: Transaction,
    revert_id: str,
    original: CycleRecord,
    *,
    reason: str,
    restored: list[str],
    retired: str,
    said: str,
    count: int,
) -> CycleRecord:
    """The revert's journal record, the original marked reverted, the counter and the
    activity entry: the same for a cycle and a review."""
    stamp = clock.format_time(tx.now)
    reverted = CycleRecord(
        cycle_id=revert_id,
        kind="revert",
        agent_id=original.agent_id,
        outcome="applied",
        reason=reason,
        started_at=stamp,
        finished_at=stamp,
        reverted_cycle_id=original.cycle_id,
        restored=restored,
        retired_summary_id=retired,
    )
    tx.put_record(msgspec.structs.replace(original, reverted_by=reverted.cycle_id))
    save_record(tx, reverted)
    tx.bump("reverts")
    tx.log(
        "revert",
        original.agent_id,
        text=said,
        fact_id=retired,
        cycle_id=reverted.cycle_id,
        count=count,
    )
    return reverted


def _applied_record(tx: Transaction, cycle_id: str) -> CycleRecord:
    """The record of an applied, not yet reverted cycle or review; raises Conflict or
    NotFound saying why it cannot be reverted."""
    original = tx.require_record(cycle_id)
    what = "review" if original.kind == "review" else "cycle"
    if original.kind == "revert":
        raise Conflict(f"record {cycle_id} is itself a revert; revert records cannot be reverted")
    if original.kind == "probe_run":
        raise Conflict(
            f"record {cycle_id} is a probe run: it changed no fact, so there is nothing to revert"
        )
    if original.outcome != "applied":
        raise Conflict(
            f"{what} {cycle_id} cannot be reverted: nothing was applied "
            f"(outcome {original.outcome or 'unknown'})"
        )
    if original.reverted_by:
        raise Conflict(f"{what} {cycle_id} was already reverted by {original.reverted_by}")
    return original


def _revertible(tx: Transaction, cycle_id: str) -> tuple[CycleRecord, Fact, list[Fact]]:
    """The record, its summary and the facts a revert would restore; raises Conflict or
    NotFound saying why the cycle cannot be reverted."""
    original = tx.require_record(cycle_id)
    if original.kind == "revert":
        raise Conflict(f"record {cycle_id} is itself a revert; revert records cannot be reverted")
    if original.kind == "probe_run":
        raise Conflict(
            f"record {cycle_id} is a probe run: it changed no fact, so there is nothing to revert"
        )
    if original.outcome != "applied":
        raise Conflict(
            f"cycle {cycle_id} cannot be reverted: nothing was applied "
            f"(outcome {original.outcome or 'unknown'})"
        )
    if original.reverted_by:
        raise Conflict(f"cycle {cycle_id} was already reverted by {original.reverted_by}")
    summary = tx.find(original.summary_id)
    if summary is None:
        raise Conflict(
            f"cycle {cycle_id} cannot be reverted: its summary {original.summary_id} "
            "has been pruned"
        )
    if summary.pinned:
        raise Conflict(
            f"cycle {cycle_id} cannot be reverted: its summary {summary.id} is pinned; "
            "unpin it first"
        )
    if summary.is_tombstone:
        how = "retired" if summary.is_retired else f"consumed by {summary.superseded_by}"
        raise Conflict(f"cycle {cycle_id} cannot be reverted: its summary was {how} since")
    restored: list[Fact] = []
    for fact_id in original.consumed:
        fact = tx.find(fact_id)
        if fact is None:
            raise Conflict(
                f"cycle {cycle_id} cannot be reverted: consumed fact {fact_id} is gone (pruned)"
            )
        if fact.superseded_by != summary.id:
            raise Conflict(
                f"cycle {cycle_id} cannot be reverted: fact {fact_id} no longer points "
                "at the cycle's summary"
            )
        restored.append(fact)
    return original, summary, restored


def _summary_origins(tx: Transaction, fact_ids: set[str]) -> dict[str, str]:
    """For facts that are summaries, the cycle that wrote each (journal scan; reverts are
    rare and the journal holds one record per cycle)."""
    wanted = {i for i in fact_ids if tx.receipts(i)}
    if not wanted:
        return {}
    found: dict[str, str] = {}
    for record in tx.iter_records(newest_first=False):
        if record.summary_id in wanted and record.kind == "consolidate":
            found[record.summary_id] = record.cycle_id
    return found


def save_record(tx: Transaction, record: CycleRecord) -> None:
    """Write a journal record; a consolidation cycle's first save counts the cycle."""
    if record.kind == "consolidate" and tx.find_record(record.cycle_id) is None:
        tx.bump("cycles")
    tx.put_record(record)
