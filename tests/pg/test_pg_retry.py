"""Bounded retry against real faults (ADR 0047): a genuine deadlock between a store write
and another session is retried and the write lands once; one that keeps coming back is
reported after five tries with nothing written; a connection cut while COMMIT is on the
wire is resolved by asking the server, never by writing twice."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.backends.postgres.retry import TRIES
from graymatter_tui.core.errors import StoreError
from tests.support.cutting_proxy import CuttingProxy, cutting_proxy
from tests.support.postgres import Cluster

# The store's sessions detect the deadlock (they wait first, with the short timeout), so
# the store's transaction is the one the server rolls back; the other session waits long.
STORE_DEADLOCK_TIMEOUT = "300ms"
OTHER_DEADLOCK_TIMEOUT = "20s"


@pytest.fixture
def deadlock_db(pg_cluster: Cluster) -> Iterator[str]:
    name = pg_cluster.new_database()
    pg_cluster.admin(f'ALTER DATABASE "{name}" SET deadlock_timeout = {STORE_DEADLOCK_TIMEOUT!r}')
    yield pg_cluster.url(name)
    pg_cluster.drop_database(name)


def _store_waits_on_a_lock(conn: psycopg.Connection, give_up: float = 10.0) -> bool:
    deadline = time.monotonic() + give_up
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = 'graymatter-tui' "
            "AND wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()
        if row:
            return True
        time.sleep(0.002)
    return False


def _deadlock_once(
    url: str, watcher: psycopg.Connection, then: Callable[[], object] = lambda: None
) -> bool:
    """Hold the activity counter's row (every remember bumps it after taking the
    generation row), run `then`, wait until a store write queues behind the row, then
    ask for the generation row: a real lock cycle. True when the store's side was the
    one rolled back."""
    with psycopg.connect(url) as other:
        other.execute(f"SET deadlock_timeout = {OTHER_DEADLOCK_TIMEOUT!r}")
        other.execute("SELECT value FROM counters WHERE name = 'activity_seq' FOR UPDATE")
        then()
        if not _store_waits_on_a_lock(watcher):
            other.rollback()
            return False
        try:
            other.execute("UPDATE counters SET value = value WHERE name = 'generation'")
        except psycopg.errors.DeadlockDetected:
            other.rollback()
            return False
        other.rollback()
        return True


def _putter(store: PgStore, text: str) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def put() -> None:
        try:
            outcome.append(store.put("ann", text))
        except BaseException as exc:
            outcome.append(exc)

    return threading.Thread(target=put), outcome


def test_a_deadlock_is_retried_and_the_write_lands_once(deadlock_db: str) -> None:
    with PgStore.open(deadlock_db) as store, psycopg.connect(deadlock_db, autocommit=True) as w:
        store.put("ann", "the first fact makes the activity counter's row")
        generation = store.generation()
        worker, outcome = _putter(store, "written through a deadlock")
        assert _deadlock_once(deadlock_db, w, worker.start), "the deadlock fell elsewhere"
        worker.join(timeout=60)
        (result,) = outcome
        assert not isinstance(result, BaseException), result
        texts = [f.text for f in store.list_facts("ann")]
        assert texts.count("written through a deadlock") == 1
        assert store.generation() == generation + 1
        assert store.last_activity() == 2


def _deadlocks_until_done(url: str, watcher: psycopg.Connection, worker: threading.Thread) -> int:
    """Like `_deadlock_once`, on every try of the store's write: the activity counter's
    row stays locked by the outer transaction throughout, and each generation-row request
    runs in a savepoint rolled back once the deadlock is resolved, so no retry can slip
    through between rounds. The number of deadlocks made."""
    rounds = 0
    with psycopg.connect(url) as other:
        other.execute(f"SET deadlock_timeout = {OTHER_DEADLOCK_TIMEOUT!r}")
        other.execute("SELECT value FROM counters WHERE name = 'activity_seq' FOR UPDATE")
        worker.start()
        while worker.is_alive():
            if not _store_waits_on_a_lock(watcher, 0.05):
                continue
            other.execute("SAVEPOINT round")
            other.execute("UPDATE counters SET value = value WHERE name = 'generation'")
            other.execute("ROLLBACK TO SAVEPOINT round")
            rounds += 1
        other.rollback()
    return rounds


def test_a_deadlock_that_keeps_coming_back_is_reported_with_nothing_written(
    deadlock_db: str, pg_cluster: Cluster
) -> None:
    with PgStore.open(deadlock_db) as store, psycopg.connect(deadlock_db, autocommit=True) as w:
        store.put("ann", "the first fact makes the activity counter's row")
        generation = store.generation()
        worker, outcome = _putter(store, "never written")
        rounds = _deadlocks_until_done(deadlock_db, w, worker)
        worker.join(timeout=60)
        (result,) = outcome
        assert isinstance(result, StoreError), result
        message = str(result)
        assert f"gave up after {TRIES} tries" in message
        assert "the server kept reporting a deadlock (SQLSTATE 40P01)" in message
        assert "nothing was written" in message
        assert pg_cluster.password not in message and "\n" not in message
        assert rounds == TRIES
        assert [f.text for f in store.list_facts("ann")] == [
            "the first fact makes the activity counter's row"
        ]
        assert store.generation() == generation


@pytest.fixture
def proxied(pg_cluster: Cluster, pg_url: str) -> Iterator[tuple[CuttingProxy, str]]:
    with cutting_proxy("127.0.0.1", pg_cluster.port) as proxy:
        yield proxy, pg_url.replace(f":{pg_cluster.port}/", f":{proxy.port}/")


COMMIT = b"COMMIT\x00"


def test_a_commit_whose_answer_is_lost_is_resolved_not_written_twice(
    proxied: tuple[CuttingProxy, str], pg_url: str
) -> None:
    proxy, url = proxied
    with PgStore.open(url) as store:
        generation = store.generation()
        proxy.cut_at(COMMIT, forward=True)
        fact = store.put("ann", "the server committed this, the client never heard")
        assert proxy.cuts == 1
    with PgStore.open(pg_url) as direct:
        assert [f.id for f in direct.list_facts("ann")] == [fact.id]
        assert direct.generation() == generation + 1


def test_a_commit_that_never_reached_the_server_runs_again_once(
    proxied: tuple[CuttingProxy, str], pg_url: str
) -> None:
    proxy, url = proxied
    with PgStore.open(url) as store:
        generation = store.generation()
        proxy.cut_at(COMMIT, forward=False)
        fact = store.put("ann", "the first COMMIT was lost on the way")
        assert proxy.cuts == 1
    with PgStore.open(pg_url) as direct:
        assert [(f.id, f.text) for f in direct.list_facts("ann")] == [
            (fact.id, "the first COMMIT was lost on the way")
        ]
        assert direct.generation() == generation + 1


def test_a_connection_cut_mid_transaction_is_retried(
    proxied: tuple[CuttingProxy, str], pg_url: str
) -> None:
    proxy, url = proxied
    with PgStore.open(url) as store:
        first = store.put("ann", "the build runs on Tuesdays")
        proxy.cut_at(b"INSERT INTO facts", forward=False)
        revised, _old = store.revise(first.id, "the build runs on Wednesdays")
        assert proxy.cuts == 1
    with PgStore.open(pg_url) as direct:
        assert [f.text for f in direct.list_facts("ann")] == ["the build runs on Wednesdays"]
        assert direct.require(first.id).superseded_by == revised.id
        assert direct.last_activity() == 2


def test_writers_run_read_committed_whatever_the_database_default(
    pg_cluster: Cluster, pg_url: str
) -> None:
    """A database whose default isolation is SERIALIZABLE (an operator's choice) must not
    turn the store's writers into SERIALIZABLE ones: every writer that waited for the
    generation row would then fail with 40001 when the holder commits. Another writer
    keeps taking the row back the moment it commits; READ COMMITTED writers just queue."""
    name = pg_url.rsplit("/", 1)[1]
    pg_cluster.admin(f'ALTER DATABASE "{name}" SET default_transaction_isolation = serializable')
    with PgStore.open(pg_url) as store, psycopg.connect(pg_url, autocommit=True) as watcher:
        store.put("ann", "the first fact")
        generation = store.generation()
        worker, outcome = _putter(store, "written after waiting for another writer")
        commits = 0
        with psycopg.connect(pg_url) as other:
            other.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            while commits <= TRIES:
                other.execute("UPDATE counters SET value = value + 1 WHERE name = 'generation'")
                if commits == 0:
                    worker.start()
                while worker.is_alive() and not _store_waits_on_a_lock(watcher, 0.05):
                    pass
                other.commit()
                commits += 1
                if not worker.is_alive():
                    break
        worker.join(timeout=60)
        (result,) = outcome
        assert not isinstance(result, BaseException), result
        texts = [f.text for f in store.list_facts("ann")]
        assert texts.count("written after waiting for another writer") == 1
        assert store.generation() == generation + 1 + commits


def test_a_read_whose_connection_is_cut_is_read_again(
    proxied: tuple[CuttingProxy, str],
) -> None:
    proxy, url = proxied
    with PgStore.open(url) as store:
        fact = store.put("ann", "read through a cut connection")
        proxy.cut_at(b"REPEATABLE READ", forward=False)
        assert [f.id for f in store.list_facts("ann")] == [fact.id]
        assert proxy.cuts == 1
