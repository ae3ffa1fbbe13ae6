"""Schema 6 records when each fact stops being live. A store of the previous release
(tests/fixtures/store-0.7.0, schema 5) gets those records derived from its journal and
its activity feed on its first writable open, and answers the past as its read-only view
derived it before the upgrade; a store too old to have an activity feed (0.3.0) gets
estimates, each marked approximate. LMDB only: LMDB's tables (PostgreSQL's step:
tests/pg/test_pg_lifespans.py)."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import lmdb

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.schema import SCHEMA_VERSION
from graymatter_tui.core import clock
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage.values import PastFacts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DAY_OF_CYCLES = "2026-12-20T12:00:00Z"  # the fixtures' cycles and revert
DAY_BEFORE = "2026-12-19T12:00:00Z"


def _copy(release: str, tmp_path: Path) -> Path:
    target = tmp_path / release
    shutil.copytree(FIXTURES / release / "store", target)
    return target


def _rows(path: Path) -> dict[bytes, bytes]:
    env = lmdb.open(str(path), max_dbs=32, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            table = env.open_db(b"lifespans", txn=txn, create=False)
            return {bytes(k): bytes(v) for k, v in txn.cursor(db=table)}
    finally:
        env.close()


def _applied(store: LmdbStore, agent: str, kind: str) -> CycleRecord:
    return next(
        r
        for r in store.records(agent)
        if r.kind == kind and r.outcome == "applied" and r.agent_id == agent
    )


def _answers(past: PastFacts) -> dict[str, tuple[str, str, list[tuple[str, str, bool]]]]:
    """What a past read says of each fact: then, now, and its later endings."""
    return {
        p.fact_id: (p.then, p.now, [(e.how, e.record, e.approximate) for e in p.later])
        for p in past.facts
    }


def _moments(store: LmdbStore) -> list[AsOf]:
    records = [AsOf(record=r.cycle_id) for r in store.records(None)]
    times = [AsOf(time=clock.parse_time(t)) for t in (DAY_BEFORE, DAY_OF_CYCLES)]
    return records + times


def test_the_0_7_0_store_is_dated_from_its_journal_and_feed_on_upgrade(tmp_path: Path) -> None:
    path = _copy("store-0.7.0", tmp_path)
    with LmdbStore.open(path, read_only=True) as old:
        assert old.info().schema_version == 5
        before = {m: old.past_facts(None, m, state="all") for m in _moments(old)}
        live_now = {f.id for f in old.list_facts(None, "live")}
        ops_cycle = _applied(old, "ops-agent", "consolidate")
        support_cycle = _applied(old, "support-bot", "consolidate")
        revert = _applied(old, "support-bot", "revert")
        tombstones = {f.id for f in old.list_facts(None, "tombstones")}
    assert all(p.derived for p in before.values())  # read as it is: derived when asked

    with LmdbStore.open(path) as store:
        assert store.info().schema_version == SCHEMA_VERSION == 6
        after = {m: store.past_facts(None, m, state="all") for m in _moments(store)}
    # one row per fact that ever stopped being live: the 5 tombstones and the 2 facts
    # the revert made live again
    rows = _rows(path)
    assert len(rows) == len(tombstones) + len(revert.restored) == 7
    assert {k.split(b"\0", 1)[1].decode() for k in rows} == tombstones | set(revert.restored)
    for moment, past in after.items():
        assert not past.derived  # read from the rows now
        assert _answers(past) == _answers(before[moment]), moment  # as derived before

    day_before = after[_moments_key(after, DAY_BEFORE)]
    live_then = {p.fact_id for p in day_before.facts if p.then == "live"}
    # the day before the cycles: what the ops cycle consumed was live, its summary (and
    # the support cycle's) was not written yet; a fact retired or revised by then was not
    assert live_then == (live_now - {ops_cycle.summary_id}) | set(ops_cycle.consumed)
    assert support_cycle.summary_id not in {p.fact_id for p in day_before.facts}
    consumed = next(p for p in day_before.facts if p.fact_id == ops_cycle.consumed[0])
    assert [(e.how, e.record, e.by) for e in consumed.later] == [
        ("consumed", ops_cycle.cycle_id, ops_cycle.summary_id)
    ]
    # the feed dates every ending of this store exactly: nothing is an estimate
    assert not any(p.approximate for past in after.values() for p in past.facts)

    day_of = after[_moments_key(after, DAY_OF_CYCLES)]
    assert {p.fact_id for p in day_of.facts if p.then == "live"} == live_now
    restored = {p.fact_id: p for p in day_before.facts if p.fact_id in revert.restored}
    assert all(
        [(e.how, e.restored_by) for e in p.later] == [("consumed", revert.cycle_id)]
        for p in restored.values()
    )


def _moments_key(found: dict[AsOf, PastFacts], stamp: str) -> AsOf:
    return next(m for m in found if m.time == clock.parse_time(stamp))


def test_a_write_after_the_upgrade_is_recorded_as_it_happens(tmp_path: Path) -> None:
    path = _copy("store-0.7.0", tmp_path)
    with LmdbStore.open(path) as store:
        kept = next(f for f in store.list_facts("ops-agent") if f.text.startswith("Kept fact"))
        moment = store.now()
        store.retire(kept.id)
        past = store.past_facts("ops-agent", AsOf(time=moment))
    item = next(p for p in past.facts if p.fact_id == kept.id)
    assert item.then == "live" and item.now == "tombstone"
    assert [(e.how, e.approximate) for e in item.later] == [("retired", False)]


def test_a_store_without_an_activity_feed_gets_estimates_marked_approximate(
    tmp_path: Path,
) -> None:
    path = _copy("store-0.3.0", tmp_path)  # schema 2: no feed to date the writes
    with LmdbStore.open(path) as store:
        cycle = _applied(store, "ops-agent", "consolidate")
        past = store.past_facts("ops-agent", AsOf(record=cycle.cycle_id))
        # written and ended in the same instant (the fixture's clock stood still)
        support = store.past_facts(
            "support-bot", AsOf(time=_at("2026-11-30T12:00:00Z")), state="tombstones"
        )
    consumed = next(p for p in past.facts if p.fact_id == cycle.consumed[0])
    ending = consumed.later[0]
    # a cycle's consumption is dated at the cycle's end, and says so
    assert (ending.how, ending.at, ending.approximate) == ("consumed", cycle.finished_at, True)
    assert consumed.approximate and past.approximate
    by_text = {p.fact.text: p for p in support.facts if p.fact is not None}
    retired = by_text["A fact to retire."].ended
    assert retired is not None
    assert (retired.how, retired.approximate) == ("retired", True)  # at its last access
    revised = by_text["Old wording of a fact."].ended
    assert revised is not None
    assert (revised.how, revised.approximate) == ("revised", False)  # the revision's time


def _at(stamp: str) -> datetime:
    return clock.parse_time(stamp)
