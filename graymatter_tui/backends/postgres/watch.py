"""The PostgreSQL store's watch (`PgStore.watch`): told of every write by the server.

Every write transaction notifies `CHANNEL` with the generation it commits (in the statement
that takes the generation row's lock, store.py: no extra round trip), and the server
delivers the notification once the transaction commits, to every connection listening.
The watch holds one connection of its own, outside the store's pool, listening; it reads
the generation when it connects (what it missed while it was not listening) and every
`HEARTBEAT` seconds on a quiet connection, which also finds a connection that died
without a word. A lost connection is said once and opened again with back-off. Where
LISTEN is refused (a server in recovery, a pooler that does not carry it), the watch reads
the generation every `interval` seconds on its own connection instead.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from graymatter_tui.backends.postgres import connect
from graymatter_tui.backends.postgres.driver import psycopg_modules
from graymatter_tui.core.errors import StoreError
from graymatter_tui.core.store_url import StoreUrl
from graymatter_tui.storage.watch import Failed, Moved, WatchThread

CHANNEL = "graymatter_generation"
HEARTBEAT = 10.0  # seconds a listening connection may stay quiet before it reads
BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds before the next connection attempts
# After a notification, others arriving this soon after join it in one call of `moved`: a
# burst of writes is heard once, not once per write.
GATHER = 0.05
GENERATION_SQL = "SELECT value FROM counters WHERE name = 'generation'"
CONNECTION_NAME = "graymatter-tui watch"  # its application_name on the server


class Watched(Protocol):
    """What the watch needs of its store (a `PgStore`)."""

    url: StoreUrl

    @property
    def closed(self) -> bool: ...
    @property
    def location(self) -> str: ...
    @property
    def connect_timeout(self) -> float: ...


class ListeningWatch(WatchThread):
    def __init__(
        self, store: Watched, moved: Moved, failed: Failed, *, since: int, interval: float
    ) -> None:
        super().__init__(moved, failed, since=since, interval=interval)
        self._store = store

    def watch(self) -> None:
        psycopg, _ = psycopg_modules()
        failures = 0
        while not self.stopping.is_set():
            if self._store.closed:
                self.lost(StoreError(f"the PostgreSQL store {self._store.location} is closed"))
                self.stopping.wait(self.interval)
                continue
            try:
                conn = connect.connect_once(
                    self._store.url, self._store.connect_timeout, name=CONNECTION_NAME
                )
            except StoreError as exc:
                self.lost(exc)
            else:
                failures = 0
                try:
                    self._watch_on(conn)
                    continue  # stopped, or the store was closed
                except psycopg.Error as exc:
                    self.lost(connect.describe(exc, self._store.url))
                finally:
                    conn.close()
            self.stopping.wait(BACKOFF[min(failures, len(BACKOFF) - 1)])
            failures += 1

    def _watch_on(self, conn: Any) -> None:
        """Listen (or poll) on `conn` until stopped; psycopg.Error when it breaks."""
        psycopg, _ = psycopg_modules()
        try:
            conn.execute(f"LISTEN {CHANNEL}")
            self.mode = "listen"
        except psycopg.Error:
            if conn.broken:
                raise
            self.mode = "poll"
        self.saw(_generation(conn))
        read_at = time.monotonic()
        while not self.stopping.is_set() and not self._store.closed:
            if self.mode == "poll":
                self.stopping.wait(self.interval)
                self.saw(_generation(conn))
                continue
            told = [n.payload for n in conn.notifies(timeout=self.interval, stop_after=1)]
            if told:  # and whatever else arrives just after: one call for them all
                told += [n.payload for n in conn.notifies(timeout=GATHER)]
                generations = [int(p) for p in told if p.isdigit()]
                self.saw(max(generations) if generations else _generation(conn))
                read_at = time.monotonic()
            elif time.monotonic() - read_at >= HEARTBEAT:
                self.saw(_generation(conn))
                read_at = time.monotonic()


def _generation(conn: Any) -> int:
    row = conn.execute(GENERATION_SQL).fetchone()
    return int(row[0]) if row else 0
