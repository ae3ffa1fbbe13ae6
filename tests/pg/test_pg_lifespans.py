"""Schema step 5 on PostgreSQL (LMDB's schema 6): a database of schema 4, with no record
of when its facts stopped being live, is refused by a read-only open and upgraded by the
first writable one, which derives those records from its journal and activity feed in
the step's transaction: the past then reads as it did when every write was recorded."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from graymatter_tui.backends.postgres import PgStore, schema
from graymatter_tui.core import clock
from graymatter_tui.core.errors import StoreError
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage.values import ApplyRequest, PastFacts
from tests.support.clock import ManualClock

Answers = dict[str, tuple[str, str, list[tuple[str, str, str, bool]]]]


def _answers(past: PastFacts) -> Answers:
    return {
        p.fact_id: (p.then, p.now, [(e.how, e.record, e.until, e.approximate) for e in p.later])
        for p in past.facts
    }


def _history(store: PgStore, tick: ManualClock) -> list[datetime]:
    """A revision, a retirement, an approved review, a consolidation and its revert, a
    minute apart; the moment after each."""
    moments = []
    a = store.put("ops", "The staging database listens on port 5432.")
    b = store.put("ops", "Staging's database is on port 5432.")
    c = store.put("ops", "Backups run nightly at 02:00 UTC.")
    d = store.put("ops", "The on-call rota is in the wiki.")
    e = store.put("ops", "Deploys need one approval.")
    moments.append(store.now())
    tick.advance(minutes=1)
    store.revise(c.id, "Backups run nightly at 03:00 UTC.")
    moments.append(store.now())
    tick.advance(minutes=1)
    store.retire(d.id)
    moments.append(store.now())
    tick.advance(minutes=1)
    held = store.hold_change("ops", "update", e.text, "Deploys need two approvals.")
    tick.advance(minutes=1)
    assert store.approve_proposal(held.id).applied
    moments.append(store.now())
    tick.advance(minutes=1)
    cycle = store.unused_id(store.now())
    stamp = clock.format_time(store.now())
    outcome = store.apply_consolidation(
        ApplyRequest(
            cycle_id=cycle,
            agent_id="ops",
            summary="Staging's database: port 5432.",
            consume=[a.id, b.id],
            snapshot={a.id: a.text, b.id: b.text},
        ),
        CycleRecord(cycle_id=cycle, agent_id="ops", started_at=stamp, finished_at=stamp),
    )
    assert outcome.applied
    moments.append(store.now())
    tick.advance(minutes=1)
    store.revert(cycle)
    moments.append(store.now())
    tick.advance(minutes=1)
    return moments


def _as_schema_4(url: str) -> None:
    """The database as graymatter-tui of schema 4 left it: the same tables but this one."""
    with psycopg.connect(url) as conn:
        conn.execute("DROP TABLE lifespans")
        conn.execute("UPDATE graymatter_meta SET value = '4' WHERE key = 'schema_version'")


def test_a_schema_4_database_gets_its_endings_derived_by_the_upgrade(pg_url: str) -> None:
    assert schema.SCHEMA_VERSION == 5
    tick = ManualClock(datetime(2026, 3, 1, 12, tzinfo=UTC))
    with PgStore.open(pg_url, clock_fn=tick) as store:
        moments = _history(store, tick)
        recorded = {
            m: _answers(store.past_facts("ops", AsOf(time=m), state="all")) for m in moments
        }
        journal = [r.cycle_id for r in store.records("ops")]
        by_record = {r: _answers(store.past_facts(None, AsOf(record=r))) for r in journal}
    _as_schema_4(pg_url)

    with pytest.raises(StoreError, match="has schema version 4; open it once for writing"):
        PgStore.open(pg_url, read_only=True)
    with psycopg.connect(pg_url) as conn:  # the refusal changed nothing
        assert conn.execute("SELECT to_regclass('lifespans')").fetchone() == (None,)

    with PgStore.open(pg_url, clock_fn=tick) as store:
        assert store.info().schema_version == 5
        derived = {m: _answers(store.past_facts("ops", AsOf(time=m), state="all")) for m in moments}
        derived_by_record = {r: _answers(store.past_facts(None, AsOf(record=r))) for r in journal}
    assert derived == recorded
    assert derived_by_record == by_record
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT count(*) FROM lifespans").fetchone()
    # the revised fact, the retired one, the one the review replaced, the two consumed
    # (then restored) and the summary
    assert rows == (6,)


def test_a_new_database_starts_with_an_empty_table_and_records_each_ending(
    pg_url: str,
) -> None:
    tick = ManualClock(datetime(2026, 3, 1, 12, tzinfo=UTC))
    with PgStore.open(pg_url, clock_fn=tick) as store:
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT count(*) FROM lifespans").fetchone() == (0,)
        fact = store.put("ops", "Short-lived.")
        tick.advance(minutes=1)
        store.retire(fact.id)
    with psycopg.connect(pg_url) as conn:
        found = conn.execute("SELECT fact_id, record::text FROM lifespans").fetchall()
    assert [row[0] for row in found] == [fact.id]
    assert '"how":"retired"' in found[0][1] and "2026-03-01T12:01:00" in found[0][1]
