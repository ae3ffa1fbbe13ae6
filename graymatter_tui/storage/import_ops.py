"""Importing facts and journal records with their ids, in one write transaction.

What the store already holds decides each row (ADR 0013): an identical row is a silent
no-op, so importing a file twice changes nothing; a fact whose identity (agent, text,
creation time) or receipt (superseded_by, cycle_id) differs, or a journal record that
differs in any way, is a conflict, which refuses the whole import unless the caller asks
to keep the store's rows; a fact that differs only in its state (weight, accesses, pin,
pass-through fields) keeps the store's state, which is newer, and is reported.

Every receipt the import adds must hold in the store as it will be: a tombstone's
replacement exists (in the file, in the store, or as a pruned copy in a journal), belongs
to the same agent, and the chain of replacements ends. Importing a journal record moves
the counters exactly as the original write did, so they keep agreeing with the journal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from graymatter_tui.core import provenance
from graymatter_tui.core.errors import Conflict, InvalidInput
from graymatter_tui.core.model import CycleRecord, Fact, Probe
from graymatter_tui.core.progress import Report
from graymatter_tui.core.receipts import ChainProblem, chain_problems
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.core.words import counted
from graymatter_tui.storage import conflict_ops, lifespan_ops, probe_ops
from graymatter_tui.storage.fact_ops import log_added
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import (
    MAX_NAMED,
    ImportConflicts,
    ImportIssue,
    ImportResult,
    OnConflict,
)

_CHUNK = 20_000
# A fact's fields by what a difference in them means.
_IDENTITY = ("agent_id", "text", "created_at")
_RECEIPT = ("superseded_by", "cycle_id")
_STATE = (
    "accessed_at",
    "access_count",
    "weight",
    "pinned",
    "pinned_at",
    "confidence",
    "kind",
    "source",
)


@dataclass(frozen=True)
class ImportBatch:
    """An import file's rows, tokenised before the transaction (which then holds the
    write lock for less time), with where each came from ("line 7") for messages."""

    facts: list[Fact]
    records: list[CycleRecord]
    terms: list[dict[str, int]]
    made_by: Analyzer
    places: list[str]
    record_places: list[str]
    probes: list[Probe]

    @classmethod
    def prepare(
        cls,
        facts: list[Fact],
        records: list[CycleRecord],
        fact_where: Sequence[str] | None,
        record_where: Sequence[str] | None,
        progress: Report | None,
        analyzer: Analyzer,
        probes: list[Probe] | None = None,
    ) -> ImportBatch:
        places = list(fact_where or (f"fact {n}" for n in range(1, len(facts) + 1)))
        record_places = list(record_where or (f"record {n}" for n in range(1, len(records) + 1)))
        terms = []
        for done, fact in enumerate(facts, start=1):
            terms.append(analyzer.term_counts(fact.text) if fact.is_live else {})
            if progress is not None and (done % _CHUNK == 0 or done == len(facts)):
                progress("indexing", done, len(facts))
        return cls(facts, records, terms, analyzer, places, record_places, probes or [])


def fact_difference(stored: Fact, incoming: Fact) -> tuple[bool, list[str]] | None:
    """None if identical; else (is a conflict, the fields that differ)."""
    if stored == incoming:
        return None
    differ = [
        name
        for name in (*_IDENTITY, *_RECEIPT, *_STATE)
        if getattr(stored, name) != getattr(incoming, name)
    ]
    return any(name in _IDENTITY or name in _RECEIPT for name in differ), differ


def import_all(
    tx: Transaction, batch: ImportBatch, on_conflict: OnConflict, progress: Report | None
) -> ImportResult:
    """Insert facts and journal records keeping their ids (see the module docstring)."""
    records, terms = batch.records, batch.terms
    # A fact keeps the source its file names (a round trip changes nothing); one from a
    # file that names none (upstream's, older exports) was written here by the import.
    facts = [
        f if f.source else msgspec.structs.replace(f, source=provenance.IMPORT) for f in batch.facts
    ]
    plan = _Plan(tx, facts, batch.places, records, batch.record_places)
    if plan.conflicts and on_conflict == "refuse":
        raise ImportConflicts(plan.conflicts)
    plan.check_dependencies()
    plan.check_receipts()
    added = plan.added_facts
    for start in range(0, len(added), _CHUNK):
        chunk = added[start : start + _CHUNK]
        tx.insert_many([facts[i] for i in chunk], [terms[i] for i in chunk], batch.made_by)
        if progress is not None:
            progress("writing", start + len(chunk), len(added))
    for index in plan.added_records:
        _add_record(tx, records[index])
    # When the imported tombstones (and pruned facts) stopped being live: the file keeps
    # no such times, so they are derived from its journal as an upgrade derives them.
    touched = {facts[i].agent_id for i in added if facts[i].is_tombstone}
    touched |= {records[i].agent_id for i in plan.added_records}
    if touched:
        lifespan_ops.fill(tx, agents=touched)
    log_added(tx, "import", [facts[i] for i in added])
    probes_added = probe_ops.import_probes(tx, batch.probes)
    # Pairs are asked of facts new to any store (the file names no source: upstream's, an
    # older export); a fact our export carries was written, and checked, where it came
    # from, so a round trip raises nothing.
    fresh = [facts[i] for i in added if not batch.facts[i].source]
    held = conflict_ops.check_written(tx, fresh)
    return ImportResult(
        facts_added=len(added),
        facts_skipped=len(facts) - len(added),
        records_added=len(plan.added_records),
        records_skipped=len(records) - len(plan.added_records),
        conflicts=plan.conflicts,
        kept_store_state=plan.kept,
        probes_added=probes_added,
        review_held=len(held),
    )


class _Plan:
    """What the import will do, decided against the store inside the transaction."""

    def __init__(
        self,
        tx: Transaction,
        facts: list[Fact],
        places: list[str],
        records: list[CycleRecord],
        record_places: list[str],
    ) -> None:
        self.tx = tx
        self.facts = facts
        self.places = places
        self.records = records
        self.record_places = record_places
        self.added_facts: list[int] = []
        self.added_records: list[int] = []
        self.conflicts: list[ImportIssue] = []
        self.kept: list[ImportIssue] = []
        self._classify_facts()
        self._classify_records()

    def _classify_facts(self) -> None:
        # A store with no facts yet (the usual bulk import) needs no look-ups at all.
        empty = self.tx.count_facts() == 0
        for index, fact in enumerate(self.facts):
            stored = None if empty else self.tx.find(fact.id)
            if stored is None:
                self.added_facts.append(index)
                continue
            difference = fact_difference(stored, fact)
            if difference is None:
                continue
            conflict, fields = difference
            where = self.places[index]
            if conflict:
                what = "a different fact" if set(fields) & set(_IDENTITY) else "another receipt"
                reason = f"the store holds {what} under this id ({_differ(fields)})"
                self.conflicts.append(ImportIssue("fact", fact.id, where, reason))
            else:
                reason = f"{_differ(fields)}; the store's state is kept"
                self.kept.append(ImportIssue("fact", fact.id, where, reason))

    def _classify_records(self) -> None:
        empty = self.tx.count_records() == 0
        for index, record in enumerate(self.records):
            stored = None if empty else self.tx.find_record(record.cycle_id)
            if stored is None:
                self.added_records.append(index)
            elif stored != record:
                reason = "the store's journal holds a different record under this id"
                where = self.record_places[index]
                self.conflicts.append(ImportIssue("cycle", record.cycle_id, where, reason))

    def check_dependencies(self) -> None:
        """With the store's rows kept, nothing added may rely on the file's version of
        them: a receipt pointing at it, a fact or record naming it."""
        if not self.conflicts:
            return
        held = {c.id: c for c in self.conflicts}
        problems: list[tuple[str, str]] = []  # (the held id, what relies on it)
        for index in self.added_facts:
            fact = self.facts[index]
            for ref in (fact.superseded_by, fact.cycle_id):
                if ref in held:
                    problems.append((ref, f"{self.places[index]}: fact {fact.id} refers to it"))
        for index in self.added_records:
            record = self.records[index]
            refs = {record.summary_id, record.reverted_cycle_id, record.retired_summary_id}
            refs.update(record.consumed, record.restored)
            for ref in sorted(refs & held.keys()):
                where = self.record_places[index]
                problems.append((ref, f"{where}: cycle {record.cycle_id} refers to it"))
        if problems:
            ref, _ = problems[0]
            named = "; ".join(what for held_id, what in problems if held_id == ref)
            others = len({held_id for held_id, _ in problems}) - 1
            more = f" (and rows relying on {others} other conflicting ids)" if others else ""
            raise Conflict(
                f"cannot keep the store's row for {ref} ({held[ref].where}) and import the "
                f"rest: {named}{more}"
            )

    def check_receipts(self) -> None:
        """Every added tombstone's chain, over the store as it will be after the import."""
        adding = {self.facts[i].id: i for i in self.added_facts}
        pruned: dict[str, Fact] | None = None

        def lookup(fact_id: str) -> Fact | None:
            nonlocal pruned
            index = adding.get(fact_id)
            if index is not None:
                return self.facts[index]
            found = self.tx.find(fact_id)
            if found is not None:
                return found
            if pruned is None:
                pruned = self._pruned_copies()
            return pruned.get(fact_id)

        starts = [self.facts[i] for i in self.added_facts if self.facts[i].is_tombstone]
        problems = chain_problems(starts, lookup)
        if problems:
            lines = [f"{self.places[adding[p.fact_id]]}: {_worded(p)}" for p in problems]
            more = f"; and {len(lines) - MAX_NAMED} more" if len(lines) > MAX_NAMED else ""
            broken = counted(len(lines), "broken receipt")
            raise InvalidInput(f"{broken}: {'; '.join(lines[:MAX_NAMED])}{more}")

    def _pruned_copies(self) -> dict[str, Fact]:
        """Facts pruned since, by their copies in the file's journal and the store's."""
        copies = {f.id: f for r in self.records for f in r.pruned}
        for record in self.tx.iter_records(newest_first=False):
            for fact in record.pruned:
                copies.setdefault(fact.id, fact)
        return copies


def _differ(fields: list[str]) -> str:
    if len(fields) == 1:
        return f"{fields[0]} differs"
    return f"{', '.join(fields[:-1])} and {fields[-1]} differ"


def _worded(problem: ChainProblem) -> str:
    if problem.kind == "absent":
        return (
            f"fact {problem.fact_id} is superseded by {problem.target}, which is neither in "
            "the file nor in the store (nor a pruned copy in a journal)"
        )
    return problem.detail


def _add_record(tx: Transaction, record: CycleRecord) -> None:
    """A journal record, with the counters moved as the write that made it moved them
    (`save_record`, `apply_consolidation` and `revert` in cycle_ops)."""
    tx.put_record(record)
    if record.kind == "revert":
        tx.bump("reverts")
        return
    if record.kind in ("review", "probe_run"):  # a decision, or probes scored: no counter
        return
    tx.bump("cycles")
    if record.outcome != "applied":
        return
    tx.bump("consolidations")
    tx.bump("facts_consolidated", len(record.consumed))
    # A revert deleted the receipts of the summary it retired; a later cycle that
    # consumed the summary left them.
    if record.summary_id and not record.reverted_by and not tx.receipts(record.summary_id):
        tx.put_receipts(record.summary_id, record.consumed)
