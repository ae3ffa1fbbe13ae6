"""Several processes, each with its own connection pool, writing to one PostgreSQL store at
once (as agents on several hosts would), and faults of the connection: no write is lost,
the activity feed numbers every write once in commit order, and a write whose connection
dies is retried (ADR 0047) and lands whole once, or is absent, never half there."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psycopg
import pytest

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.backends.postgres.retry import TRIES
from graymatter_tui.core.errors import StoreError
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage import ApplyOutcome, ApplyRequest
from tests.conftest import clean_env
from tests.support.postgres import Cluster

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 4
PER_WRITER = 60

# Waits for the go file, then remembers N facts (one transaction each), touching and
# pinning as it goes, so writers contend on every kind of write.
REMEMBER = textwrap.dedent(
    """
    import os, sys, time
    from graymatter_tui.backends.postgres import PgStore
    url, agent, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = PgStore.open(url)
    while not os.path.exists(go):
        time.sleep(0.005)
    for i in range(n):
        fact = store.put(agent, f"{agent} remembers fact number {i}")
        if i % 5 == 0:
            store.touch([fact.id])
        if i % 7 == 0:
            store.pin(fact.id)
    store.close()
    """
)


def test_concurrent_writers_lose_nothing_and_number_every_write_once(
    pg_url: str, tmp_path: Path
) -> None:
    with PgStore.open(pg_url) as store:
        start_generation = store.generation()
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", REMEMBER, pg_url, f"agent-{w}", str(PER_WRITER), str(go)],
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=clean_env(),
        )
        for w in range(WRITERS)
    ]
    go.touch()
    errors = [writer.communicate(timeout=300)[1] for writer in writers]
    assert [w.returncode for w in writers] == [0] * WRITERS, errors
    pins = len(range(0, PER_WRITER, 7))
    touches = len(range(0, PER_WRITER, 5))
    with PgStore.open(pg_url) as store:
        for w in range(WRITERS):
            facts = store.list_facts(f"agent-{w}")
            assert sorted(f.text for f in facts) == sorted(
                f"agent-{w} remembers fact number {i}" for i in range(PER_WRITER)
            )
            assert sum(f.pinned for f in facts) == pins
            assert sum(f.access_count for f in facts) == touches
        writes = WRITERS * (PER_WRITER + pins + touches)
        assert store.generation() - start_generation == writes
        # touch writes no activity entry; put and pin write one each, and a put that
        # makes a possible update ("fact number 3" of "… 2") one more, in its transaction
        entries = store.activity()
        assert [e.seq for e in entries] == list(range(len(entries), 0, -1))
        assert sum(e.action in ("add", "pin") for e in entries) == WRITERS * (PER_WRITER + pins)
        assert {e.action for e in entries} <= {"add", "pin", "review"}
        assert store.last_activity() == len(entries)


def test_a_restarted_server_costs_a_reconnect_not_an_error(
    pg_cluster: Cluster, pg_url: str
) -> None:
    with PgStore.open(pg_url) as store:
        before = store.put("ann", "written before the restart")
        pg_cluster.stop()
        try:
            with pytest.raises(StoreError) as caught:
                store.put("ann", "written while the server is down")
            message = str(caught.value)
            assert message.startswith("cannot use the PostgreSQL store postgresql://")
            assert pg_cluster.password not in message and "\n" not in message
        finally:
            pg_cluster.start()
        after = store.put("ann", "written after the restart")
        assert [f.id for f in store.list_facts("ann")] == [after.id, before.id]


def _backend_waiting_on_a_lock(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(500):
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'graymatter-tui' "
                "AND wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            if row:
                return int(row[0])
            time.sleep(0.01)
    raise AssertionError("the store's write never waited on the held lock")


def _apply_while_killed(
    url: str, store: PgStore, request: ApplyRequest, record: CycleRecord, kills: int
) -> object:
    """Apply while another session holds the writers' lock, so the apply is caught
    mid-transaction (its generation update waiting); kill its connection `kills` times
    (each retry queues again), then release the lock. The apply's outcome or error."""
    outcome: list[object] = []

    def apply() -> None:
        try:
            outcome.append(store.apply_consolidation(request, record))
        except BaseException as exc:
            outcome.append(exc)

    with psycopg.connect(url) as holder:
        holder.execute("UPDATE counters SET value = value WHERE name = 'generation'")
        worker = threading.Thread(target=apply)
        worker.start()
        with psycopg.connect(url, autocommit=True) as killer:
            for _ in range(kills):
                victim = _backend_waiting_on_a_lock(url)
                killer.execute("SELECT pg_terminate_backend(%s)", (victim,))
                _gone(killer, victim)
        holder.rollback()
        worker.join(timeout=60)
    (result,) = outcome
    return result


