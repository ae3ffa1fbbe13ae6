"""Embedding vectors in PostgreSQL's own terms (ADR 0058): a database of the previous
schema is upgraded by the first writable open (and refused, unchanged, by a read-only
one); a write that waited for the lock while another process started embedding still
queues its fact; a store that never embeds sends no statement about vectors, and asks
whether it embeds in the round trip that takes the lock; the per-process copy's refresh
is one statement however many blocks changed; the block order is LMDB's key order."""

from __future__ import annotations

import threading
import time

import numpy as np
import psycopg
import pytest

from graymatter_tui.backends.postgres import PgStore, schema
from graymatter_tui.core.errors import StoreError
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.vector_layout import block_key
from tests.support.counting_proxy import CountingProxy

DIM = 8


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _embed(store: PgStore, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    while rows := store.embed_waiting(100):
        store.store_vectors("m", rows, _unit(rng.standard_normal((len(rows), DIM))))


def test_a_database_of_the_previous_schema_is_upgraded_by_the_first_writable_open(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:  # a graymatter-tui of schema 3: no vectors
        patched.setattr(schema, "STEPS", schema.STEPS[:3])
        patched.setattr(schema, "SCHEMA_VERSION", 3)
        with PgStore.open(pg_url) as store:
            facts = store.put_many(
                NewFact("ann", f"written at schema 3, number {i}") for i in range(5)
            )
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('vectors')").fetchone() == (None,)
    with pytest.raises(StoreError) as refused:
        PgStore.open(pg_url, read_only=True)
    assert (
        f"has schema version 3; open it once for writing to upgrade it to {schema.SCHEMA_VERSION}"
        in str(refused.value)
    )
    with psycopg.connect(pg_url) as conn:  # the refusal changed nothing
        assert conn.execute("SELECT to_regclass('vectors')").fetchone() == (None,)

    with PgStore.open(pg_url) as store:
        assert store.info().schema_version == schema.SCHEMA_VERSION
        assert [store.require(f.id) for f in facts] == facts
        assert store.embed_state().model is None  # upgraded, not embedding
        assert store.start_embedding("m") == 5
        _embed(store)
        assert store.embed_state().vectors == 5
        probe = store.vector_blocks_since("ann", "m", -1)
        assert probe is not None and probe.changed
        matrix, ids = probe.changed[0]
        nearest = store.nearest("ann", "m", matrix[2], 1)
        assert nearest is not None and nearest[0][0] == ids[2]
    with PgStore.open(pg_url, read_only=True) as reader:
        assert reader.embed_state().vectors == 5


def test_the_vectors_table_orders_keys_as_lmdb_does(pg_url: str) -> None:
    """bytea compares as unsigned bytes: a block number's high byte 0x80 sorts after 0x7f,
    and an agent that is a prefix of another sorts first, as in LMDB."""
    keys = [
        block_key("a", b"b", 0x7F),
        block_key("a", b"b", 0x80),
        block_key("a", b"b", 0x8000_0000),
        block_key("ab", b"b", 0),
        block_key("\u00e9", b"b", 0),
    ]
    with PgStore.open(pg_url) as store:
        store._write(lambda tx: tx.put_vector_rows([(k, b"x") for k in reversed(keys)]))
        found = store._read(lambda tx: [key for key, _ in tx.vector_rows(b"")])
        last = store._read(lambda tx: tx.last_vector_key(b"a\x00b\x00"))
    assert found == sorted(keys)
    assert last == block_key("a", b"b", 0x8000_0000)


def test_a_write_that_waited_for_the_lock_sees_embedding_started_meanwhile(
    pg_url: str,
) -> None:
    """The writer asks whether the store embeds with a statement run after it holds the
    lock: one asked before (or in the locking statement's own snapshot) would miss a
    `start_embedding` committed while it waited, and its fact would never be embedded."""
    with PgStore.open(pg_url) as store:
        store.put("ann", "a fact before anyone embeds")
        with psycopg.connect(pg_url) as other:  # another process, starting to embed
            other.execute("UPDATE counters SET value = value + 1 WHERE name = 'generation'")
            written: list[str] = []
            writer = threading.Thread(
                target=lambda: written.append(store.put("ann", "written while waiting").id)
            )
            writer.start()
            time.sleep(0.5)  # the writer now waits for the generation row's lock
            assert not written
            other.execute("INSERT INTO graymatter_meta VALUES ('embed_model', 'm')")
            other.commit()
        writer.join(30)
        assert written
        waiting = [fact_id for _, fact_id, _ in store.embed_waiting(10)]
        assert waiting == written


# ---- round trips, counted on the wire ---------------------------------------------------
def test_a_refresh_of_the_copy_is_one_statement_however_many_blocks_changed(
    counted: tuple[CountingProxy, str],
) -> None:
    proxy, url = counted
    with PgStore.open(url) as store:
        store.start_embedding("m")
        store.put_many(NewFact("ann", f"fact {i}") for i in range(128 * 6))
        _embed(store)
        generation = store.generation()
        store.retire(store.fact_ids("ann", limit=1)[0])  # one block changes
        trips = []
        for since in (generation, -1):  # one changed block, then all six
            with proxy.counting() as made:
                found = store.vector_blocks_since("ann", "m", since)
            assert found is not None
            trips.append((len(found.changed), made[0], list(proxy.statements)))
        with proxy.counting() as polled:
            store.generation()
    (one, one_trips, one_sql), (six, six_trips, six_sql) = trips
    assert (one, six) == (1, 6)
    # One statement each (besides the pool's liveness check of the connection, an empty
    # query), the same for one block as for six, and no BEGIN or COMMIT around it.
    assert one_trips == six_trips == polled[0] == 2
    for sql in (one_sql, six_sql):
        assert [s for s in sql if s] == [sql[-1]] and "FROM vectors d" in sql[-1]


def test_a_store_that_never_embeds_sends_nothing_about_vectors_when_written(
    counted: tuple[CountingProxy, str],
) -> None:
    proxy, url = counted

    def curate(text: str) -> None:
        fact = store.put("ann", text)
        store.revise(fact.id, text + ", revised")

    with PgStore.open(url) as store:
        with proxy.counting():  # the first time, every statement's text is on the wire
            curate("a first fact nobody embeds")
        sent = " ".join(proxy.statements)
        assert "vectors" not in sent and "embed_queue" not in sent
        # Whether the store embeds is asked in the round trip that takes the lock.
        lock = next(trip for trip in proxy.trips if any("UPDATE counters" in s for s in trip))
        assert any("embed_model" in statement for statement in lock)
        for i in range(6):  # past the driver's threshold: every statement is prepared
            curate(f"warming up {i}")
        # The two measured facts share no word with any other fact, so the check for
        # duplicates and updates a write makes costs both the same.
        with proxy.counting() as plain:
            curate("zephyr quartz lantern")
        store.start_embedding("m")
        for i in range(6):
            curate(f"warming up again {i}")
        with proxy.counting() as embedding:
            curate("marble violin harbour")
    # A store that embeds pays only for its queue: put, one insert; revise, the old
    # vector's lookup, its queue row's delete, the revision's insert.
    assert plain[0] > 0
    assert embedding[0] - plain[0] == 1 + 3
