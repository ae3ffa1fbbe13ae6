"""What the rest of the program needs of a memory store, for every backend.

`Store` (LMDB) implements `MemoryStore`; a second backend implements the same methods
with the same meaning (ADR 0021): each method is one transaction, all or nothing, and a
write that finds its inputs stale refuses rather than overwrites. Nothing here names an
engine's environment, transactions or files.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # numpy is imported when vectors are touched, not by every command
    import numpy as np
    import numpy.typing as npt

from graymatter_tui.core.confidence import Confidence
from graymatter_tui.core.errors import GraymatterError
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
    StoreInfo,
)
from graymatter_tui.core.progress import Report
from graymatter_tui.storage import values

T = TypeVar("T")


class KeywordIndex(Protocol):
    """One consistent snapshot of an agent's inverted index of live facts (recall)."""

    def live_count(self, agent: str) -> int:
        """Live facts of `agent`."""
        ...

    def terms(self, text: str) -> list[str]:
        """The index terms of `text` (folded, stemmed in the store's language)."""
        ...

    def document_frequency(self, agent: str, term: str) -> int:
        """Live facts of `agent` holding `term`."""
        ...

    def iter_postings(
        self, agent: str, term: str, newest: int | None = None
    ) -> Iterator[tuple[str, int, int]]:
        """(fact id, term count, fact length in tokens) of every live fact holding `term`,
        oldest first; with `newest`, only that many of the newest facts, newest first."""
        ...

    def posting(self, agent: str, term: str, fact_id: str) -> tuple[int, int] | None:
        """(term count, fact length in tokens) if live fact `fact_id` holds `term`."""
        ...

    def postings_of(
        self, agent: str, term: str, fact_ids: Sequence[str]
    ) -> dict[str, tuple[int, int]]:
        """`posting` for many facts at once: {fact id: (term count, fact length)} of those
        of `fact_ids` that hold `term` (one round trip on a server)."""
        ...

    def find(self, fact_id: str) -> Fact | None: ...

    def live_span(self, agent: str) -> tuple[int, int] | None:
        """`created_at` (epoch ms) of the agent's oldest and newest live facts (first and
        last by id), or None without live facts."""
        ...

    def index_stamp(self, agent: str) -> Hashable | None:
        """A value that differs whenever `agent`'s postings may have changed since it was
        read, for a copy of them kept between snapshots (`recall.keyword_cache`); None
        when this snapshot must not be copied (a write in progress, the past)."""
        ...


class StoreWatch(Protocol):
    """A running watch of a store (`MemoryStore.watch`)."""

    @property
    def mode(self) -> str:
        """How the store is watched now: "listen" (the server tells of each write) or
        "poll" (the generation is read every interval)."""
        ...

    @property
    def alive(self) -> bool:
        """The watch's thread still runs (it ends soon after `stop`)."""
        ...

    def stop(self) -> None:
        """No callback is begun after this returns; it does not wait for the thread."""
        ...


