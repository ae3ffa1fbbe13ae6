"""`MemoryStore.watch` behaves alike on both backends: a write made by another process is
heard once, within a bound, on the watch's own thread; a store that cannot be read is said
once; a stopped watch says nothing more and its thread ends. LMDB polls the generation;
PostgreSQL is told of each write by LISTEN/NOTIFY, comes back after its connection is
killed, and polls where LISTEN is refused."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.storage import StoreWatch
from tests.conftest import run_graymatter
from tests.support.backends import AnyStore, location_of
from tests.support.delaying_proxy import DelayingProxy
from tests.support.postgres import Cluster

HEARD_WITHIN = 10.0  # seconds: generous on a loaded machine; LMDB polls every 0.5 s
QUIET = 1.5  # seconds with no further call, to say a write was heard once


@dataclass
class Heard:
    """What a watch said, and on which thread."""

    moved: queue.Queue[int] = field(default_factory=queue.Queue)
    failed: queue.Queue[str] = field(default_factory=queue.Queue)
    threads: set[str] = field(default_factory=set)

    def on_moved(self, generation: int) -> None:
        self.threads.add(threading.current_thread().name)
        self.moved.put(generation)

    def on_failed(self, error: GraymatterError) -> None:
        self.threads.add(threading.current_thread().name)
        self.failed.put(str(error))

    def next_move(self, timeout: float = HEARD_WITHIN) -> int:
        return self.moved.get(timeout=timeout)

    def moves_for(self, seconds: float) -> list[int]:
        out = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                out.append(self.moved.get(timeout=left))
            except queue.Empty:
                break
        return out


@pytest.fixture
def heard() -> Heard:
    return Heard()


def write_elsewhere(store: AnyStore, text: str) -> None:
    """`remember` in another process, as another host or the CLI would write."""
    done = run_graymatter("remember", "ops", text, env={"GRAYMATTER_STORE": location_of(store)})
    assert done.returncode == 0, done.stderr


@contextmanager
def watching(store: AnyStore, heard: Heard, since: int) -> Iterator[StoreWatch]:
    watch = store.watch(heard.on_moved, heard.on_failed, since=since)
    try:
        yield watch
    finally:
        watch.stop()


def test_another_process_write_is_heard_once_within_a_bound(
    any_store: AnyStore, heard: Heard
) -> None:
    any_store.put("ops", "before the watch")
    since = any_store.generation()
    with watching(any_store, heard, since) as watch:
        assert heard.moves_for(QUIET) == []  # nothing moved: nothing said
        started = time.monotonic()
        write_elsewhere(any_store, "written by another process")
        generation = heard.next_move()
        assert time.monotonic() - started < HEARD_WITHIN
        assert generation == any_store.generation() > since
        assert heard.moves_for(QUIET) == []  # once
        assert heard.failed.empty()
        assert watch.mode == ("listen" if isinstance(any_store, PgStore) else "poll")
    assert threading.current_thread().name not in heard.threads  # the watch's own thread


def test_a_watch_from_minus_one_hears_the_current_generation_at_once(
    any_store: AnyStore, heard: Heard
) -> None:
    any_store.put("ops", "a fact")
    with watching(any_store, heard, -1):
        assert heard.next_move() == any_store.generation()
        assert heard.moves_for(QUIET) == []


def test_a_burst_of_writes_ends_on_the_last_generation_in_fewer_calls(
    any_store: AnyStore, heard: Heard
) -> None:
    since = any_store.generation()
    writes = 30
    with watching(any_store, heard, since):
        for n in range(writes):
            any_store.put("ops", f"burst {n}")
        final = any_store.generation()
        said = [heard.next_move()]
        while said[-1] != final:
            said.append(heard.next_move())
        assert said == sorted(set(said)), said  # only forward, never twice
        assert len(said) < writes
        assert heard.moves_for(QUIET) == []


def test_a_closed_store_is_said_once_and_a_stopped_watch_ends(
    any_store: AnyStore, heard: Heard
) -> None:
    watch = any_store.watch(heard.on_moved, heard.on_failed, since=any_store.generation())
    try:
        any_store.close()
        message = heard.failed.get(timeout=HEARD_WITHIN)
        assert "closed" in message
        time.sleep(QUIET)
        assert heard.failed.empty()  # said once, not once per poll
    finally:
        watch.stop()
    deadline = time.monotonic() + HEARD_WITHIN
    while watch.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not watch.alive


def test_a_stopped_watch_says_nothing_of_later_writes(any_store: AnyStore, heard: Heard) -> None:
    watch = any_store.watch(heard.on_moved, heard.on_failed, since=any_store.generation())
    watch.stop()
    any_store.put("ops", "after the stop")
    assert heard.moves_for(QUIET) == []


# ---- PostgreSQL: its own connection, told of writes, killed and refused ----------------------
def test_every_postgres_write_notifies_the_generation_it_commits(pg_url: str) -> None:
    import psycopg

    from graymatter_tui.backends.postgres.watch import CHANNEL

    with PgStore.open(pg_url) as store, psycopg.connect(pg_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        store.put("ops", "one")
        fact = store.put("ops", "two")
        with pytest.raises(GraymatterError):
            store.retire("no-such-fact")  # a write that fails tells nobody
        store.pin(fact.id)
        told = [n.payload for n in listener.notifies(timeout=HEARD_WITHIN, stop_after=3)]
        last = store.generation()
        assert told == [str(last - 2), str(last - 1), str(last)]
        assert list(listener.notifies(timeout=0.5)) == []


def test_a_killed_listening_connection_is_said_once_and_comes_back(
    pg_url: str, pg_cluster: Cluster, heard: Heard
) -> None:
    with PgStore.open(pg_url) as store, PgStore.open(pg_url) as other:
        watch = store.watch(heard.on_moved, heard.on_failed, since=store.generation())
        try:
            _wait_for(lambda: watch.mode == "listen" and _watch_connections(pg_cluster) == 1)
            pg_cluster.admin(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'graymatter-tui watch'"
            )
            assert "PostgreSQL" in heard.failed.get(timeout=HEARD_WITHIN)
            _wait_for(lambda: _watch_connections(pg_cluster) == 1)  # reconnected
            # The reconnect says the store is readable again (a moved with what it found).
            assert heard.next_move() == store.generation()
            other.put("ops", "after the reconnect")
            assert heard.next_move() == other.generation()
            assert heard.failed.empty()
            assert watch.mode == "listen"
        finally:
            watch.stop()


def test_where_listen_is_refused_the_watch_polls(
    pg_url: str, pg_cluster: Cluster, heard: Heard
) -> None:
    """A proxy turns the watch's LISTEN into a statement the server refuses (as a server
    in recovery refuses LISTEN); the watch reads the generation on its connection instead."""
    target = urlsplit(pg_url)
    proxy = DelayingProxy(
        (target.hostname or "", target.port or 0), 0.0, rewrite=(b"LISTEN ", b"LISTEX ")
    )
    try:
        with PgStore.open(proxy.url_for(pg_url)) as store, PgStore.open(pg_url) as other:
            watch = store.watch(heard.on_moved, heard.on_failed, since=store.generation())
            try:
                _wait_for(lambda: watch.mode == "poll" and _watch_connections(pg_cluster) == 1)
                other.put("ops", "written while polled")
                assert heard.next_move() == other.generation()
                assert heard.failed.empty()
                assert watch.mode == "poll"
            finally:
                watch.stop()
    finally:
        proxy.close()


def _watch_connections(cluster: Cluster) -> int:
    import psycopg

    with psycopg.connect(cluster.url("postgres"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'graymatter-tui watch'"
        ).fetchone()
    return int(row[0]) if row else 0


def _wait_for(condition: object, timeout: float = HEARD_WITHIN) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert condition()
