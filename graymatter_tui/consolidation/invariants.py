"""Checks of invariants I-1…I-6 (each check's title states its promise: pins, deletion only
by pruning with a journal copy, tombstones that point somewhere, whole applies, counters
that match the journal, revival only by revert), of receipt chains (one agent, no
loops: something I-3 alone does not catch) and of the store's own indexes.

Used by `doctor`, by the tests after every property-test step, and by the crash harness.
Each check returns the violations it found; an empty list means the invariant holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graymatter_tui.core.model import RETIRED, CycleRecord, Fact
from graymatter_tui.core.receipts import chain_problems
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore


@dataclass
class Check:
    name: str
    title: str
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def check_invariants(store: MemoryStore) -> list[Check]:
    facts = {f.id: f for f in store.all_facts()}
    records = store.records()
    counters = store.counters()
    applied = [r for r in records if r.kind == "consolidate" and r.outcome == "applied"]
    reverts = [r for r in records if r.kind == "revert"]
    pruned: dict[str, Fact] = {f.id: f for r in records for f in r.pruned}
    restored = {fact_id for r in reverts for fact_id in r.restored}

    i1 = Check("I-1", "pinned facts are never consolidated or pruned")
    for record in applied:
        for item in record.batch_facts:
            fact = facts.get(item.id)
            restored_later = item.id in restored  # a revert may be followed by a pin
            if (
                fact is not None
                and fact.pinned
                and item.id in record.consumed
                and not restored_later
            ):
                i1.violations.append(f"pinned fact {item.id} consumed by cycle {record.cycle_id}")
    for fact in pruned.values():
        if fact.pinned:
            i1.violations.append(f"pinned fact {fact.id} was pruned")
    for fact in facts.values():
        if fact.pinned and fact.is_tombstone:
            i1.violations.append(f"fact {fact.id} is both pinned and a tombstone")

    i2 = Check("I-2", "only pruning deletes, and every pruned fact is in the journal")
    for record in applied:
        for fact_id in [*record.consumed, record.summary_id]:
            if fact_id and fact_id not in facts and fact_id not in pruned:
                i2.violations.append(
                    f"fact {fact_id} of cycle {record.cycle_id} is gone without a journal copy"
                )
    for fact in pruned.values():
        if fact.weight >= 0.01:
            i2.violations.append(f"fact {fact.id} was pruned at weight {fact.weight:.4f}")

    i3 = Check("I-3", "every tombstone points at 'agent' or a fact that exists or was pruned")
    for fact in facts.values():
        target = fact.superseded_by
        if target and target != RETIRED and target not in facts and target not in pruned:
            i3.violations.append(f"tombstone {fact.id} points at missing fact {target}")

    chains = Check("receipts", "receipt chains stay within one agent and end (no loops)")
    for problem in chain_problems(facts.values(), lambda i: facts.get(i) or pruned.get(i)):
        if problem.kind != "absent":  # I-3 reports those
            chains.violations.append(problem.detail)

    i4 = Check("I-4", "applied cycles landed whole: summary, tombstones, receipts, record")
    for record in applied:
        i4.violations += _applied_whole(store, record, facts, pruned, restored)

    i5 = Check("I-5", "counters equal what the journal's applied cycles say")
    consumed_total = sum(len(r.consumed) for r in applied)
    if counters.consolidations != len(applied):
        i5.violations.append(
            f"consolidations counter {counters.consolidations} but "
            f"{counted(len(applied), 'applied cycle')}"
        )
    if counters.facts_consolidated != consumed_total:
        i5.violations.append(
            f"facts_consolidated counter {counters.facts_consolidated} but the journal says "
            f"{consumed_total}"
        )
    if counters.reverts != len(reverts):
        i5.violations.append(
            f"reverts counter {counters.reverts} but {counted(len(reverts), 'revert')}"
        )
    cycles = sum(1 for r in records if r.kind == "consolidate")
    if counters.cycles != cycles:
        i5.violations.append(
            f"cycles counter {counters.cycles} but {counted(cycles, 'cycle record')}"
        )

    i6 = Check("I-6", "a consumed fact is live again only through a revert")
    for record in applied:
        for fact_id in record.consumed:
            fact = facts.get(fact_id)
            if fact is not None and fact.is_live and fact_id not in restored:
                i6.violations.append(
                    f"fact {fact_id} consumed by cycle {record.cycle_id} is live without a revert"
                )

    index = Check("index", "agent counts and indexes match the facts")
    index.violations = _index_problems(store, facts)
    return [i1, i2, i3, chains, i4, i5, i6, index]


def _applied_whole(
    store: MemoryStore,
    record: CycleRecord,
    facts: dict[str, Fact],
    pruned: dict[str, Fact],
    restored: set[str],
) -> list[str]:
    problems: list[str] = []
    summary = facts.get(record.summary_id) or pruned.get(record.summary_id)
    if summary is None:
        return [f"cycle {record.cycle_id}: summary {record.summary_id} missing"]
    # A summary later consumed by another cycle carries that cycle's id instead.
    consumed_later = summary.is_tombstone and not summary.is_retired
    if summary.cycle_id != record.cycle_id and not consumed_later:
        problems.append(f"cycle {record.cycle_id}: summary carries cycle {summary.cycle_id!r}")
    if not record.reverted_by and record.summary_id in facts:
        receipts = store.receipts(record.summary_id)
        if sorted(receipts) != sorted(record.consumed):
            problems.append(f"cycle {record.cycle_id}: receipts do not match the consumed ids")
    for fact_id in record.consumed:
        fact = facts.get(fact_id)
        if fact is None or fact_id in restored:
            continue
        if fact.superseded_by != record.summary_id:
            problems.append(
                f"cycle {record.cycle_id}: consumed fact {fact_id} does not point at its summary"
            )
    return problems


def _index_problems(store: MemoryStore, facts: dict[str, Fact]) -> list[str]:
    problems: list[str] = []
    by_agent: dict[str, list[Fact]] = {}
    for fact in facts.values():
        by_agent.setdefault(fact.agent_id, []).append(fact)
    summaries = {a.agent_id: a for a in store.agents()}
    for agent in sorted(set(by_agent) | set(summaries)):
        own = by_agent.get(agent, [])
        live = sum(1 for f in own if f.is_live)
        tombs = len(own) - live
        pinned = sum(1 for f in own if f.is_live and f.pinned)
        summary = summaries.get(agent)
        counted = (summary.live_facts, summary.tombstones, summary.pinned) if summary else (0, 0, 0)
        if counted != (live, tombs, pinned):
            problems.append(
                f"agent {agent!r}: counts {counted} but facts say {(live, tombs, pinned)}"
            )
        if len(store.fact_ids(agent, "live")) != live:
            problems.append(f"agent {agent!r}: live index disagrees with the facts")
        if len(store.fact_ids(agent, "tombstones")) != tombs:
            problems.append(f"agent {agent!r}: tombstone index disagrees with the facts")
    return problems
