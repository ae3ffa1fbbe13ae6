"""One transaction over a store, as the shared operations see it (ADR 0052).

`Transaction` is written once: the bookkeeping every backend needs (ids, the analyzer,
agent counts, the activity entry, the "change nothing" and "look only" ends) is here,
and each backend fills in the primitives marked abstract, over its own tables. The
operation modules (`fact_ops`, `cycle_ops`, …) are typed against this class, so mypy
checks every call they make on either backend, with no casts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypeVar, get_args

from graymatter_tui.core import clock, provenance
from graymatter_tui.core.errors import NotFound, StoreError
from graymatter_tui.core.model import ActivityAction, ActivityEntry, CycleRecord, Fact, FactState
from graymatter_tui.core.tokens import NO_STEMMING, Analyzer, languages
from graymatter_tui.storage.codec import AgentCounts
from graymatter_tui.storage.ids import new_id
from graymatter_tui.storage.vector_layout import (
    BLOCK_NO,
    EMPTY_ID,
    ID_WIDTH,
    SLOT,
    STAMP,
    agent_prefix,
    block_key,
    free_key,
    slot_key,
)

T = TypeVar("T")

# Keys both backends spell alike: `agent \0 id` for a fact (the graph's extraction
# watermark and decay's vitals use it), and flags of a fact's vitals.
SEP = b"\x00"
FLAG_PINNED = 1
FLAG_TOMBSTONE = 2
# Meta rows: the store's stemming language (schema 4); the embedding model whose vectors
# the store holds and their dimension (ADR 0034).
STEM_LANGUAGE = "stem_language"
EMBED_MODEL = "embed_model"
EMBED_DIM = "embed_dim"
# A counter moved by every committed write that changed postings (ADR 0074): with the
# agent's counts and the stemming language, what a process's copy of the keyword index
# checks before it is trusted. Absent (0) in a store no release since has written to.
INDEX_WRITES = "index_writes"
# The activity feed keeps this many newest entries; an entry keeps this much of its text.
ACTIVITY_KEEP = 100_000
ACTIVITY_TEXT = 500

GraphTable = Literal["graph_nodes", "graph_edges"]
# Tables a migration copies row for row, as (key, value) bytes in the LMDB layout
# (`iter_rows`, `put_rows`); the PostgreSQL backend maps each to its columns (ADR 0046).
CopyTable = Literal[
    "receipts",
    "checkpoints",
    "aliases",
    "proposals",
    "graph_nodes",
    "graph_edges",
    "extracted",
    "lifespans",
]
COPY_TABLES: tuple[CopyTable, ...] = get_args(CopyTable)

_ANALYZERS: dict[str, Analyzer] = {}


def analyzer_for(language: str) -> Analyzer:
    """The analyzer of a stemming language, made once per process."""
    found = _ANALYZERS.get(language)
    if found is None:
        if language not in languages():  # written by a newer release, or damaged
            raise StoreError(
                f"this store is indexed for stemming language {language!r}, which this "
                "graymatter-tui does not know; upgrade graymatter-tui to open it"
            )
        found = _ANALYZERS[language] = Analyzer(language)
    return found


def epoch_ms(stamp: str) -> int:
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return int(clock.parse_time(stamp).timestamp() * 1000)


def fact_key(agent: str, fact_id: str) -> bytes:
    return agent.encode() + SEP + fact_id.encode()


class Transaction(ABC):
    """Every read and write the shared operations make goes through these methods."""

    def __init__(
        self,
        now: datetime,
        *,
        write: bool,
        mint: Callable[[datetime], str] = new_id,
        source: str = provenance.LIBRARY,
    ) -> None:
        self.now = now
        self.write = write
        self.source = source  # who this write is for (provenance), read once per call
        self.discard = False  # set by `unchanged` and `abandon`: roll back, not commit
        self._mint = mint
        self._analyzer: Analyzer | None = None
        # Agent counts this transaction changed, written once at its end (`flush_counts`).
        self._counts: dict[str, AgentCounts] = {}
        # Whether this transaction added or removed postings (the backends' `_index`,
        # `_unindex` and `clear_index` say so): `flush_counts` then moves INDEX_WRITES.
        self._index_moved = False

    # ---- how a write ends ------------------------------------------------------------
    def unchanged(self, result: T) -> T:
        """Return `result` from a write that decided to change nothing: its transaction is
        then rolled back, so the store's generation stays put and other processes see no
        write. Only for a decision made before anything was put."""
        self.discard = True
        return result

    def abandon(self, result: T) -> T:
        """Return `result` from a write run only to look at what it would do: everything
        it put is thrown away, the generation stays put and no other process ever sees it
        (`trial_apply`)."""
        self.discard = True
        return result

    def mint(self, moment: datetime) -> str:
        """A new ULID for `moment`, not yet checked against the store (`ids_in_use`)."""
        return self._mint(moment)

    def new_id(self, moment: datetime | None = None) -> str:
        """A new ULID for `moment` (default: the transaction's time), held by no fact and
        no journal record. A write that runs again gets the same ids in the same order
        when its backend hands it a replaying `mint`. Random ids never collide in
        practice, but seeded ones (GRAYMATTER_ID_SEED with a pinned clock) repeat across
        processes, and a repeated id would overwrite another fact or cycle."""
        when = self.now if moment is None else moment
        while True:
            candidate = self._mint(when)
            if not self.id_in_use(candidate):
                return candidate

    # ---- the analyzer ------------------------------------------------------------------
    @property
    def analyzer(self) -> Analyzer:
        """How this store turns text into index terms: its stemming language is in
        meta (a store without one, written before schema 4, was indexed unstemmed)."""
        if self._analyzer is None:
            self._analyzer = analyzer_for(self.meta_get(STEM_LANGUAGE) or NO_STEMMING)
        return self._analyzer

    def set_analyzer(self, language: str) -> None:
        """Record the store's stemming language; the caller re-indexes (`reindex_ops`)."""
        self.meta_put(STEM_LANGUAGE, language)
        self._analyzer = analyzer_for(language)

    def terms(self, text: str) -> list[str]:
        """The index terms of `text` (a query), made as this store makes them."""
        return self.analyzer.terms(text)

    def index_texts(self, rows: list[tuple[str, str, str]]) -> None:
        """Index live facts given as (agent, id, text) that are not in the index yet."""
        counts = self.analyzer.term_counts
        self._index([(agent, fact_id, counts(text)) for agent, fact_id, text in rows])

    def ids_in_use(self, ids: list[str]) -> set[str]:
        """Those of `ids` a fact or a journal record already has (a backend may ask in
        one round trip)."""
        return {i for i in ids if self.id_in_use(i)}

    def find_many(self, fact_ids: list[str]) -> list[Fact | None]:
        """`find` of each id (a backend may read them in one round trip)."""
        return [self.find(i) for i in fact_ids]

    def meta_many(self, keys: Sequence[str]) -> dict[str, str | None]:
        """`meta_get` of each key (a backend may read them in one round trip)."""
        return {key: self.meta_get(key) for key in keys}

    def meta_put_many(self, items: Sequence[tuple[str, str]]) -> None:
        """`meta_put` of each (key, value) (a backend may send them in one round trip)."""
        for key, value in items:
            self.meta_put(key, value)

    def put_proposals(self, items: Sequence[tuple[str, bytes]]) -> None:
        """`put_proposal` of each (id, record) (a backend may send them in one round trip)."""
        for proposal_id, record in items:
            self.put_proposal(proposal_id, record)

    def proposals_in_use(self, ids: list[str]) -> set[str]:
        """Those of `ids` a review item already has (a backend may ask in one round trip)."""
        return {i for i in ids if self.proposal(i) is not None}

    # ---- lookups that must find ----------------------------------------------------------
    def require(self, fact_id: str) -> Fact:
        """The fact with this id; NotFound when there is none (`find` returns None)."""
        fact = self.find(fact_id)
        if fact is None:
            raise NotFound(f"no fact with id {fact_id}")
        return fact

    def require_record(self, cycle_id: str) -> CycleRecord:
        """The journal record with this id; NotFound when there is none."""
        record = self.find_record(cycle_id)
        if record is None:
            raise NotFound(f"no cycle with id {cycle_id}")
        return record

    # ---- index terms -------------------------------------------------------------------
    def bulk_terms(
        self,
        facts: list[Fact],
        terms: list[dict[str, int]] | None,
        made_by: Analyzer | None,
    ) -> list[dict[str, int]]:
        """Each fact's index terms for `insert_many`: the ones computed before the
        transaction (so the write lock is held for less time) when they were made by this
        store's analyzer, else made again (the store's language changed meanwhile); {} for
        a tombstone."""
        if terms is not None and made_by == self.analyzer:
            return terms
        counts = self.analyzer.term_counts
        return [counts(f.text) if f.is_live else {} for f in facts]

    # ---- agent counts ------------------------------------------------------------------
    def _count(self, fact: Fact | None, sign: int) -> None:
        if fact is None:
            return
        counts = self.agent_counts(fact.agent_id)
        self._counts[fact.agent_id] = counts
        counts.count(fact, sign)

    def agent_counts(self, agent: str) -> AgentCounts:
        pending = self._counts.get(agent)
        return pending if pending is not None else self._stored_counts(agent)

    def live_count(self, agent: str) -> int:
        return self.agent_counts(agent).live

    def live_span(self, agent: str) -> tuple[int, int] | None:
        """`created_at` (epoch ms) of the agent's first and last live facts in id order
        (ids are minted from the creation time, so: its oldest and newest), for recall's
        recency prior; None without live facts. Two key look-ups and two decodes."""
        first = next(self.iter_ids(agent, "live", newest_first=False), None)
        last = next(self.iter_ids(agent, "live", newest_first=True), None)
        if first is None or last is None:
            return None
        oldest, newest = self.find(first), self.find(last)
        if oldest is None or newest is None:
            return None
        return epoch_ms(oldest.created_at), epoch_ms(newest.created_at)

    def set_weight_sum(self, agent: str, weight_sum: float) -> None:
        counts = self.agent_counts(agent)
        counts.weight_sum = weight_sum
        self._counts[agent] = counts

    def flush_counts(self) -> None:
        """Write what this transaction changed in agent counts (an agent with no facts
        left has no row), before the backend commits."""
        for agent, counts in self._counts.items():
            if counts.live == 0 and counts.tombstones == 0:
                self._put_counts(agent, None)
                continue
            if counts.live == 0:
                counts.weight_sum = 0.0
            self._put_counts(agent, counts)
        self._counts.clear()
        if self._index_moved:
            self.bump(INDEX_WRITES)
            self._index_moved = False

    def index_stamp(self, agent: str) -> Hashable | None:
        """What changes whenever `agent`'s postings may have (`KeywordIndex.index_stamp`):
        the store's count of index writes, for writers of this release, and the agent's
        counts and the stemming language, which any release's write that changes the
        index also changes. None in a write transaction: its own changes are not counted
        until it ends."""
        if self.write:
            return None
        counts = self.agent_counts(agent)
        return (
            self.meta_int(INDEX_WRITES),
            self.analyzer.language,
            counts.live,
            counts.tombstones,
            counts.pinned,
            counts.weight_sum,
        )

    # ---- the activity feed -------------------------------------------------------------
    def log(
        self,
        action: ActivityAction,
        agent: str,
        *,
        text: str = "",
        fact_id: str = "",
        cycle_id: str = "",
        count: int = 1,
    ) -> None:
        """Add this write to the activity feed, under the next write number; the oldest
        entry beyond `ACTIVITY_KEEP` goes in the same transaction, so the feed stays
        bounded however long agents write."""
        if not self.keeps_activity:
            return
        seq = self.bump("activity_seq")
        entry = ActivityEntry(
            seq=seq,
            at=clock.format_time(self.now),
            source=self.source,
            agent_id=agent,
            action=action,
            text=text[:ACTIVITY_TEXT],
            fact_id=fact_id,
            cycle_id=cycle_id,
            count=count,
        )
        self._append_activity(entry, seq - ACTIVITY_KEEP if seq > ACTIVITY_KEEP else None)

    def last_activity(self) -> int:
        """The write number of the newest activity entry (0: none yet)."""
        return self.meta_int("activity_seq")

    @property
    def keeps_activity(self) -> bool:
        """Whether this store has a feed to write to (an older store read as it is may
        not)."""
        return True

    # ==== the primitives each backend supplies ===========================================
    # ---- facts -------------------------------------------------------------------------
    @abstractmethod
    def id_in_use(self, value: str) -> bool:
        """Whether a fact or a journal record already has this id."""

    @abstractmethod
    def agent_of(self, fact_id: str) -> str | None: ...

    @abstractmethod
    def find(self, fact_id: str) -> Fact | None: ...

    @abstractmethod
    def write_fact(self, new: Fact, old: Fact | None) -> None:
        """Insert or replace one fact, keeping its indexes and its agent's counts (via
        `_count`) in step."""

    @abstractmethod
    def insert_many(
        self,
        facts: list[Fact],
        terms: list[dict[str, int]] | None = None,
        made_by: Analyzer | None = None,
    ) -> None:
        """Insert new facts in bulk; `terms` are their term counts as `made_by` made them
        (recomputed when that is not this store's analyzer)."""

    @abstractmethod
    def delete_fact(self, fact: Fact) -> None: ...

    @abstractmethod
    def _stored_counts(self, agent: str) -> AgentCounts:
        """The agent's counts as committed."""

    @abstractmethod
    def _put_counts(self, agent: str, counts: AgentCounts | None) -> None:
        """Store an agent's counts (None: the agent has no facts left)."""

    @abstractmethod
    def agent_names(self) -> list[str]: ...

    # ---- iteration -----------------------------------------------------------------------
    @abstractmethod
    def iter_ids(
        self, agent: str, state: FactState, *, before: str | None = None, newest_first: bool = True
    ) -> Iterator[str]: ...

    @abstractmethod
    def iter_facts(
        self, agent: str, state: FactState, *, before: str | None = None, newest_first: bool = True
    ) -> Iterator[Fact]: ...

    @abstractmethod
    def iter_texts(
        self, agent: str, state: FactState, *, before: str | None = None
    ) -> Iterator[tuple[str, str]]: ...

    @abstractmethod
    def iter_vitals(self, agent: str) -> Iterator[tuple[bytes, float, int, int]]:
        """(fact key, weight, accessed epoch ms, flags) of every fact of `agent`, in id
        order."""

    @abstractmethod
    def reweigh(
        self, agent: str, weigh: Callable[[bytes, float, int, int], float], *, write: bool
    ) -> None:
        """Call `weigh` for every fact of `agent` in id order; with `write`, store the
        weights it changed (decay)."""

    # ---- the recall index ------------------------------------------------------------------
    @abstractmethod
    def _index(self, facts: list[tuple[str, str, dict[str, int]]]) -> None:
        """Postings of live facts given as (agent, id, term counts)."""

    @abstractmethod
    def clear_index(self) -> None:
        """Empty the postings and term tables (a re-index follows in this transaction)."""

    @abstractmethod
    def document_frequency(self, agent: str, term: str) -> int: ...

    @abstractmethod
    def iter_postings(
        self, agent: str, term: str, newest: int | None = None
    ) -> Iterator[tuple[str, int, int]]:
        """(fact id, term count, fact length) of every live fact of `agent` holding
        `term`, oldest first; with `newest`, only that many of the newest, newest first."""

    @abstractmethod
    def posting(self, agent: str, term: str, fact_id: str) -> tuple[int, int] | None:
        """(term count, fact length) if the live fact `fact_id` of `agent` holds `term`."""

    @abstractmethod
    def postings_of(
        self, agent: str, term: str, fact_ids: Sequence[str]
    ) -> dict[str, tuple[int, int]]: ...

    # ---- meta, counters, receipts, journal -----------------------------------------------
    @abstractmethod
    def meta_get(self, key: str) -> str | None: ...

    @abstractmethod
    def meta_put(self, key: str, value: str) -> None: ...

    @abstractmethod
    def meta_int(self, key: str) -> int: ...

    @abstractmethod
    def bump(self, key: str, amount: int = 1) -> int: ...

    @abstractmethod
    def receipts(self, summary_id: str) -> list[str]: ...

    @abstractmethod
    def put_receipts(self, summary_id: str, consumed: list[str]) -> None: ...

    @abstractmethod
    def delete_receipts(self, summary_id: str) -> None: ...

    @abstractmethod
    def find_record(self, cycle_id: str) -> CycleRecord | None: ...

    @abstractmethod
    def put_record(self, record: CycleRecord) -> None: ...

    @abstractmethod
    def iter_records(self, *, newest_first: bool = True) -> Iterator[CycleRecord]:
        """Every journal record (cycle ids are ULIDs, so id order is time order)."""

    @abstractmethod
    def count_facts(self) -> int: ...

    @abstractmethod
    def count_records(self) -> int: ...

    # ---- the knowledge graph -------------------------------------------------------------
    @abstractmethod
    def extracted(self, key: bytes) -> bool:
        """Whether the fact under `key` (a fact key) has had its text extracted."""

    @abstractmethod
    def put_extracted(self, key: bytes, signature: bytes) -> None:
        """Mark the fact under `key` extracted: `signature` is its text's SHA-256 (hex),
        then the ids of the entities it mentions (`graph_ops.watermark`)."""

    @abstractmethod
    def extracted_rows(self, agent: str) -> list[tuple[bytes, bytes]]:
        """(fact key `agent \\0 id`, what `put_extracted` stored) of every extracted fact
        of `agent`, live or not, in key order."""

    def unextracted(self, agent: str) -> tuple[int, list[str]]:
        """(how many live facts `agent` has, the ids of those not yet extracted, oldest
        first). A backend may answer it faster than one `extracted` per fact."""
        head = agent.encode() + SEP
        live = list(self.iter_ids(agent, "live", newest_first=False))
        return len(live), [i for i in live if not self.extracted(head + i.encode())]

    @abstractmethod
    def graph_row(self, table: GraphTable, key: bytes) -> bytes | None: ...

    @abstractmethod
    def put_graph_row(self, table: GraphTable, key: bytes, value: bytes) -> None: ...

    @abstractmethod
    def delete_graph_row(self, table: GraphTable, key: bytes) -> None: ...

    @abstractmethod
    def graph_rows(self, table: GraphTable, agent: str) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of one agent's rows of a graph table, in key order."""

    # ---- checkpoints, aliases, probes, the review queue ------------------------------------
    @abstractmethod
    def put_checkpoint(self, agent: str, checkpoint_id: str, record: bytes) -> None: ...

    @abstractmethod
    def latest_checkpoint(self, agent: str) -> tuple[str, bytes] | None:
        """(id, record) of the newest checkpoint of `agent` (ids are time-ordered)."""

    @abstractmethod
    def put_alias(self, agent: str, term: str, record: bytes) -> None: ...

    @abstractmethod
    def iter_aliases(self, agent: str) -> Iterator[tuple[str, bytes]]:
        """(term, record) of every alias of `agent`, in term order."""

    @abstractmethod
    def put_probe(self, agent: str, probe_id: str, record: bytes) -> None: ...

    @abstractmethod
    def delete_probe(self, agent: str, probe_id: str) -> None: ...

    @abstractmethod
    def iter_probes(self, agent: str | None) -> Iterator[tuple[str, str, bytes]]:
        """(agent, probe id, record) of `agent`'s probes (every agent's when None), by
        agent, then id."""

    @abstractmethod
    def put_proposal(self, proposal_id: str, record: bytes) -> None: ...

    @abstractmethod
    def proposal(self, proposal_id: str) -> bytes | None: ...

    @abstractmethod
    def iter_proposals(self, *, newest_first: bool = True) -> Iterator[bytes]: ...

    # ---- the activity feed -------------------------------------------------------------
    @abstractmethod
    def _append_activity(self, entry: ActivityEntry, drop: int | None) -> None:
        """Store `entry` under its write number, and drop the entry numbered `drop`."""

    @abstractmethod
    def iter_activity(
        self, *, after: int = 0, before: int | None = None
    ) -> Iterator[ActivityEntry]:
        """Activity entries newest first, with write numbers in (after, before)."""

    @abstractmethod
    def put_activity(self, entries: list[ActivityEntry]) -> None:
        """Activity entries under their own write numbers (a migration's copy of another
        store's feed); the caller sets `activity_seq`."""

    # ---- when facts stopped being live (schema 6; `lifespan_ops`) --------------------------
    @property
    def keeps_lifespans(self) -> bool:
        """Whether this store records when facts stop being live (an older store read as
        it is does not: its endings are derived when asked)."""
        return True

    @abstractmethod
    def lifespan(self, agent: str, fact_id: str) -> bytes | None:
        """The encoded endings of one fact (`lifespan_ops`), or None."""

    @abstractmethod
    def put_lifespan(self, agent: str, fact_id: str, value: bytes) -> None: ...

    @abstractmethod
    def iter_lifespans(self, agent: str | None) -> Iterator[tuple[str, str, bytes]]:
        """(agent, fact id, encoded endings) of `agent`'s rows (every agent's when None),
        by agent, then id."""

    # ---- whole tables, for a migration (ADR 0046) --------------------------------------
    @abstractmethod
    def iter_rows(self, table: CopyTable) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every row of `table` in the LMDB layout and key order."""

    @abstractmethod
    def put_rows(self, table: CopyTable, rows: list[tuple[bytes, bytes]]) -> None:
        """Write rows as `iter_rows` gives them."""


class VectorBlockRows(NamedTuple):
    """What `VectorTransaction.vector_blocks` reads in one go: the store's generation,
    its embedding model and dimension, and (block number, data, ids) of every block of
    one agent, data and ids given only for the blocks changed since the generation
    asked about (None for the others, and no blocks when the model is not the one
    asked about)."""

    generation: int
    model: str | None
    dimension: int | None
    blocks: list[tuple[int, bytes | None, bytes | None]]


class VectorTransaction(Transaction):
    """A transaction of a backend that stores embedding vectors (ADR 0034, ADR 0058):
    the rows of the per-agent blocks (`vector_layout`, the same bytes on every backend)
    and the queue of facts waiting for one. The write path's queueing (`requeue`,
    `drop_vector`) is written here once; a backend supplies the rows. The methods with a
    body here answer with the single-row primitives; a backend that pays a round trip per
    call answers them in one."""

    def __init__(
        self,
        now: datetime,
        *,
        write: bool,
        mint: Callable[[datetime], str] = new_id,
        source: str = provenance.LIBRARY,
        embedding: bool | None = None,
    ) -> None:
        super().__init__(now, write=write, mint=mint, source=source)
        # Whether the store embeds (a model is recorded): None until first asked, unless
        # the backend read it with something else it had to read anyway.
        self._embedding = embedding

    # ---- the write path's queueing -------------------------------------------------------
    @property
    def embedding_on(self) -> bool:
        """Whether this store embeds (it has a model recorded); read once per transaction.
        A store that never embeds pays nothing more per write than this one read."""
        if self._embedding is None:
            self._embedding = self.has_vector_tables() and self.meta_get(EMBED_MODEL) is not None
        return self._embedding

    def embedding_started(self) -> None:
        """A model was just recorded in this transaction: writes from now on queue."""
        self._embedding = True

    @contextmanager
    def queueing_held(self) -> Iterator[None]:
        """Facts written inside are not queued for a vector (a migration brings the
        source's vectors and queue instead); afterwards the store's model decides again."""
        self._embedding = False
        try:
            yield
        finally:
            self._embedding = None

    def requeue(self, new: Fact | None, old: Fact | None) -> None:
        """Keep the vectors and the queue in step with one fact's write (`write_fact`,
        `delete_fact`, when `embedding_on`): a fact that stops being live, or whose text
        changes, loses its vector and its place in the queue; a fact that becomes live, or
        gets a new text, waits for one."""
        old_text = old.text if old is not None and old.is_live else None
        new_text = new.text if new is not None and new.is_live else None
        if old_text == new_text:
            return
        if old is not None and old_text is not None:
            self.drop_vector(old.agent_id, old.id)
            self.queue_delete(old.agent_id, old.id)
        if new is not None and new_text is not None:
            self.queue_put(new.agent_id, new.id)

    def drop_vector(self, agent: str, fact_id: str) -> bool:
        """Free every row holding one of `fact_id`'s vectors (a row per sentence, ADR
        0038): their ids are zeroed, so no search returns them, and later writes reuse
        the slots. False when it had none."""
        key = slot_key(agent, fact_id)
        value = self.vector_row(key)
        if value is None:
            return False
        slots = [SLOT.unpack_from(value, i) for i in range(0, len(value), SLOT.size)]
        blocks = sorted({block for block, _ in slots})
        id_keys = [block_key(agent, b"i", block) for block in blocks]
        held = self.vector_rows_many([*id_keys, free_key(agent)])
        puts: list[tuple[bytes, bytes]] = []
        for block, ids_key in zip(blocks, id_keys, strict=True):
            ids = bytearray(held.get(ids_key) or b"")
            for _, row in (slot for slot in slots if slot[0] == block):
                ids[row * ID_WIDTH : (row + 1) * ID_WIDTH] = EMPTY_ID
            puts += [(ids_key, bytes(ids)), self.stamp_row(agent, block)]
        puts.append((free_key(agent), (held.get(free_key(agent)) or b"") + value))
        self.delete_vector_row(key)
        self.put_vector_rows(puts)
        return True

    def stamp_row(self, agent: str, block: int) -> tuple[bytes, bytes]:
        """The row recording that this write changed `block` of `agent`'s vectors: the
        generation the store will have once it commits (ADR 0045)."""
        return block_key(agent, b"c", block), STAMP.pack(self.committing_generation())

    # ---- the primitives --------------------------------------------------------------------
    @abstractmethod
    def has_vector_tables(self) -> bool: ...

    @abstractmethod
    def committing_generation(self) -> int:
        """The store's generation once this write commits."""

    @abstractmethod
    def vector_row(self, key: bytes) -> bytes | None: ...

    @abstractmethod
    def put_vector_row(self, key: bytes, value: bytes) -> None: ...

    @abstractmethod
    def delete_vector_row(self, key: bytes) -> None: ...

    @abstractmethod
    def vector_rows(self, prefix: bytes, *, keys_only: bool = False) -> Iterator[tuple[bytes, Any]]:
        """(key, value) of the rows under `prefix` (every row for b""), in key order; the
        value is None with `keys_only`, and may be a view valid only until the next step
        (LMDB's map)."""

    @abstractmethod
    def last_vector_key(self, prefix: bytes) -> bytes | None:
        """The greatest key under `prefix`."""

    @abstractmethod
    def clear_embeddings(self) -> None:
        """Empty the vectors and the queue, and forget the dimension (a switch of model
        follows)."""

    @abstractmethod
    def queue_put(self, agent: str, fact_id: str) -> None: ...

    @abstractmethod
    def queue_put_many(self, entries: list[tuple[str, str]]) -> None:
        """Queue facts given as (agent, fact id), none of them queued yet."""

    @abstractmethod
    def queued(self, agent: str, fact_id: str) -> bool: ...

    @abstractmethod
    def queue_delete(self, agent: str, fact_id: str) -> None: ...

    @abstractmethod
    def queue_size(self, agent: str | None = None) -> int:
        """Facts queued (of `agent`, or all)."""

    @abstractmethod
    def iter_queue(self, agent: str | None = None) -> Iterator[tuple[str, str]]:
        """(agent, fact id) of queued facts in key order (of one agent, or all)."""

    # ---- the same, in one call (a backend may answer each in one round trip) --------------
    def vector_rows_many(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """The rows of those `keys` that exist."""
        found = {}
        for key in keys:
            value = self.vector_row(key)
            if value is not None:
                found[key] = value
        return found

    def put_vector_rows(self, rows: Sequence[tuple[bytes, bytes]]) -> None:
        for key, value in rows:
            self.put_vector_row(key, value)

    def insert_vector_rows(self, rows: Sequence[tuple[bytes, bytes]]) -> None:
        """Rows none of whose keys exists yet (a migration's copy)."""
        self.put_vector_rows(rows)

    def count_vector_rows(self, prefix: bytes) -> int:
        return sum(1 for _ in self.vector_rows(prefix, keys_only=True))

    def queued_many(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of `entries` (agent, fact id) that are queued."""
        return {entry for entry in entries if self.queued(*entry)}

    def queue_delete_many(self, entries: Sequence[tuple[str, str]]) -> None:
        for agent, fact_id in entries:
            self.queue_delete(agent, fact_id)

    def vector_blocks(self, agent: str, model: str, since: int) -> VectorBlockRows:
        """`agent`'s blocks as `VectorBlockRows` says, when the store's model is `model`:
        a block counts as changed when its stamp is after generation `since`, or when it
        has none (written before stamps existed). A backend may answer in one statement."""
        name = self.meta_get(EMBED_MODEL)
        raw_dimension = self.meta_get(EMBED_DIM)
        dimension = int(raw_dimension) if raw_dimension else None
        generation = self.meta_int("generation")
        if name != model:
            return VectorBlockRows(generation, name, dimension, [])
        prefix = agent_prefix(agent, b"b")
        stamp_prefix = agent_prefix(agent, b"c")
        stamps = {
            BLOCK_NO.unpack(key[len(stamp_prefix) :])[0]: STAMP.unpack(bytes(value))[0]
            for key, value in self.vector_rows(stamp_prefix)
        }
        blocks: list[tuple[int, bytes | None, bytes | None]] = []
        for key, _ in self.vector_rows(prefix, keys_only=True):
            block = BLOCK_NO.unpack(key[len(prefix) :])[0]
            if stamps.get(block, since + 1) > since:
                data = self.vector_row(key) or b""
                ids = self.vector_row(block_key(agent, b"i", block)) or b""
                blocks.append((block, data, ids))
            else:
                blocks.append((block, None, None))
        return VectorBlockRows(generation, name, dimension, blocks)
