"""Store operations of the consolidation cycle: decay, apply, prune, revert, journal.

Each is one write transaction. Apply re-reads every fact it will consume and refuses a
stale proposal, so a proposal computed outside any transaction can never overwrite a
change another process made in the meantime.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import msgspec

from graymatter_tui import clock
from graymatter_tui.errors import Conflict, NotFound
from graymatter_tui.model import RETIRED, CycleRecord, Fact
from graymatter_tui.store.codec import decode_fact, encode
from graymatter_tui.store.ids import new_id
from graymatter_tui.store.tx import SEP, Tx

T = TypeVar("T")

PRUNE_BELOW = 0.01


@dataclass(frozen=True)
class WeightChange:
    id: str
    before: float
    after: float


@dataclass(frozen=True)
class DecayOutcome:
    examined: int
    changed: int
    largest_drops: list[WeightChange]


@dataclass(frozen=True)
class ApplyRequest:
    """What review decided, plus the batch snapshot the decision was made on."""

    cycle_id: str
    agent_id: str
    summary: str
    consume: list[str]
    snapshot: dict[str, str]  # id -> text as shown to the summariser


@dataclass
class ApplyOutcome:
    applied: bool
    reason: str = ""
    summary: Fact | None = None
    consumed: list[str] = field(default_factory=list)


def decay_weight(weight: float, hours_stale: float, half_life_hours: float) -> float:
    """`min(weight, 2^(-hours/half_life))`: recomputed from staleness, so idempotent."""
    fresh = math.exp(-math.log(2) * max(hours_stale, 0.0) / half_life_hours)
    return min(weight, fresh)


class CycleOps:
    if TYPE_CHECKING:

        def write(self, fn: Callable[[Tx], T]) -> T: ...

        def read(self, fn: Callable[[Tx], T]) -> T: ...

    def decay(self, agent: str, half_life_hours: float, *, dry_run: bool = False) -> DecayOutcome:
        """Decay every unpinned fact of `agent` (tombstones too) in one transaction.
        With `dry_run`, report what would change and write nothing."""

        def run(tx: Tx) -> DecayOutcome:
            now = tx.now
            prefix = agent.encode() + SEP
            cursor = tx.txn.cursor(db=tx.dbs.facts)
            examined = 0
            drops: list[WeightChange] = []
            weight_sum = 0.0
            parse = clock.parse_time
            found = cursor.set_range(prefix)
            while found:
                key = cursor.key()
                if not key.startswith(prefix):
                    break
                fact = decode_fact(cursor.value())
                examined += 1
                weight = fact.weight
                if not fact.pinned:
                    hours = (now - parse(fact.accessed_at)).total_seconds() / 3600.0
                    weight = decay_weight(fact.weight, hours, half_life_hours)
                    if weight < fact.weight:
                        drops.append(WeightChange(fact.id, fact.weight, weight))
                        cursor.put(bytes(key), encode(msgspec.structs.replace(fact, weight=weight)))
                if fact.is_live:
                    weight_sum += weight
                found = cursor.next()
            if not dry_run:
                tx.set_weight_sum(agent, weight_sum)
            drops.sort(key=lambda c: c.after - c.before)
            return DecayOutcome(examined=examined, changed=len(drops), largest_drops=drops[:5])

        return self.read(run) if dry_run else self.write(run)

    def apply_consolidation(self, request: ApplyRequest, record: CycleRecord) -> ApplyOutcome:
        """Summary, tombstones, receipts, counters and journal record: all or nothing.

        Refuses (returns applied=False, writes nothing) when any fact to consume is gone,
        already a tombstone, pinned, or no longer has the text the summariser saw.
        """

        def run(tx: Tx) -> ApplyOutcome:
            current: list[Fact] = []
            for fact_id in request.consume:
                fact = tx.find(fact_id)
                if fact is None:
                    return ApplyOutcome(False, f"stale: fact {fact_id} no longer exists")
                if fact.is_tombstone:
                    return ApplyOutcome(False, f"stale: fact {fact_id} was superseded meanwhile")
                if fact.pinned:
                    return ApplyOutcome(False, f"stale: fact {fact_id} was pinned meanwhile")
                if fact.text != request.snapshot.get(fact_id):
                    return ApplyOutcome(False, f"stale: fact {fact_id} changed meanwhile")
                if fact.agent_id != request.agent_id:
                    return ApplyOutcome(False, f"fact {fact_id} belongs to another agent")
                current.append(fact)
            stamp = clock.format_time(tx.now)
            summary = Fact(
                id=new_id(tx.now),
                agent_id=request.agent_id,
                text=request.summary,
                created_at=stamp,
                accessed_at=stamp,
                cycle_id=request.cycle_id,
            )
            tx.write_fact(summary, None)
            for fact in current:
                tomb = msgspec.structs.replace(
                    fact, superseded_by=summary.id, cycle_id=request.cycle_id
                )
                tx.write_fact(tomb, fact)
            consumed = [f.id for f in current]
            tx.put_receipts(summary.id, consumed)
            tx.bump("consolidations")
            tx.bump("facts_consolidated", len(consumed))
            record.outcome = "applied"
            record.reason = ""
            record.summary_id = summary.id
            record.consumed = consumed
            _save_record(tx, record)
            return ApplyOutcome(True, summary=summary, consumed=consumed)

        return self.write(run)

    def prune(self, agent: str, record: CycleRecord) -> list[Fact]:
        """Delete unpinned facts below 0.01 and copy each into the journal record, together."""

        def run(tx: Tx) -> list[Fact]:
            doomed = [
                f
                for f in tx.iter_facts(agent, "all", newest_first=False)
                if not f.pinned and f.weight < PRUNE_BELOW
            ]
            for fact in doomed:
                tx.delete_fact(fact)
            record.pruned = list(record.pruned) + doomed
            _save_record(tx, record)
            return doomed

        return self.write(run)

    def save_record(self, record: CycleRecord) -> None:
        self.write(lambda tx: _save_record(tx, record))

    def revert(self, cycle_id: str) -> CycleRecord:
        """Undo an applied cycle: consumed facts live again, summary retired, one transaction."""

        def run(tx: Tx) -> CycleRecord:
            original = tx.record(cycle_id)
            if original is None:
                raise NotFound(f"no cycle with id {cycle_id}")
            if original.kind != "consolidate" or original.outcome != "applied":
                raise Conflict(
                    f"cycle {cycle_id} cannot be reverted: it was not an applied consolidation "
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
            if summary.is_tombstone:
                how = "retired" if summary.is_retired else f"consumed by {summary.superseded_by}"
                raise Conflict(f"cycle {cycle_id} cannot be reverted: its summary was {how} since")
            restored: list[Fact] = []
            for fact_id in original.consumed:
                fact = tx.find(fact_id)
                if fact is None:
                    raise Conflict(
                        f"cycle {cycle_id} cannot be reverted: consumed fact {fact_id} is gone "
                        "(pruned)"
                    )
                if fact.superseded_by != summary.id:
                    raise Conflict(
                        f"cycle {cycle_id} cannot be reverted: fact {fact_id} no longer points "
                        "at the cycle's summary"
                    )
                restored.append(fact)
            for fact in restored:
                tx.write_fact(msgspec.structs.replace(fact, superseded_by="", cycle_id=""), fact)
            tx.write_fact(msgspec.structs.replace(summary, superseded_by=RETIRED), summary)
            tx.txn.delete(summary.id.encode(), db=tx.dbs.receipts)
            stamp = clock.format_time(tx.now)
            revert = CycleRecord(
                cycle_id=new_id(tx.now),
                kind="revert",
                agent_id=original.agent_id,
                outcome="applied",
                reason=f"revert of cycle {cycle_id}",
                started_at=stamp,
                finished_at=stamp,
                reverted_cycle_id=cycle_id,
                restored=[f.id for f in restored],
                retired_summary_id=summary.id,
            )
            original.reverted_by = revert.cycle_id
            tx.put_record(original)
            _save_record(tx, revert)
            tx.bump("reverts")
            return revert

        return self.write(run)


def _save_record(tx: Tx, record: CycleRecord) -> None:
    if record.kind == "consolidate" and tx.record(record.cycle_id) is None:
        tx.bump("cycles")
    tx.put_record(record)
