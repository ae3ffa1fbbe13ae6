"""The memory store over PostgreSQL: `PgStore.open(url)`.

The operations are `storage.store.BaseStore`'s, written once; this backend supplies its
transactions (`PgTx` over a pooled connection, with bounded retries, ADR 0047), answers a
few reads in SQL of its own, and describes its server. Writers take the
generation row's lock first, so writes are serialised as LMDB serialises them and READ
COMMITTED sees every earlier write; reads run in one REPEATABLE READ snapshot (ADR 0041).

Every `MemoryStore` method is implemented (mypy checks `_implements_memory_store`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from graymatter_tui.backends.postgres import connect, retry, schema
from graymatter_tui.backends.postgres.driver import psycopg_modules
from graymatter_tui.backends.postgres.rows import COLUMNS, FACTS, from_row
from graymatter_tui.backends.postgres.tx import STATE_SQL, PgTx
from graymatter_tui.backends.postgres.watch import CHANNEL, ListeningWatch
from graymatter_tui.core import clock, provenance
from graymatter_tui.core.errors import GraymatterError, InvalidInput, ReadOnlyStore, StoreError
from graymatter_tui.core.model import (
    AgentSummary,
    Fact,
    FactState,
    StoreInfo,
)
from graymatter_tui.core.store_url import StoreUrl, parse_store_url
from graymatter_tui.core.tokens import check_language, language_from_env
from graymatter_tui.storage import MemoryStore, StoreWatch
from graymatter_tui.storage.store import BaseStore
from graymatter_tui.storage.transaction import VectorTransaction
from graymatter_tui.storage.watch import WATCH_INTERVAL

T = TypeVar("T")
# The write lock, and what a write needs to know that only a statement run after the
# lock may read (READ COMMITTED: a statement's snapshot is taken when it starts, so one
# that waited for the lock has not seen the writer it waited for): whether the store
# embeds. Sent in one pipeline, so it costs no round trip of its own.
LOCK_SQL = (
    "UPDATE counters SET value = value + 1 WHERE name = 'generation' "
    f"RETURNING pg_current_xact_id()::text, value, pg_notify('{CHANNEL}', value::text)"
)
EMBEDDING_SQL = "SELECT EXISTS (SELECT 1 FROM graymatter_meta WHERE key = 'embed_model')"


class PgStore(BaseStore):
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

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def connect_timeout(self) -> float:
        return self._timeout

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

    def watch(
        self,
        moved: Callable[[int], None],
        failed: Callable[[GraymatterError], None],
        *,
        since: int = -1,
        interval: float = WATCH_INTERVAL,
    ) -> StoreWatch:
        """Watch for writes from any process (`MemoryStore.watch`): LISTEN on a connection
        of the watch's own, polling the generation there if LISTEN is refused (watch.py)."""
        watch = ListeningWatch(self, moved, failed, since=since, interval=interval)
        watch.start()
        return watch

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

    def _read(self, fn: Callable[[VectorTransaction], T]) -> T:
        return self._read_pg(fn)

    def _write(self, fn: Callable[[VectorTransaction], T]) -> T:
        return self._write_pg(fn)

    def _read_one_statement(self, fn: Callable[[VectorTransaction], T]) -> T:
        return self._statement_pg(fn)

    def _statement_pg(self, fn: Callable[[PgTx], T]) -> T:
        """`fn` reading through one statement, sent alone on the autocommit connection:
        one round trip, the statement its own snapshot (no BEGIN, SET, COMMIT). A second
        statement would read another snapshot, so it is refused."""
        now = self._clock()

        def run(conn: Any, attempt: retry.Attempt) -> T:
            return fn(PgTx(_OneStatement(conn), now, write=False))

        return self._run(run, write=False)

    def _read_pg(self, fn: Callable[[PgTx], T]) -> T:
        """`fn` over one snapshot: REPEATABLE READ, READ ONLY."""
        now = self._clock()
        psycopg, _ = psycopg_modules()

        def run(conn: Any, attempt: retry.Attempt) -> T:
            # Said in BEGIN itself: a SET after it would be one more round trip per read.
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            with conn.transaction():
                return fn(PgTx(conn, now, write=False))

        return self._run(run, write=False)

    def _write_pg(self, fn: Callable[[PgTx], T]) -> T:
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
            conn.read_only = None  # the pooled connection's last read said READ ONLY
            with conn.transaction():
                # The lock statement also tells every watch (watch.py) of the write: the
                # server delivers the notification, with the new generation, once this commits.
                xid, generation, embedding = _take_write_lock(conn)
                attempt.xid = xid
                tx = PgTx(
                    conn, now, write=True, source=source, embedding=embedding, generation=generation
                )
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

    def in_one_snapshot(self, fn: Callable[[MemoryStore], T]) -> T:
        def run(tx: PgTx) -> T:
            view = _OneSnapshot.__new__(_OneSnapshot)
            view.__dict__.update(self.__dict__)
            view._tx = tx
            return fn(view)

        return self._read_pg(run)

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

        return self._read_pg(run)

    def release_mapped_pages(self) -> None:
        """Nothing is mapped: the store lives on a server."""

    def all_facts(self) -> list[Fact]:
        """Every fact, by agent then oldest first (exports)."""

        def run(tx: PgTx) -> list[Fact]:
            rows = tx.conn.execute(f"SELECT {COLUMNS} FROM {FACTS} ORDER BY agent_id, id")
            return [from_row(row) for row in rows.fetchall()]

        return self._read_pg(run)

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

        return self._read_pg(run)

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

        return self._read_pg(run)


def _take_write_lock(conn: Any) -> tuple[str | None, int | None, bool]:
    """Take the generation row's lock (bumping the generation) and read, after it,
    whether the store embeds: (transaction id, the new generation, embeds). Both
    statements go in one pipeline where the driver's libpq has pipelines (14+)."""
    psycopg, _ = psycopg_modules()
    if psycopg.Pipeline.is_supported():
        with conn.pipeline():
            locked = conn.execute(LOCK_SQL)
            asked = conn.execute(EMBEDDING_SQL)
        row, embedding = locked.fetchone(), asked.fetchone()
    else:
        row = conn.execute(LOCK_SQL).fetchone()
        embedding = conn.execute(EMBEDDING_SQL).fetchone()
    if row is None:
        return None, None, bool(embedding[0])
    return row[0], int(row[1]), bool(embedding[0])


class _OneStatement:
    """A connection that runs one statement and refuses a second (`_statement_pg`)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._used = False

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        if self._used:
            raise AssertionError("a one-statement read ran a second statement")
        self._used = True
        return self._conn.execute(*args, **kwargs)


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

    def _read_pg(self, fn: Callable[[PgTx], T]) -> T:
        return fn(self._tx)

    def _statement_pg(self, fn: Callable[[PgTx], T]) -> T:
        return fn(self._tx)

    def _write_pg(self, fn: Callable[[PgTx], T]) -> T:
        raise ReadOnlyStore("a snapshot view of the store cannot write")

    def close(self) -> None:
        """The store's owner closes the pool, not the view."""
