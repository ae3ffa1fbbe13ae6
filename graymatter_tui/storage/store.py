"""The memory store, written once over a `Transaction` (ADR 0052).

Every `MemoryStore` operation both backends share is a method here: one transaction
running one operation function (`queries`, `fact_ops`, `cycle_ops`, …), so the CLI, the
TUI, the MCP server and the cycle share one write path whichever backend holds the
store. A backend subclasses `BaseStore` and supplies the primitives: a read and a write
transaction (each a `VectorTransaction`: every backend stores embedding vectors, in one
layout, ADR 0058), how it opens and names itself, and what it alone does (LMDB's map).
Where a backend can answer a read faster over its own tables (PostgreSQL's SQL
listing), it overrides that one method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, TypeVar

from graymatter_tui.core.confidence import Confidence
from graymatter_tui.core.errors import GraymatterError, InvalidInput
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import (
    ActivityEntry,
    AgentSummary,
    Counters,
    CycleRecord,
    Fact,
    FactState,
    Probe,
    ReviewProposal,
    ReviewStatus,
)
from graymatter_tui.core.progress import Report
from graymatter_tui.core.textsafe import validate_agent, validate_text
from graymatter_tui.core.tokens import check_language
from graymatter_tui.storage import (
    checkpoint_ops,
    conflict_ops,
    cycle_ops,
    fact_ops,
    graph_ops,
    import_ops,
    migrate_ops,
    past_ops,
    probe_ops,
    queries,
    reindex_ops,
    review_ops,
    values,
    vector_ops,
)
from graymatter_tui.storage.past_index import PastIndex
from graymatter_tui.storage.protocol import KeywordIndex, StoreWatch
from graymatter_tui.storage.transaction import Transaction, VectorTransaction
from graymatter_tui.storage.watch import WATCH_INTERVAL, PollingWatch

if TYPE_CHECKING:  # numpy is imported when vectors are touched, not by every command
    import numpy as np
    import numpy.typing as npt

T = TypeVar("T")


class BaseStore(ABC):
    """The shared operations of a store; a backend supplies the primitives below."""

    # ==== the primitives ==================================================================
    @abstractmethod
    def _read(self, fn: Callable[[VectorTransaction], T]) -> T:
        """Run `fn` over one read transaction (one consistent snapshot)."""

    @abstractmethod
    def _write(self, fn: Callable[[VectorTransaction], T]) -> T:
        """Run `fn` in one write transaction: all or nothing. `fn` may run again (a
        retry), so it computes only from its arguments and the transaction."""

    def _read_one_statement(self, fn: Callable[[VectorTransaction], T]) -> T:
        """Run `fn`, which reads through exactly one primitive answered by one statement
        of the backend (`meta_int`, `meta_many`, `vector_blocks`): a backend that pays a
        round trip for BEGIN and COMMIT may run it alone, that statement being its own
        snapshot. The polls of long-running processes read this way."""
        return self._read(fn)

    def _read_in_place(self, fn: Callable[[VectorTransaction], T]) -> T:
        """Run `fn` over a read whose vector rows may be views of the backend's own
        storage, valid only inside `fn` (LMDB's map: a search copies no block)."""
        return self._read(fn)

    @abstractmethod
    def now(self) -> datetime: ...

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store is, for people: a directory, or a URL without its password."""

    @property
    @abstractmethod
    def absent(self) -> bool:
        """There is no store where it was looked for: this is an empty read-only view."""

    # Bulk writes: a backend that must size its storage first (LMDB's map) is told what
    # is coming; the others need do nothing.
    def _make_room_for_facts(
        self, pending: Sequence[values.NewFact], terms: list[dict[str, int]]
    ) -> None:
        """Before `put_many` writes `pending` (with their term counts)."""
        return  # a backend whose storage grows as it writes has nothing to do

    def _make_room_for_import(self, batch: import_ops.ImportBatch) -> None:
        """Before `import_all` writes `batch`."""
        return  # a backend whose storage grows as it writes has nothing to do

    def _make_room_for_snapshot(
        self, snapshot: values.StoreSnapshot, terms: list[dict[str, int]]
    ) -> None:
        """Before `load_snapshot` writes `snapshot`."""
        return  # a backend whose storage grows as it writes has nothing to do

    # ==== the operations ==================================================================
    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None: ...

    def read_index(self, fn: Callable[[KeywordIndex], T]) -> T:
        """Run `fn` over one consistent snapshot of the keyword index (recall)."""
        return self._read(fn)

    def past_facts(
        self,
        agent: str | None,
        as_of: AsOf,
        *,
        state: FactState = "live",
        limit: int | None = None,
        before: str | None = None,
        with_facts: bool = True,
    ) -> values.PastFacts:
        """The facts in `state` at the moment `as_of` names, newest first, each with what
        happened to it since (`past_ops.past_facts`), in one read transaction."""
        if agent is not None:
            validate_agent(agent)
        if self.absent:
            raise InvalidInput(
                f"there is no store at {self.location} yet, so nothing was live "
                + (f"before record {as_of.record}" if as_of.record else f"at {as_of.said()}")
            )
        return self._read(
            lambda tx: past_ops.past_facts(
                tx,
                agent,
                as_of,
                state=state,
                limit=limit,
                before=before,
                with_facts=with_facts,
            )
        )

    def read_past_index(self, past: values.PastFacts, fn: Callable[[KeywordIndex], T]) -> T:
        """Run `fn` over the keyword index of the facts live in `past` (`past_index`)."""
        return self._read(lambda tx: fn(PastIndex(tx, past)))

    def generation(self) -> int:
        """Bumped by every write transaction of any process: cheap change detection."""
        return self._read_one_statement(lambda tx: tx.meta_int("generation"))

    def watch(
        self,
        moved: Callable[[int], None],
        failed: Callable[[GraymatterError], None],
        *,
        since: int = -1,
        interval: float = WATCH_INTERVAL,
    ) -> StoreWatch:
        """Watch for writes from any process (`MemoryStore.watch`): here by reading the
        generation every `interval` seconds on the watch's thread; a backend that can be
        told of writes overrides this."""
        watch = PollingWatch(self.generation, moved, failed, since=since, interval=interval)
        watch.start()
        return watch

    def is_demo(self) -> bool:
        """True when the demo created this store (it leaves a `demo` meta key)."""
        return self._read(lambda tx: tx.meta_get(fact_ops.DEMO_KEY) is not None)

    def unused_id(self, moment: datetime) -> str:
        """A new id for something written later (a cycle's record), held by no fact or
        record now."""
        return self._read(lambda tx: fact_ops.unused_id(tx, moment))

    def find(self, fact_id: str) -> Fact | None:
        """The fact with this id, or None."""
        return self._read(lambda tx: tx.find(fact_id))

    def require(self, fact_id: str) -> Fact:
        """The fact with this id; NotFound when there is none."""
        return self._read(lambda tx: tx.require(fact_id))

    def find_many(self, fact_ids: Iterable[str]) -> list[Fact | None]:
        """`find` of each id, in one transaction."""
        wanted = list(fact_ids)
        return self._read(lambda tx: tx.find_many(wanted))

    def list_facts(
        self,
        agent: str | None = None,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[Fact]:
        """Facts newest first. Keyset paging: pass the last id of a page as `before`."""
        return self._read(lambda tx: queries.list_facts(tx, agent, state, limit, before))

    def pinned_facts(self, agent: str, *, limit: int | None = None) -> list[Fact]:
        """The agent's live pinned facts, newest first (at most `limit`), without reading
        every fact: what a session starts by knowing."""
        return self._read(lambda tx: queries.pinned_facts(tx, agent, limit))

    def fact_ids(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[str]:
        """Ids of one agent's facts in one state, newest first, without decoding. Keyset
        paging: pass the last id of a page as `before`."""
        return self._read(lambda tx: queries.fact_ids(tx, agent, state, limit, before))

    def texts(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """(ids, texts) of one agent's facts, newest first, decoding only those two fields
        (a filter index over 1M facts without building 1M full Fact objects). Keyset
        paging as in `fact_ids`."""
        return self._read(lambda tx: queries.texts(tx, agent, state, limit, before))

    def confidences(self, agent: str, state: FactState = "live") -> dict[str, str]:
        """id -> confidence label of each fact of `agent` in `state` that has one (a
        filter by confidence; facts without a label are not in it)."""
        return self._read(lambda tx: queries.confidences(tx, agent, state))

    def all_facts(self) -> list[Fact]:
        """Every fact of every agent, oldest first (exports)."""
        return self._read(queries.all_facts)

    def agents(self) -> list[AgentSummary]:
        return self._read(queries.agents)

    def counters(self) -> Counters:
        return self._read(queries.counters)

    def receipts(self, summary_id: str) -> list[str]:
        return self._read(lambda tx: tx.receipts(summary_id))

    def show(self, fact_id: str) -> values.ShowResult:
        """A fact with its receipt chain: what replaced it, what it consumed, its cycle."""
        return self._read(lambda tx: queries.show(tx, fact_id))

    def records(self, agent: str | None = None, *, limit: int | None = None) -> list[CycleRecord]:
        """Journal records newest first."""
        return self._read(lambda tx: queries.records(tx, agent, limit))

    def find_record(self, cycle_id: str) -> CycleRecord | None:
        """The journal record with this id, or None."""
        return self._read(lambda tx: tx.find_record(cycle_id))

    def require_record(self, cycle_id: str) -> CycleRecord:
        """The journal record with this id; NotFound when there is none."""
        return self._read(lambda tx: tx.require_record(cycle_id))

    # ---- curation ----------------------------------------------------------------------
    def put(
        self,
        agent: str,
        text: str,
        *,
        pinned: bool = False,
        confidence: Confidence | None = None,
    ) -> Fact:
        """Store a new fact and return it as committed; `confidence` is its writer's
        label (None: unknown). `remember`, without the items."""
        return self.remember(agent, text, pinned=pinned, confidence=confidence).fact

    def remember(
        self,
        agent: str,
        text: str,
        *,
        pinned: bool = False,
        confidence: Confidence | None = None,
    ) -> values.Remembered:
        """Store a new fact and, in the same transaction, hold for review a duplicate or
        possible update it makes of a live fact of its agent (`conflict_ops`)."""
        validate_agent(agent)
        validate_text(text)

        def run(tx: Transaction) -> values.Remembered:
            fact = fact_ops.put(tx, agent, text, pinned, confidence=confidence)
            return values.Remembered(fact, conflict_ops.check_written(tx, [fact]))

        return self._write(run)

    def put_many(self, items: Iterable[values.NewFact], *, check_pairs: bool = False) -> list[Fact]:
        """Insert many facts in one transaction (demo data, benchmarks); with
        `check_pairs`, the pairs they make are held for review as `remember` holds them."""
        pending = list(items)
        for item in pending:
            validate_agent(item.agent_id)
            validate_text(item.text)
            if not 0.0 <= item.weight <= 1.0:
                raise InvalidInput(f"weight must be between 0 and 1, got {item.weight}")
        # Tokenised before the transaction, which then holds the write lock for less time.
        analyzer = self._read(lambda tx: tx.analyzer)
        terms = [analyzer.term_counts(item.text) for item in pending]
        self._make_room_for_facts(pending, terms)

        def run(tx: Transaction) -> list[Fact]:
            written = fact_ops.put_many(tx, pending, terms, analyzer)
            if check_pairs:
                conflict_ops.check_written(tx, written)
            return written

        return self._write(run)

    def set_stem_language(self, language: str, *, progress: Report | None = None) -> int:
        """Re-index every live fact with stems in `language` (`none`: no stemming), in one
        transaction; queries use it from then on. Returns how many facts were indexed."""
        chosen = check_language(language)
        return self._write(lambda tx: reindex_ops.change_language(tx, chosen, progress))

    def pin(self, fact_id: str) -> Fact:
        return self._write(lambda tx: fact_ops.pin(tx, fact_id))

    def unpin(self, fact_id: str) -> Fact:
        return self._write(lambda tx: fact_ops.unpin(tx, fact_id))

    def revise(
        self, fact_id: str, text: str, *, confidence: Confidence | None = None
    ) -> tuple[Fact, Fact]:
        """Replace a live fact's text: a new fact plus a tombstone pointing at it, in one
        transaction. A pin moves to the revision; so does the confidence unless
        `confidence` is given. Returns (revision, tombstone)."""
        validate_text(text)
        return self._write(lambda tx: fact_ops.revise(tx, fact_id, text, confidence=confidence))

    def retire(self, fact_id: str) -> Fact:
        """Tombstone a live fact with no replacement (`superseded_by = "agent"`)."""
        return self._write(lambda tx: fact_ops.retire(tx, fact_id))

    def supersede_text(
        self, agent: str, target: str, text: str, *, confidence: Confidence | None = None
    ) -> tuple[Fact, list[Fact]]:
        """Write `text` and tombstone every live fact of `agent` whose text is exactly
        `target`, pointing at it, in one transaction. The replacement's confidence is
        `confidence`, else the lowest among the facts it replaces (unknown when any is).
        Returns (replacement, tombstones)."""
        validate_agent(agent)
        validate_text(text)
        return self._write(
            lambda tx: fact_ops.supersede_text(tx, agent, target, text, confidence=confidence)
        )

    def retire_text(self, agent: str, target: str) -> list[Fact]:
        """Tombstone every live fact of `agent` whose text is exactly `target`, in one
        transaction; refused when any is pinned."""
        validate_agent(agent)
        return self._write(lambda tx: fact_ops.retire_text(tx, agent, target))

    def pin_text(self, agent: str, target: str, *, pinned: bool = True) -> list[Fact]:
        """Pin (or unpin) every live fact of `agent` whose text is exactly `target`."""
        validate_agent(agent)
        return self._write(lambda tx: fact_ops.pin_text(tx, agent, target, pinned))

    # ---- the review queue ---------------------------------------------------------------
    def hold_change(
        self,
        agent: str,
        action: str,
        target: str,
        text: str,
        *,
        confidence: Confidence | None = None,
    ) -> ReviewProposal:
        """Hold an agent's add/update/forget/pin/unpin for review instead of applying it;
        refused now when it could never apply (no live fact has the target text, …).
        `confidence` (add, update) is what the written fact gets once approved."""
        validate_agent(agent)
        if action in ("add", "update"):
            validate_text(text)
        if action != "add":
            validate_text(target)
        return self._write(lambda tx: review_ops.hold(tx, agent, action, target, text, confidence))

    def proposals(
        self,
        agent: str | None = None,
        *,
        status: ReviewStatus | None = None,
        limit: int | None = None,
    ) -> list[ReviewProposal]:
        """Held changes newest first, of one agent and in one status when given."""
        return self._read(lambda tx: review_ops.listing(tx, agent, status, limit))

    def pending_count(self) -> int:
        """Proposals waiting for a decision (one number: cheap enough to poll)."""
        return self._read(lambda tx: tx.meta_int(review_ops.PENDING_KEY))

    def find_proposal(self, proposal_id: str) -> ReviewProposal | None:
        return self._read(lambda tx: review_ops.find(tx, proposal_id))

    def require_proposal(self, proposal_id: str) -> ReviewProposal:
        """The proposal with this id; InvalidInput for a malformed id, NotFound for none."""
        return self._read(lambda tx: review_ops.require(tx, proposal_id))

    def approve_proposal(self, proposal_id: str) -> values.ReviewDecision:
        """Apply a pending proposal in one transaction, or discard it as stale (the
        decision's `applied` is False and its reason says what changed)."""
        proposal_id = review_ops.validate_proposal_id(proposal_id)

        def run(tx: Transaction) -> values.ReviewDecision:
            decision = review_ops.approve(tx, proposal_id)
            if (
                decision.applied
                and decision.record.summary_id
                and decision.proposal.action == "add"
            ):
                conflict_ops.check_written(tx, [tx.require(decision.record.summary_id)])
            return decision

        return self._write(run)

    def reject_proposal(self, proposal_id: str, reason: str = "") -> values.ReviewDecision:
        proposal_id = review_ops.validate_proposal_id(proposal_id)
        review_ops.validate_reason(reason)
        return self._write(lambda tx: review_ops.reject(tx, proposal_id, reason))

    # ---- checkpoints and aliases ----------------------------------------------------------
    def save_checkpoint(self, agent: str, state: str | None) -> values.Checkpoint:
        """Save an agent's working state (a JSON object as text, kept as given)."""
        validate_agent(agent)
        return self._write(lambda tx: checkpoint_ops.save_checkpoint(tx, agent, state))

    def latest_checkpoint(self, agent: str) -> values.Checkpoint | None:
        return self._read(lambda tx: checkpoint_ops.latest_checkpoint(tx, agent))

    def add_alias(self, agent: str, term: str, equivalents: Sequence[str]) -> list[str]:
        """Declare `equivalents` the same as `term` for `agent`'s searches; returns every
        equivalent `term` now has."""
        validate_agent(agent)
        wanted = list(equivalents)
        return self._write(lambda tx: checkpoint_ops.add_alias(tx, agent, term, wanted))

    def aliases(self, agent: str) -> dict[str, list[str]]:
        return self._read(lambda tx: checkpoint_ops.aliases(tx, agent))

    # ---- probes ----------------------------------------------------------------------------
    def add_probe(self, agent: str, query: str, k: int = 8) -> tuple[Probe, bool]:
        """Save a recall query every cycle of `agent` is checked against; the same query
        again is the same probe (its k updated). Returns (the probe, whether it is new)."""
        probe, outcome = self.save_probe(agent, query, k)
        return probe, outcome == "added"

    def save_probe(self, agent: str, query: str, k: int = 8) -> tuple[Probe, values.ProbeOutcome]:
        """`add_probe`, saying what it did: added, updated (a new k for the same query)
        or unchanged."""
        values.validate_probe(agent, query, k)
        return self._write(lambda tx: probe_ops.add(tx, agent, query, k))

    def probes(self, agent: str | None = None) -> list[Probe]:
        """Probes of `agent` (every agent's when None), oldest first."""
        return self._read(lambda tx: probe_ops.listing(tx, agent))

    def probe_schedule(self) -> values.ProbeSchedule:
        """How often every agent's probes are scored, when they last were, when next."""
        return self._read(probe_ops.schedule)

    def set_probe_schedule(self, every: int | None) -> values.ProbeSchedule:
        """Score every agent's probes each `every` seconds (None: no schedule)."""
        if every is not None and not values.MIN_PROBE_EVERY <= every <= values.MAX_PROBE_EVERY:
            raise InvalidInput(f"the interval must be between 1m and 366d, got {every} s")
        return self._write(lambda tx: probe_ops.set_schedule(tx, every))

    def claim_probe_run(self) -> bool:
        """Whether a scheduled probe run is due; True makes it the caller's to run (the
        schedule's clock moves to now, so another process asking meanwhile gets False)."""
        return self._write(probe_ops.claim_due)

    def record_probe_run(
        self,
        agent: str,
        scores: Sequence[values.ProbeScore],
        trigger: str,
        *,
        every_agent: bool = False,
    ) -> CycleRecord:
        """Journal one agent's probes as scored now (a `probe_run` record). `every_agent`:
        this is one of a run of every agent's probes, so the schedule counts from now."""
        validate_agent(agent)
        wanted = list(scores)

        def run(tx: Transaction) -> CycleRecord:
            if every_agent:
                probe_ops.mark_run(tx)
            return probe_ops.record_run(tx, agent, wanted, trigger)

        return self._write(run)

    def remove_probe(self, probe_id: str) -> Probe:
        """Remove a probe; NotFound when there is none with this id."""
        probe_id = values.validate_probe_id(probe_id)
        return self._write(lambda tx: probe_ops.remove(tx, probe_id))

    def trial_apply(
        self, request: values.ApplyRequest, look: Callable[[KeywordIndex], T]
    ) -> values.TrialApply[T]:
        """Run `look` over the keyword index, apply `request` as `apply_consolidation`
        would, run `look` again, and abandon the transaction: the second look sees the
        store exactly as the apply would leave it, and nothing is written (ADR 0039).
        Takes the write lock for as long as the looks last."""
        return self._write(lambda tx: cycle_ops.trial_apply(tx, request, look))

    # ---- activity ------------------------------------------------------------------------
    def activity(
        self, *, after: int = 0, before: int | None = None, limit: int | None = None
    ) -> list[ActivityEntry]:
        """Writes newest first, every process's, with write numbers in (after, before)."""
        return self._read(
            lambda tx: list(islice(tx.iter_activity(after=after, before=before), limit))
        )

    def last_activity(self) -> int:
        """The newest write number (0: none yet); a reader polls it to see new writes."""
        return self._read(lambda tx: tx.last_activity())

    def touch(self, fact_ids: Iterable[str]) -> int:
        """Record an access to live facts, one per time an id is given (a batch of several
        searches may name a fact more than once); never resurrects a tombstone or
        recreates a fact. Returns how many facts were touched."""
        wanted = dict(Counter(fact_ids))
        return self._write(lambda tx: fact_ops.touch(tx, wanted))

    def delete(self, fact_ids: Iterable[str]) -> list[Fact]:
        """Remove facts and their extraction signatures. Used only by pruning."""
        wanted = list(fact_ids)
        return self._write(lambda tx: fact_ops.delete(tx, wanted))

    def claim_for_demo(self) -> None:
        """Mark the store as the demo's. Refused (Conflict, nothing written) when it
        already holds facts or journal records that the demo did not put there."""
        self._write(lambda tx: fact_ops.claim_for_demo(tx, self.location))

    # ---- the consolidation cycle -------------------------------------------------------
    def decay(
        self,
        agent: str,
        half_life_hours: float,
        *,
        dry_run: bool = False,
        journal: values.JournalDecay | None = None,
    ) -> values.DecayOutcome:
        """Decay every unpinned fact of `agent` (tombstones too) in one transaction.
        Only the vitals rows are rewritten. With `dry_run`, report and write nothing.
        With `journal`, the record it builds from the outcome is saved in the same
        transaction."""

        def run(tx: Transaction) -> values.DecayOutcome:
            return cycle_ops.decay(tx, agent, half_life_hours, None if dry_run else journal)

        return self._read(run) if dry_run else self._write(run)

    def weights(self, agent: str, state: FactState = "live") -> dict[str, float]:
        """Current weight of each fact of `agent` in `state`, from vitals (no JSON)."""
        return self._read(lambda tx: cycle_ops.weights(tx, agent, state))

    def selection(
        self, agent: str, half_life_hours: float, *, max_batch: int = 0
    ) -> values.Selection:
        """The live count, every live unpinned fact's (weight, id), and the batch (the
        weakest half, at most `max_batch`), all in one read transaction."""
        return self._read(lambda tx: cycle_ops.selection(tx, agent, half_life_hours, max_batch))

    def apply_consolidation(
        self, request: values.ApplyRequest, record: CycleRecord
    ) -> values.ApplyOutcome:
        """Summary, tombstones, receipts, counters and journal record: all or nothing;
        refused (applied=False, nothing written) when the proposal has gone stale."""
        return self._write(lambda tx: cycle_ops.apply_consolidation(tx, request, record))

    def prune(self, agent: str, record: CycleRecord) -> values.PruneOutcome:
        """Delete unpinned facts below 0.01 and copy each into the journal record, together."""
        return self._write(lambda tx: cycle_ops.prune(tx, agent, record))

    def save_record(self, record: CycleRecord) -> None:
        self._write(lambda tx: cycle_ops.save_record(tx, record))

    def revert_refusal(self, cycle_id: str) -> str | None:
        """Why `revert(cycle_id)` would be refused right now, or None."""
        return self._read(lambda tx: cycle_ops.revert_refusal(tx, cycle_id))

    def revert(self, cycle_id: str) -> CycleRecord:
        """Undo an applied cycle: consumed facts live again, summary retired, one transaction."""
        return self._write(lambda tx: cycle_ops.revert(tx, cycle_id))

    # ---- the knowledge graph -----------------------------------------------------------
    def extract_graph(
        self, agent: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> values.ExtractOutcome:
        """Extract entities from live facts whose text signature is new or changed."""
        return self._write(lambda tx: graph_ops.extract_graph(tx, agent, extract))

    def decay_graph(self, agent: str, half_life_hours: float) -> values.GraphDecayOutcome:
        """Decay the agent's graph nodes and edges; remove those below 0.01."""
        return self._write(lambda tx: graph_ops.decay_graph(tx, agent, half_life_hours))

    def graph_size(self, agent: str) -> tuple[int, int]:
        """(nodes, edges) of one agent's graph."""
        return self._read(lambda tx: graph_ops.graph_size(tx, agent))

    def entities(
        self, agent: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> values.EntityIndex:
        """The entities the agent's live facts mention, with how many mention each, most
        first; `extract` reads the facts no cycle has extracted yet (without writing)."""
        return self._read(lambda tx: graph_ops.entities(tx, agent, extract))

    def facts_mentioning(
        self, agent: str, entity_id: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> list[str]:
        """Ids of the agent's live facts that mention the entity, newest first."""
        return self._read(lambda tx: graph_ops.facts_mentioning(tx, agent, entity_id, extract))

    def neighbours(
        self, agent: str, entity_id: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> list[values.EntityCount]:
        """Entities the agent's live facts mention together with the entity, with how many
        facts mention both, most first."""
        return self._read(lambda tx: graph_ops.neighbours(tx, agent, entity_id, extract))

    # ---- import ------------------------------------------------------------------------
    def import_all(
        self,
        facts: list[Fact],
        records: list[CycleRecord],
        *,
        fact_where: Sequence[str] | None = None,
        record_where: Sequence[str] | None = None,
        on_conflict: values.OnConflict = "refuse",
        progress: Report | None = None,
        probes: Sequence[Probe] = (),
    ) -> values.ImportResult:
        """Insert facts and journal records keeping their ids, all in one transaction
        (rules in `import_ops`). `fact_where`/`record_where` say where each came from
        ("line 7"), for messages; `progress` hears of the work as it goes. `probes` keep
        their ids; one the store holds already (same id, or same agent and query) is
        left as it is."""
        if on_conflict not in values.ON_CONFLICT:
            raise InvalidInput(f"on_conflict must be one of {', '.join(values.ON_CONFLICT)}")
        analyzer = self._read(lambda tx: tx.analyzer)
        batch = import_ops.ImportBatch.prepare(
            facts, records, fact_where, record_where, progress, analyzer, list(probes)
        )
        self._make_room_for_import(batch)
        return self._write(lambda tx: import_ops.import_all(tx, batch, on_conflict, progress))

    # ---- moving a whole store (ADR 0046) ---------------------------------------------------
    def snapshot(self) -> values.StoreSnapshot:
        """Everything a migration carries, read in one transaction (`migrate_ops`)."""
        return self._read(migrate_ops.snapshot)

    def load_snapshot(
        self,
        snapshot: values.StoreSnapshot,
        *,
        allow_non_empty: bool = False,
        origin: str = "",
        progress: Report | None = None,
        embed_model: str | None = None,
    ) -> values.LoadResult:
        """Write `snapshot` in one transaction (`migrate_ops.load`): all or nothing."""
        terms, made_by = migrate_ops.prepare_terms(snapshot, progress)
        self._make_room_for_snapshot(snapshot, terms)
        return self._write(
            lambda tx: migrate_ops.load(
                tx,
                snapshot,
                terms,
                made_by,
                allow_non_empty=allow_non_empty,
                origin=origin,
                progress=progress,
                embed_model=embed_model,
            )
        )

    # ---- embedding vectors (ADR 0034, ADR 0058) ------------------------------------------
    def embed_state(self, agent: str | None = None) -> values.EmbedState:
        """The store's embedding model and dimension, and the backlog and how many facts
        have vectors, of `agent` or of all."""
        return self._read(lambda tx: vector_ops.state(tx, agent))

    def embed_model(self) -> tuple[str | None, int | None]:
        """(model, dimension) of the store's vectors; None for what is not recorded yet.
        Recall asks before every query: one statement."""
        return self._read_one_statement(vector_ops.model)

    def embed_backlog(self, agent: str | None = None) -> int:
        """Live facts (of `agent`, or all) waiting for a vector."""
        return self._read(lambda tx: vector_ops.backlog(tx, agent))

    def start_embedding(self, model: str, dimension: int | None = None) -> int:
        """Make `model` the store's embedding model: vectors of any other go, every live
        fact is queued. Returns how many were queued."""
        if not model.strip():
            raise InvalidInput("an embedding model needs a name")
        return self._write(lambda tx: vector_ops.start(tx, model, dimension))

    def embed_waiting(self, limit: int, agent: str | None = None) -> list[tuple[str, str, str]]:
        """(agent, fact id, text) of up to `limit` facts waiting for a vector."""
        return self._read(lambda tx: vector_ops.waiting(tx, limit, agent))

    def store_vectors(
        self, model: str, rows: list[tuple[str, str, str]], matrix: npt.NDArray[np.float32]
    ) -> tuple[int, int]:
        """Store unit vectors of `model` for facts given as (agent, id, embedded text),
        each only if the fact is still live with that text and queued. (stored, skipped)."""
        if len(rows) != len(matrix):
            raise InvalidInput(f"{len(matrix)} vectors for {len(rows)} facts")
        return self._write(lambda tx: vector_ops.store(tx, model, rows, matrix))

    def nearest(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]] | None:
        """`agent`'s live facts nearest the unit `vector` of `model`, best first; None
        when the store holds no vectors of that model and dimension."""
        return self._read_in_place(lambda tx: vector_ops.nearest(tx, agent, model, vector, limit))

    def facts_close_to(
        self,
        agent: str,
        model: str,
        vectors: npt.NDArray[np.float32],
        floor: float,
        limit: int | None = None,
    ) -> list[dict[str, float]] | None:
        """For each row of `vectors` (unit vectors of `model`), `agent`'s live facts whose
        best row's cosine to it is at least `floor`, with that cosine (with `limit`, the
        `limit` closest, ties by id); None when the store holds no vectors of that model
        and dimension."""
        return self._read_in_place(
            lambda tx: vector_ops.close_to(tx, agent, model, vectors, floor, limit)
        )

    def hold_close_pairs(
        self, agent: str, close: list[tuple[str, dict[str, float]]]
    ) -> list[ReviewProposal]:
        """Hold for review the duplicates and possible updates that the model's cosines
        in `close` ((fact id, {fact id: cosine})) show by meaning: judged in a read
        snapshot (`conflict_ops.judge_close`), then held in a short write that checks
        the facts again (`conflict_ops.raise_judged`), so no writer waits on the judging."""
        if not close:
            return []
        judged = self._read(lambda tx: conflict_ops.judge_close(tx, agent, close))
        if not judged:
            return []
        return self._write(lambda tx: conflict_ops.raise_judged(tx, agent, judged))

    def similarities(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], fact_ids: Sequence[str]
    ) -> dict[str, float]:
        """The cosine of the unit `vector` of `model` to each of `fact_ids` that has a
        vector of it (its best row); the others are left out."""
        wanted = list(fact_ids)
        return self._read_in_place(
            lambda tx: vector_ops.similarities(tx, agent, model, vector, wanted)
        )

    def fact_vectors(self, agent: str, fact_ids: Sequence[str]) -> values.FactVectors | None:
        """The stored rows of each of `agent`'s `fact_ids` holding a vector of the store's
        model (copies; the others are left out); None when the store holds no vectors."""
        wanted = list(fact_ids)
        return self._read_in_place(lambda tx: vector_ops.fact_vectors(tx, agent, wanted))

    def vector_blocks_since(self, agent: str, model: str, since: int) -> values.VectorBlocks | None:
        """`agent`'s vector blocks of `model` changed after store generation `since` (all
        of them for -1), with the numbers of every block: one consistent snapshot, read
        in one statement (ADR 0045). None when the store holds no vectors of that model."""
        return self._read_one_statement(lambda tx: vector_ops.blocks_since(tx, agent, model, since))