class MemoryStore(Protocol):
    """Facts, tombstones with receipts, the journal of cycles, and the knowledge graph."""

    # Open state
    @property
    def read_only_reason(self) -> str | None: ...
    @property
    def absent(self) -> bool: ...
    @property
    def location(self) -> str:
        """Where the store is, as a person should read it: a directory, or a database URL
        without its password."""
        ...

    @property
    def lockless(self) -> bool:
        """Read without the engine's reader lock, so a concurrent writer could make the
        view inconsistent (only an LMDB store this user cannot write)."""
        ...

    def close(self) -> None: ...
    def __enter__(self) -> MemoryStore: ...
    def __exit__(self, *exc: object) -> None: ...
    def own_files(self) -> tuple[Path, ...]:
        """The local files holding the store (none for a server), never to be overwritten."""
        ...

    def now(self) -> datetime: ...
    def generation(self) -> int: ...
    def watch(
        self,
        moved: Callable[[int], None],
        failed: Callable[[GraymatterError], None],
        *,
        since: int = -1,
        interval: float = 0.5,
    ) -> StoreWatch:
        """Watch for writes from any process, on a thread of the watch's own: `moved(g)`
        once each time the generation is found to differ from the last one known (`since`
        at first; -1 hears the current one at once), however many writes it took;
        `failed(error)` once when the store cannot be read, then `moved` again, even with
        an unchanged generation, once it can. Both are called on the watch's thread.
        LMDB reads the generation every `interval` seconds; PostgreSQL is told of each
        write (LISTEN/NOTIFY) and polls only when it cannot be."""
        ...

    def unused_id(self, moment: datetime) -> str: ...

    # Facts: `find*` return None for an unknown id, `require*` raise NotFound.
    def find(self, fact_id: str) -> Fact | None: ...
    def require(self, fact_id: str) -> Fact: ...
    def find_many(self, fact_ids: Iterable[str]) -> list[Fact | None]: ...
    def list_facts(
        self,
        agent: str | None = None,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[Fact]: ...
    def pinned_facts(self, agent: str, *, limit: int | None = None) -> list[Fact]:
        """The agent's live pinned facts, newest first, at most `limit`."""
        ...

    def fact_ids(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[str]: ...
    def texts(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> tuple[list[str], list[str]]: ...
    def release_mapped_pages(self) -> None: ...
    def confidences(self, agent: str, state: FactState = "live") -> dict[str, str]: ...
    def all_facts(self) -> list[Fact]: ...
    def agents(self) -> list[AgentSummary]: ...
    def counters(self) -> Counters: ...
    def info(self) -> StoreInfo: ...
    def receipts(self, summary_id: str) -> list[str]: ...
    def show(self, fact_id: str) -> values.ShowResult: ...
    def read_index(self, fn: Callable[[KeywordIndex], T]) -> T: ...

    # Memory as it was (`storage.past_ops`)
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
        happened to it since (`past_ops.past_facts`). A journal record of another agent
        than `agent` is refused (Conflict), an unknown one is NotFound, a moment before
        the store existed is InvalidInput."""
        ...

    def read_past_index(self, past: values.PastFacts, fn: Callable[[KeywordIndex], T]) -> T:
        """Run `fn` over the keyword index of the facts live in `past` (`past_index`)."""
        ...

    def in_one_snapshot(self, fn: Callable[[MemoryStore], T]) -> T:
        """Run `fn` over a read-only view of this store whose every read comes from one
        snapshot, so checks spanning several reads see one state while others write."""
        ...

    # Embeddings (ADR 0034)
    def embed_state(self, agent: str | None = None) -> values.EmbedState: ...
    def embed_model(self) -> tuple[str | None, int | None]: ...
    def embed_backlog(self, agent: str | None = None) -> int: ...
    def start_embedding(self, model: str, dimension: int | None = None) -> int: ...
    def embed_waiting(self, limit: int, agent: str | None = None) -> list[tuple[str, str, str]]: ...
    def store_vectors(
        self, model: str, rows: list[tuple[str, str, str]], matrix: npt.NDArray[np.float32]
    ) -> tuple[int, int]: ...
    def nearest(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]] | None: ...
    def facts_close_to(
        self,
        agent: str,
        model: str,
        vectors: npt.NDArray[np.float32],
        floor: float,
        limit: int | None = None,
    ) -> list[dict[str, float]] | None: ...
    def hold_close_pairs(
        self, agent: str, close: list[tuple[str, dict[str, float]]]
    ) -> list[ReviewProposal]: ...
    def similarities(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], fact_ids: Sequence[str]
    ) -> dict[str, float]:
        """The cosine of `vector` to each of `fact_ids` holding a vector of `model` (its
        best row, as `nearest` scores it); the others are left out."""
        ...

    def fact_vectors(self, agent: str, fact_ids: Sequence[str]) -> values.FactVectors | None:
        """The stored rows of each of `fact_ids` holding a vector of the store's model;
        None when the store holds no vectors. Reads no model."""
        ...

    def vector_blocks_since(
        self, agent: str, model: str, since: int
    ) -> values.VectorBlocks | None: ...

    # Curation
    def put(
        self,
        agent: str,
        text: str,
        *,
        pinned: bool = False,
        confidence: Confidence | None = None,
    ) -> Fact: ...
    def remember(
        self,
        agent: str,
        text: str,
        *,
        pinned: bool = False,
        confidence: Confidence | None = None,
    ) -> values.Remembered:
        """`put`, and the duplicate or possible-update items the fact raised for review."""
        ...

    def put_many(
        self, items: Iterable[values.NewFact], *, check_pairs: bool = False
    ) -> list[Fact]: ...
    def set_stem_language(self, language: str, *, progress: Report | None = None) -> int:
        """Re-index every live fact in `language`; the store's stemming language after."""
        ...

    def pin(self, fact_id: str) -> Fact: ...
    def unpin(self, fact_id: str) -> Fact: ...
    def revise(
        self, fact_id: str, text: str, *, confidence: Confidence | None = None
    ) -> tuple[Fact, Fact]: ...
    def retire(self, fact_id: str) -> Fact: ...
    def supersede_text(
        self, agent: str, target: str, text: str, *, confidence: Confidence | None = None
    ) -> tuple[Fact, list[Fact]]: ...
    def retire_text(self, agent: str, target: str) -> list[Fact]: ...
    def pin_text(self, agent: str, target: str, *, pinned: bool = True) -> list[Fact]: ...
    def save_checkpoint(self, agent: str, state: str | None) -> values.Checkpoint: ...
    def latest_checkpoint(self, agent: str) -> values.Checkpoint | None: ...
    def add_alias(self, agent: str, term: str, equivalents: Sequence[str]) -> list[str]: ...
    def aliases(self, agent: str) -> dict[str, list[str]]: ...

    # Probes: recall queries each cycle is checked against before apply (ADR 0039)
    def add_probe(self, agent: str, query: str, k: int = 8) -> tuple[Probe, bool]:
        """(the probe, whether it is new): the same query again is the same probe."""
        ...

    def save_probe(self, agent: str, query: str, k: int = 8) -> tuple[Probe, values.ProbeOutcome]:
        """(the probe as saved, what saving it did: added, updated to a new k, or
        unchanged)."""
        ...

    def probes(self, agent: str | None = None) -> list[Probe]: ...
    def remove_probe(self, probe_id: str) -> Probe: ...
    def probe_schedule(self) -> values.ProbeSchedule: ...
    def set_probe_schedule(self, every: int | None) -> values.ProbeSchedule: ...
    def claim_probe_run(self) -> bool:
        """Whether a scheduled probe run is due; True makes it the caller's to run."""
        ...

    def record_probe_run(
        self,
        agent: str,
        scores: Sequence[values.ProbeScore],
        trigger: str,
        *,
        every_agent: bool = False,
    ) -> CycleRecord:
        """Journal one agent's probes as scored now (a `probe_run` record)."""
        ...

    def trial_apply(
        self, request: values.ApplyRequest, look: Callable[[KeywordIndex], T]
    ) -> values.TrialApply[T]:
        """`look` at the index before and after applying `request`, then change nothing."""
        ...

    def activity(
        self, *, after: int = 0, before: int | None = None, limit: int | None = None
    ) -> list[ActivityEntry]: ...
    def last_activity(self) -> int: ...
    def touch(self, fact_ids: Iterable[str]) -> int: ...
    def delete(self, fact_ids: Iterable[str]) -> list[Fact]: ...
    def is_demo(self) -> bool: ...
    def claim_for_demo(self) -> None: ...

    # The review queue: an agent's change held for a person (ADR 0027)
    def hold_change(
        self,
        agent: str,
        action: str,
        target: str,
        text: str,
        *,
        confidence: Confidence | None = None,
    ) -> ReviewProposal: ...
    def proposals(
        self,
        agent: str | None = None,
        *,
        status: ReviewStatus | None = None,
        limit: int | None = None,
    ) -> list[ReviewProposal]: ...
    def pending_count(self) -> int: ...
    def find_proposal(self, proposal_id: str) -> ReviewProposal | None: ...
    def require_proposal(self, proposal_id: str) -> ReviewProposal: ...
    def approve_proposal(self, proposal_id: str) -> values.ReviewDecision: ...
    def reject_proposal(self, proposal_id: str, reason: str = "") -> values.ReviewDecision: ...

    # The journal and the consolidation cycle
    def records(
        self, agent: str | None = None, *, limit: int | None = None
    ) -> list[CycleRecord]: ...
    def find_record(self, cycle_id: str) -> CycleRecord | None: ...
    def require_record(self, cycle_id: str) -> CycleRecord: ...
    def decay(
        self,
        agent: str,
        half_life_hours: float,
        *,
        dry_run: bool = False,
        journal: values.JournalDecay | None = None,
    ) -> values.DecayOutcome: ...
    def weights(self, agent: str, state: FactState = "live") -> dict[str, float]: ...
    def selection(
        self, agent: str, half_life_hours: float, *, max_batch: int = 0
    ) -> values.Selection: ...
    def apply_consolidation(
        self, request: values.ApplyRequest, record: CycleRecord
    ) -> values.ApplyOutcome: ...
    def prune(self, agent: str, record: CycleRecord) -> values.PruneOutcome: ...
    def save_record(self, record: CycleRecord) -> None: ...
    def revert_refusal(self, cycle_id: str) -> str | None: ...
    def revert(self, cycle_id: str) -> CycleRecord: ...

    # The knowledge graph
    def extract_graph(
        self, agent: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> values.ExtractOutcome: ...
    def decay_graph(self, agent: str, half_life_hours: float) -> values.GraphDecayOutcome: ...
    def graph_size(self, agent: str) -> tuple[int, int]: ...
    def entities(
        self, agent: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> values.EntityIndex:
        """The entities the agent's live facts mention, each with how many live facts
        mention it, most first. Facts no cycle has extracted yet are read with `extract`
        (the newest few thousand; `pending` counts the rest); nothing is written."""
        ...

    def facts_mentioning(
        self, agent: str, entity_id: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> list[str]:
        """Ids of the agent's live facts that mention the entity, newest first."""
        ...

    def neighbours(
        self, agent: str, entity_id: str, extract: Callable[[str], Sequence[values.EntityLike]]
    ) -> list[values.EntityCount]:
        """The entities mentioned together with the entity in the agent's live facts, each
        with how many of those facts mention both, most first."""
        ...

    # Import (export reads `all_facts` and `records`)
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
    ) -> values.ImportResult: ...

    # Moving a whole store to another backend (ADR 0046)
    def snapshot(self) -> values.StoreSnapshot:
        """Everything a migration carries, read in one transaction."""
        ...

    def load_snapshot(
        self,
        snapshot: values.StoreSnapshot,
        *,
        allow_non_empty: bool = False,
        origin: str = "",
        progress: Report | None = None,
        embed_model: str | None = None,
    ) -> values.LoadResult:
        """Write `snapshot` in one transaction: all of it or nothing. A store holding
        anything is refused unless `allow_non_empty` (then any shared id is refused).
        `embed_model`: the model this store's embedder will use, when known; a store
        that would hold another model's vectors then starts on it instead."""
        ...


@runtime_checkable
class VectorBlockSource(Protocol):
    """What a per-process copy of a store's vectors reads to stay current (ADR 0045):
    every `MemoryStore` is one (both backends store vectors, ADR 0058)."""

    def generation(self) -> int: ...
    def nearest(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]] | None: ...
    def similarities(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], fact_ids: Sequence[str]
    ) -> dict[str, float]: ...
    def vector_blocks_since(
        self, agent: str, model: str, since: int
    ) -> values.VectorBlocks | None: ...
