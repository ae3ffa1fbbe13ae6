"""The memory store over PostgreSQL: `PgStore.open(url)`.

Each method is one SQL transaction running the same operation functions as the LMDB
backend (`store.fact_ops`, `store.reindex_ops`) over a `PgTx`. Writers take the
generation row's lock first, so writes are serialised as LMDB serialises them and READ
COMMITTED sees every earlier write; reads run in one REPEATABLE READ snapshot (ADR 0041).

Every `MemoryStore` method is implemented (mypy checks `_implements_memory_store`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from graymatter_tui.backends.postgres import bulk_ops, connect, retry, schema
from graymatter_tui.backends.postgres.driver import psycopg_modules
from graymatter_tui.backends.postgres.rows import COLUMNS, FACTS, from_row
from graymatter_tui.backends.postgres.tx import STATE_SQL, PgTx
from graymatter_tui.core import clock, provenance
from graymatter_tui.core.errors import GraymatterError, InvalidInput, ReadOnlyStore, StoreError
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
from graymatter_tui.core.store_url import StoreUrl, parse_store_url
from graymatter_tui.core.textsafe import validate_agent, validate_text
from graymatter_tui.core.tokens import check_language, language_from_env
from graymatter_tui.storage import (
    ON_CONFLICT,
    ApplyOutcome,
    ApplyRequest,
    Checkpoint,
    DecayOutcome,
    EmbedState,
    EntityLike,
    ExtractOutcome,
    GraphDecayOutcome,
    ImportResult,
    JournalDecay,
    KeywordIndex,
    LoadResult,
    MemoryStore,
    NewFact,
    OnConflict,
    ProbeOutcome,
    PruneOutcome,
    ReviewDecision,
    Selection,
    ShowResult,
    StoreSnapshot,
    TrialApply,
    checkpoint_ops,
    cycle_ops,
    fact_ops,
    graph_ops,
    import_ops,
    migrate_ops,
    probe_ops,
    queries,
    reindex_ops,
    review_ops,
    validate_probe,
    validate_probe_id,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from graymatter_tui.backends.lmdb.tx import Tx

T = TypeVar("T")
NO_VECTORS = "the PostgreSQL backend does not store embedding vectors yet (keyword recall only)"


def _as_tx(tx: PgTx) -> Tx:
    """The shared operation functions are typed against LMDB's `Tx`; `PgTx` has the same
    methods with the same meaning (tests/conformance/test_tx_surface.py checks)."""
    return cast("Tx", tx)


class PgStore:
    def __init__(
        self,
        url: StoreUrl,
        pool: Any,
        clock_fn: Callable[[], datetime] | None = None,
        connect_timeout: float = connect.CONNECT_TIMEOUT,
    ) -> None:
        self.url = url
        self._pool = pool
        self._timeout = connect_timeout
        self._clock = clock_fn or clock.now
        self._closed = False
        self._read_only = False

    # ---- opening and closing ----------------------------------------------------------
    @classmethod
    def open(
        cls,
        url: str | StoreUrl,
        *,
        clock_fn: Callable[[], datetime] | None = None,
        stem_language: str | None = None,
        connect_timeout: float | None = None,
        read_only: bool = False,
    ) -> PgStore:
        """Connect to the database `url` names, create or upgrade its schema (refusing a
        newer one or another application's database) and open a pool of connections.
        `read_only` creates and upgrades nothing: a database without a store, or with an
        older schema, is refused, and every write is refused with ReadOnlyStore."""
        target = parse_store_url(url) if isinstance(url, str) else url
        if target.backend != "postgresql":
            raise InvalidInput(f"{target.redacted} is not a PostgreSQL URL")
        language = check_language(stem_language) if stem_language else language_from_env()
        timeout = connect_timeout or connect.connect_timeout_from_env()
        psycopg, _ = psycopg_modules()
        conn = connect.connect_once(target, timeout)
        try:
            _check_server(target, conn.info.server_version)
            if read_only:
                _check_readable(target, schema.inspect(conn))
            else:
                created = clock.format_time((clock_fn or clock.now)())
                schema.prepare(conn, created_at=created, language=language)
        except psycopg.Error as exc:
            raise connect.describe(exc, target) from None
        finally:
            conn.close()
        opened = cls(target, connect.open_pool(target, timeout), clock_fn, timeout)
        opened._read_only = read_only
        return opened

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def read_only_reason(self) -> str | None:
        """Why writes are refused, or None for a writable store."""
        return "opened read-only" if self._read_only else None

    @property
    def absent(self) -> bool:
        return False

    @property
    def location(self) -> str:
        return self.url.redacted

    @property
    def lockless(self) -> bool:
        return False

    def own_files(self) -> tuple[Path, ...]:
        """None: the store lives on a server."""
        return ()

    def now(self) -> datetime:
        return self._clock()

    # ---- transactions ------------------------------------------------------------------
    def _run(self, fn: Callable[[Any, retry.Attempt], T], *, write: bool) -> T:
        """`fn` over a pooled connection, run again (up to `retry.TRIES` times in all)
        when the server rolled it back for contention or the connection broke before
        COMMIT was sent; a COMMIT whose answer was lost is resolved, never re-run blindly
        (ADR 0047)."""
        if self._closed:
            raise StoreError(f"the PostgreSQL store {self.url.redacted} is closed")
        psycopg, psycopg_pool = psycopg_modules()
        for tries in range(1, retry.TRIES + 1):
            attempt = retry.Attempt()
            try:
                return self._attempt(fn, attempt)
            except GraymatterError:
                raise
            except psycopg_pool.PoolTimeout as exc:  # the pool already waited its timeout
                raise connect.describe(exc, self.url) from None
            except psycopg.Error as exc:
                if write and attempt.lost and attempt.committing:
                    status = self._commit_status(attempt.xid)
                    if status == "committed":
                        return cast("T", attempt.result)
                    if status is None:
                        raise StoreError(
                            f"cannot use the PostgreSQL store {self.url.redacted}: the "
                            "connection was lost while committing and the server could not "
                            "say whether the write landed; check before repeating it"
                        ) from None
                    attempt.committing = False  # aborted: nothing landed, run it again
                cause = retry.retry_cause(exc, attempt)
                if cause is None:
                    raise connect.describe(exc, self.url) from None
                if tries == retry.TRIES:
                    raise StoreError(
                        f"cannot use the PostgreSQL store {self.url.redacted}: gave up after "
                        f"{tries} tries: the server kept reporting {cause}"
                        + ("; nothing was written" if write else "")
                    ) from None
            time.sleep(retry.delay(tries))
        raise AssertionError("unreachable: the last try returns or raises")

    def _attempt(self, fn: Callable[[Any, retry.Attempt], T], attempt: retry.Attempt) -> T:
        psycopg, _ = psycopg_modules()
        with self._pool.connection() as conn:
            try:
                return fn(conn, attempt)
            except psycopg.Error:
                attempt.lost = bool(conn.broken)
                raise

    def _commit_status(self, xid: str | None) -> str | None:
        """What became of a transaction whose COMMIT answer was lost, asked on a fresh
        connection; None when that cannot be known."""
        if xid is None:
            return None
        psycopg, _ = psycopg_modules()
        try:
            conn = connect.connect_once(self.url, self._timeout)
        except StoreError:
            return None
        try:
            return retry.commit_status(conn, xid)
        except psycopg.Error:  # e.g. an id the server does not know after a crash
            return None
        finally:
            conn.close()

    def _read(self, fn: Callable[[PgTx], T]) -> T:
        """`fn` over one snapshot: REPEATABLE READ, READ ONLY."""
        now = self._clock()

        def run(conn: Any, attempt: retry.Attempt) -> T:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return fn(PgTx(conn, now, write=False))

        return self._run(run, write=False)

    def _write(self, fn: Callable[[PgTx], T]) -> T:
        """`fn` in one transaction that first takes the generation row's lock: one writer
        at a time, every earlier write visible (READ COMMITTED), all or nothing. The same
        statement returns the transaction's id, so a lost COMMIT can be resolved."""
        if self._read_only:
            raise ReadOnlyStore(
                f"the PostgreSQL store {self.url.redacted} was opened read-only; "
                "nothing was written"
            )
        now = self._clock()
        source = provenance.current()
        psycopg, _ = psycopg_modules()

        def run(conn: Any, attempt: retry.Attempt) -> T:
            # Said in BEGIN (no extra round trip), not left to the database's default: a
            # SERIALIZABLE default would fail every writer that waited for the lock.
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            with conn.transaction():
                row = conn.execute(
                    "UPDATE counters SET value = value + 1 WHERE name = 'generation' "
                    "RETURNING pg_current_xact_id()::text"
                ).fetchone()
                attempt.xid = row[0] if row else None
                tx = PgTx(conn, now, write=True, source=source)
                result = fn(tx)
                if tx.discard:
                    raise psycopg.Rollback()
                tx.flush_counts()
                # Leaving the block sends COMMIT: from here a lost connection leaves the
                # outcome unknown until the server is asked.
                attempt.result = result
                attempt.committing = True
            return result

        return self._run(run, write=True)

    def read_index(self, fn: Callable[[KeywordIndex], T]) -> T:
        return self._read(fn)

    def in_one_snapshot(self, fn: Callable[[MemoryStore], T]) -> T:
        def run(tx: PgTx) -> T:
            view = _OneSnapshot.__new__(_OneSnapshot)
            view.__dict__.update(self.__dict__)
            view._tx = tx
            return fn(view)

        return self._read(run)

    # ---- reads -------------------------------------------------------------------------
    def generation(self) -> int:
        return self._read(lambda tx: tx.meta_int("generation"))

    def is_demo(self) -> bool:
        return self._read(lambda tx: tx.meta_get(fact_ops.DEMO_KEY) is not None)

    def unused_id(self, moment: datetime) -> str:
        return self._read(lambda tx: tx.new_id(moment))

    def find(self, fact_id: str) -> Fact | None:
        return self._read(lambda tx: tx.find(fact_id))

    def require(self, fact_id: str) -> Fact:
        return self._read(lambda tx: tx.require(fact_id))

    def find_many(self, fact_ids: Iterable[str]) -> list[Fact | None]:
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
        """Facts newest first; keyset paging by `before` (the last id of a page)."""
        where = ["TRUE" + STATE_SQL[state]]
        params: list[Any] = []
        if agent is not None:
            where.append("agent_id = %s")
            params.append(agent)
        if before is not None:  # bound on both joined tables (see PgTx._pages)
            where.append("id < %s AND weights.fact_id < %s")
            params += [before, before]
        sql = f"SELECT {COLUMNS} FROM {FACTS} WHERE {' AND '.join(where)} ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(max(limit, 0))

        def run(tx: PgTx) -> list[Fact]:
            return [from_row(row) for row in tx.conn.execute(sql, params).fetchall()]

        return self._read(run)

    def fact_ids(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[str]:
        return self._read(lambda tx: list(islice(tx.iter_ids(agent, state, before=before), limit)))

    def texts(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> tuple[list[str], list[str]]:
        rows = self._read(
            lambda tx: list(islice(tx.iter_texts(agent, state, before=before), limit))
        )
        return [r[0] for r in rows], [r[1] for r in rows]

    # ---- embeddings (ADR 0034): not on this backend yet; recall stays keyword-only ----
    def embed_state(self) -> EmbedState:
        return EmbedState(model=None, dimension=None, backlog=0, vectors=0)

    def embed_model(self) -> tuple[str | None, int | None]:
        return None, None

    def embed_backlog(self, agent: str | None = None) -> int:
        return 0

    def start_embedding(self, model: str, dimension: int | None = None) -> int:
        raise StoreError(NO_VECTORS)

    def embed_waiting(self, limit: int, agent: str | None = None) -> list[tuple[str, str, str]]:
        return []

    def store_vectors(
        self, model: str, rows: list[tuple[str, str, str]], matrix: npt.NDArray[np.float32]
    ) -> tuple[int, int]:
        raise StoreError(NO_VECTORS)

    def nearest(
        self, agent: str, model: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]] | None:
        """None: this store holds no vectors, so recall ranks by keywords and recency."""
        return None

    def release_mapped_pages(self) -> None:
        """Nothing is mapped: the store lives on a server."""

    def all_facts(self) -> list[Fact]:
        """Every fact, by agent then oldest first (exports)."""

        def run(tx: PgTx) -> list[Fact]:
            rows = tx.conn.execute(f"SELECT {COLUMNS} FROM {FACTS} ORDER BY agent_id, id")
            return [from_row(row) for row in rows.fetchall()]

        return self._read(run)

    def agents(self) -> list[AgentSummary]:
        def run(tx: PgTx) -> list[AgentSummary]:
            rows = tx.conn.execute(
                "SELECT agent_id, live, tombstones, pinned, weight_sum FROM agent_counts "
                "ORDER BY agent_id"
            ).fetchall()
            return [
                AgentSummary(
                    agent_id=name,
                    live_facts=live,
                    tombstones=tombs,
                    pinned=pinned,
                    avg_weight=round(weight / live, 6) if live else 0.0,
                )
                for name, live, tombs, pinned, weight in rows
            ]

        return self._read(run)

    def counters(self) -> Counters:
        def run(tx: PgTx) -> Counters:
            return Counters(
                consolidations=tx.meta_int("consolidations"),
                facts_consolidated=tx.meta_int("facts_consolidated"),
                reverts=tx.meta_int("reverts"),
                cycles=tx.meta_int("cycles"),
            )

        return self._read(run)

    def info(self) -> StoreInfo:
        def run(tx: PgTx) -> StoreInfo:
            version = tx.conn.execute("SHOW server_version").fetchone()[0]
            size = tx.conn.execute("SELECT pg_database_size(current_database())").fetchone()
            return StoreInfo(
                data_dir=self.url.redacted,
                schema_version=int(tx.meta_get("schema_version") or 0),
                engine=f"postgresql {version}",
                generation=tx.meta_int("generation"),
                file_bytes=int(size[0]),
                map_size=0,
                map_used=0,
                created_at=tx.meta_get("created_at") or "",
                stem_language=tx.analyzer.language,
            )

        return self._read(run)

    def receipts(self, summary_id: str) -> list[str]:
        return self._read(lambda tx: tx.receipts(summary_id))

    def show(self, fact_id: str) -> ShowResult:
        return self._read(lambda tx: queries.show(_as_tx(tx), fact_id))

    def records(self, agent: str | None = None, *, limit: int | None = None) -> list[CycleRecord]:
        def run(tx: PgTx) -> list[CycleRecord]:
            found = (r for r in tx.iter_records() if agent is None or r.agent_id == agent)
            return list(islice(found, limit))

        return self._read(run)

    def find_record(self, cycle_id: str) -> CycleRecord | None:
        return self._read(lambda tx: tx.find_record(cycle_id))

    def require_record(self, cycle_id: str) -> CycleRecord:
        return self._read(lambda tx: tx.require_record(cycle_id))

    def activity(
        self, *, after: int = 0, before: int | None = None, limit: int | None = None
    ) -> list[ActivityEntry]:
        return self._read(
            lambda tx: list(islice(tx.iter_activity(after=after, before=before), limit))
        )

    def last_activity(self) -> int:
        return self._read(lambda tx: tx.last_activity())

    # ---- curation ----------------------------------------------------------------------
    def put(self, agent: str, text: str, *, pinned: bool = False) -> Fact:
        validate_agent(agent)
        validate_text(text)
        return self._write(lambda tx: fact_ops.put(_as_tx(tx), agent, text, pinned))

    def put_many(self, items: Iterable[NewFact]) -> list[Fact]:
        pending = list(items)
        for item in pending:
            validate_agent(item.agent_id)
            validate_text(item.text)
            if not 0.0 <= item.weight <= 1.0:
                raise InvalidInput(f"weight must be between 0 and 1, got {item.weight}")
        analyzer = self._read(lambda tx: tx.analyzer)
        terms = [analyzer.term_counts(item.text) for item in pending]
        return self._write(lambda tx: bulk_ops.put_many(tx, pending, terms, analyzer))

    def set_stem_language(self, language: str, *, progress: Report | None = None) -> int:
        chosen = check_language(language)
        return self._write(lambda tx: reindex_ops.change_language(_as_tx(tx), chosen, progress))

    def pin(self, fact_id: str) -> Fact:
        return self._write(lambda tx: fact_ops.pin(_as_tx(tx), fact_id))

    def unpin(self, fact_id: str) -> Fact:
        return self._write(lambda tx: fact_ops.unpin(_as_tx(tx), fact_id))

    def revise(self, fact_id: str, text: str) -> tuple[Fact, Fact]:
        validate_text(text)
        return self._write(lambda tx: fact_ops.revise(_as_tx(tx), fact_id, text))

    def retire(self, fact_id: str) -> Fact:
        return self._write(lambda tx: fact_ops.retire(_as_tx(tx), fact_id))

    def supersede_text(self, agent: str, target: str, text: str) -> tuple[Fact, list[Fact]]:
        validate_agent(agent)
        validate_text(text)
        return self._write(lambda tx: fact_ops.supersede_text(_as_tx(tx), agent, target, text))

    def retire_text(self, agent: str, target: str) -> list[Fact]:
        validate_agent(agent)
        return self._write(lambda tx: fact_ops.retire_text(_as_tx(tx), agent, target))

    def pin_text(self, agent: str, target: str, *, pinned: bool = True) -> list[Fact]:
        validate_agent(agent)
        return self._write(lambda tx: fact_ops.pin_text(_as_tx(tx), agent, target, pinned))

    def touch(self, fact_ids: Iterable[str]) -> int:
        """Record accesses of live facts (one per mention); never resurrects a tombstone."""
        wanted = dict(Counter(fact_ids))
        return self._write(lambda tx: fact_ops.touch(_as_tx(tx), wanted))

    def delete(self, fact_ids: Iterable[str]) -> list[Fact]:
        wanted = list(fact_ids)
        return self._write(lambda tx: fact_ops.delete(_as_tx(tx), wanted))

    def claim_for_demo(self) -> None:
        # The location is only shown in the refusal; a Path would fold the URL's "//".
        where = cast("Path", self.url.redacted)
        self._write(lambda tx: fact_ops.claim_for_demo(_as_tx(tx), where))

    # ---- the review queue ---------------------------------------------------------------
    def hold_change(self, agent: str, action: str, target: str, text: str) -> ReviewProposal:
        validate_agent(agent)
        if action in ("add", "update"):
            validate_text(text)
        if action != "add":
            validate_text(target)
        return self._write(lambda tx: review_ops.hold(_as_tx(tx), agent, action, target, text))

    def proposals(
        self,
        agent: str | None = None,
        *,
        status: ReviewStatus | None = None,
        limit: int | None = None,
    ) -> list[ReviewProposal]:
        return self._read(lambda tx: review_ops.listing(_as_tx(tx), agent, status, limit))

    def pending_count(self) -> int:
        return self._read(lambda tx: tx.meta_int(review_ops.PENDING_KEY))

    def find_proposal(self, proposal_id: str) -> ReviewProposal | None:
        return self._read(lambda tx: review_ops.find(_as_tx(tx), proposal_id))

    def require_proposal(self, proposal_id: str) -> ReviewProposal:
        return self._read(lambda tx: review_ops.require(_as_tx(tx), proposal_id))

    def approve_proposal(self, proposal_id: str) -> ReviewDecision:
        proposal_id = review_ops.validate_proposal_id(proposal_id)
        return self._write(lambda tx: review_ops.approve(_as_tx(tx), proposal_id))

    def reject_proposal(self, proposal_id: str, reason: str = "") -> ReviewDecision:
        proposal_id = review_ops.validate_proposal_id(proposal_id)
        review_ops.validate_reason(reason)
        return self._write(lambda tx: review_ops.reject(_as_tx(tx), proposal_id, reason))

    # ---- checkpoints and aliases ----------------------------------------------------------
    def save_checkpoint(self, agent: str, state: str | None) -> Checkpoint:
        validate_agent(agent)
        return self._write(lambda tx: checkpoint_ops.save_checkpoint(_as_tx(tx), agent, state))

    def latest_checkpoint(self, agent: str) -> Checkpoint | None:
        return self._read(lambda tx: checkpoint_ops.latest_checkpoint(_as_tx(tx), agent))

    def add_alias(self, agent: str, term: str, equivalents: Sequence[str]) -> list[str]:
        validate_agent(agent)
        wanted = list(equivalents)
        return self._write(lambda tx: checkpoint_ops.add_alias(_as_tx(tx), agent, term, wanted))

    def aliases(self, agent: str) -> dict[str, list[str]]:
        return self._read(lambda tx: checkpoint_ops.aliases(_as_tx(tx), agent))

    # ---- probes (ADR 0039) ---------------------------------------------------------------
    def add_probe(self, agent: str, query: str, k: int = 8) -> tuple[Probe, bool]:
        probe, outcome = self.save_probe(agent, query, k)
        return probe, outcome == "added"

    def save_probe(self, agent: str, query: str, k: int = 8) -> tuple[Probe, ProbeOutcome]:
        validate_probe(agent, query, k)
        return self._write(lambda tx: probe_ops.add(_as_tx(tx), agent, query, k))

    def probes(self, agent: str | None = None) -> list[Probe]:
        return self._read(lambda tx: probe_ops.listing(_as_tx(tx), agent))

    def remove_probe(self, probe_id: str) -> Probe:
        probe_id = validate_probe_id(probe_id)
        return self._write(lambda tx: probe_ops.remove(_as_tx(tx), probe_id))

    def trial_apply(
        self, request: ApplyRequest, look: Callable[[KeywordIndex], T]
    ) -> TrialApply[T]:
        return self._write(lambda tx: cycle_ops.trial_apply(_as_tx(tx), request, look))

    # ---- the consolidation cycle: each call one transaction, as on LMDB ----------------
    def decay(
        self,
        agent: str,
        half_life_hours: float,
        *,
        dry_run: bool = False,
        journal: JournalDecay | None = None,
    ) -> DecayOutcome:
        def run(tx: PgTx) -> DecayOutcome:
            return cycle_ops.decay(_as_tx(tx), agent, half_life_hours, None if dry_run else journal)

        return self._read(run) if dry_run else self._write(run)

    def weights(self, agent: str, state: FactState = "live") -> dict[str, float]:
        return self._read(lambda tx: cycle_ops.weights(_as_tx(tx), agent, state))

    def selection(self, agent: str, half_life_hours: float, *, max_batch: int = 0) -> Selection:
        return self._read(
            lambda tx: cycle_ops.selection(_as_tx(tx), agent, half_life_hours, max_batch)
        )

    def apply_consolidation(self, request: ApplyRequest, record: CycleRecord) -> ApplyOutcome:
        """All or nothing; refused (nothing written) when the proposal has gone stale:
        the staleness check reads current rows under the writers' lock (ADR 0041)."""
        return self._write(lambda tx: cycle_ops.apply_consolidation(_as_tx(tx), request, record))

    def prune(self, agent: str, record: CycleRecord) -> PruneOutcome:
        return self._write(lambda tx: cycle_ops.prune(_as_tx(tx), agent, record))

    def save_record(self, record: CycleRecord) -> None:
        self._write(lambda tx: cycle_ops.save_record(_as_tx(tx), record))

    def revert_refusal(self, cycle_id: str) -> str | None:
        return self._read(lambda tx: cycle_ops.revert_refusal(_as_tx(tx), cycle_id))

    def revert(self, cycle_id: str) -> CycleRecord:
        return self._write(lambda tx: cycle_ops.revert(_as_tx(tx), cycle_id))

    # ---- the knowledge graph -----------------------------------------------------------
    def extract_graph(
        self, agent: str, extract: Callable[[str], Sequence[EntityLike]]
    ) -> ExtractOutcome:
        return self._write(lambda tx: graph_ops.extract_graph(_as_tx(tx), agent, extract))

    def decay_graph(self, agent: str, half_life_hours: float) -> GraphDecayOutcome:
        return self._write(lambda tx: graph_ops.decay_graph(_as_tx(tx), agent, half_life_hours))

    def graph_size(self, agent: str) -> tuple[int, int]:
        return self._read(lambda tx: graph_ops.graph_size(_as_tx(tx), agent))

    # ---- import ------------------------------------------------------------------------
    def import_all(
        self,
        facts: list[Fact],
        records: list[CycleRecord],
        *,
        fact_where: Sequence[str] | None = None,
        record_where: Sequence[str] | None = None,
        on_conflict: OnConflict = "refuse",
        progress: Report | None = None,
        probes: Sequence[Probe] = (),
    ) -> ImportResult:
        """Facts, journal records and probes with their ids, in one transaction
        (`import_ops`)."""
        if on_conflict not in ON_CONFLICT:
            raise InvalidInput(f"on_conflict must be one of {', '.join(ON_CONFLICT)}")
        analyzer = self._read(lambda tx: tx.analyzer)
        batch = import_ops.ImportBatch.prepare(
            facts, records, fact_where, record_where, progress, analyzer, list(probes)
        )
        return self._write(
            lambda tx: import_ops.import_all(_as_tx(tx), batch, on_conflict, progress)
        )

    # ---- moving a whole store (ADR 0046) ---------------------------------------------------
    def snapshot(self) -> StoreSnapshot:
        """Everything a migration carries, read in one snapshot (`migrate_ops`)."""
        return self._read(lambda tx: migrate_ops.snapshot(_as_tx(tx)))

    def load_snapshot(
        self,
        snapshot: StoreSnapshot,
        *,
        allow_non_empty: bool = False,
        origin: str = "",
        progress: Report | None = None,
    ) -> LoadResult:
        """Write `snapshot` in one transaction (`migrate_ops.load`): all or nothing."""
        terms, made_by = migrate_ops.prepare_terms(snapshot, progress)
        return self._write(
            lambda tx: migrate_ops.load(
                _as_tx(tx),
                snapshot,
                terms,
                made_by,
                allow_non_empty=allow_non_empty,
                origin=origin,
                progress=progress,
            )
        )


def _check_server(url: StoreUrl, version_num: int) -> None:
    """A lost COMMIT is resolved with pg_current_xact_id/pg_xact_status (ADR 0047),
    which PostgreSQL has since version 13."""
    if version_num < retry.MIN_SERVER_VERSION:
        found = f"{version_num // 10000}.{version_num % 10000}"
        raise StoreError(
            f"cannot use the PostgreSQL store {url.redacted}: the server runs PostgreSQL "
            f"{found}; graymatter-tui needs 13 or newer"
        )


class NoStoreYet(StoreError):
    """A database opened for reading holds no store: the reader shows an empty one."""


def _check_readable(url: StoreUrl, version: int) -> None:
    if version == 0:
        raise NoStoreYet(
            f"the database of {url.redacted} holds no graymatter-tui store yet, and it was "
            "opened for reading only; nothing was created"
        )
    if version < schema.SCHEMA_VERSION:
        raise StoreError(
            f"the store in {url.redacted} has schema version {version}; open it once for "
            f"writing to upgrade it to {schema.SCHEMA_VERSION}"
        )


def _implements_memory_store(store: PgStore) -> MemoryStore:
    """Never called: mypy checks here that `PgStore` has every method of `MemoryStore`."""
    return store


class _OneSnapshot(PgStore):
    """A PostgreSQL store whose every read runs in one REPEATABLE READ transaction, and
    which refuses writes: what `PgStore.in_one_snapshot` hands its view."""

    _tx: PgTx

    def _read(self, fn: Callable[[PgTx], T]) -> T:
        return fn(self._tx)

    def _write(self, fn: Callable[[PgTx], T]) -> T:
        raise ReadOnlyStore("a snapshot view of the store cannot write")

    def close(self) -> None:
        """The store's owner closes the pool, not the view."""