def _gone(conn: psycopg.Connection, pid: int) -> None:
    for _ in range(500):
        if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            return
        time.sleep(0.01)


def _two_facts_and_a_request(store: PgStore) -> tuple[ApplyRequest, CycleRecord]:
    a = store.put("ann", "the build runs on Tuesdays")
    b = store.put("ann", "the build takes an hour")
    cycle_id = store.unused_id(store.now())
    request = ApplyRequest(
        cycle_id=cycle_id,
        agent_id="ann",
        summary="The build runs on Tuesdays and takes an hour.",
        consume=[a.id, b.id],
        snapshot={a.id: a.text, b.id: b.text},
    )
    return request, CycleRecord(cycle_id=cycle_id, agent_id="ann")


def test_a_connection_killed_during_every_try_of_apply_leaves_the_cycle_absent(
    pg_url: str,
) -> None:
    with PgStore.open(pg_url) as store:
        request, record = _two_facts_and_a_request(store)
        a, b = request.consume
        generation = store.generation()
        result = _apply_while_killed(pg_url, store, request, record, kills=TRIES)
        assert isinstance(result, StoreError), result
        assert f"gave up after {TRIES} tries" in str(result)
        assert "a lost connection; nothing was written" in str(result)
        assert "\n" not in str(result)
        assert store.generation() == generation
        assert store.find_record(record.cycle_id) is None
        assert [f.id for f in store.list_facts("ann")] == [b, a]
        assert store.receipts(a) == [] and store.counters().consolidations == 0
        # the pool replaced the dead connections: the next apply goes through whole
        again = store.apply_consolidation(request, record)
        assert again.applied and store.require(a).superseded_by == again.summary.id


def test_a_connection_killed_once_during_apply_is_retried_and_the_cycle_lands_whole(
    pg_url: str,
) -> None:
    with PgStore.open(pg_url) as store:
        request, record = _two_facts_and_a_request(store)
        a, b = request.consume
        generation = store.generation()
        result = _apply_while_killed(pg_url, store, request, record, kills=1)
        assert isinstance(result, ApplyOutcome) and result.applied, result
        assert result.summary is not None
        assert store.generation() == generation + 1
        assert store.counters().consolidations == 1
        assert [r.cycle_id for r in store.records()] == [record.cycle_id]
        assert store.receipts(result.summary.id) == sorted([a, b])
        assert [f.id for f in store.list_facts("ann")] == [result.summary.id]


def test_a_server_restarted_mid_transaction_costs_a_retry_not_the_write(
    pg_cluster: Cluster, pg_url: str
) -> None:
    """The write is caught waiting for the writers' lock (so its transaction is open) when
    the server stops hard and starts again: the retry waits for the pool to reconnect and
    the write lands once."""
    with PgStore.open(pg_url) as store:
        before = store.put("ann", "written before the restart")
        outcome: list[object] = []

        def put() -> None:
            try:
                outcome.append(store.put("ann", "open when the server went down"))
            except BaseException as exc:
                outcome.append(exc)

        holder = psycopg.connect(pg_url)
        holder.execute("UPDATE counters SET value = value WHERE name = 'generation'")
        worker = threading.Thread(target=put)
        worker.start()
        _backend_waiting_on_a_lock(pg_url)
        pg_cluster.stop()
        pg_cluster.start()
        worker.join(timeout=60)
        with contextlib.suppress(psycopg.Error):
            holder.close()
        (result,) = outcome
        assert not isinstance(result, BaseException), result
        texts = [f.text for f in store.list_facts("ann")]
        assert texts == ["open when the server went down", "written before the restart"]
        assert store.require(before.id).is_live
