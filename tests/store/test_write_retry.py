"""A write transaction that runs twice does the same thing as one that ran once.

`Store.write` re-runs its function after the map filled (or another process resized it).
For every write operation of the store, one store runs it with exactly one forced retry
(`Store.simulate_map_full`, which takes the real grow-and-retry path) and a twin store
runs it without; every table, byte for byte, and the return value must be identical, and
no argument the caller passed may have changed. The operations are found by reading the
source of `Store`, so a new write operation without a case here fails.

LMDB only: LMDB's map-full retry.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.core.entities import extract_entities
from graymatter_tui.core.errors import StoreError
from graymatter_tui.core.model import CycleRecord, Fact
from graymatter_tui.storage import ApplyRequest, NewFact
from graymatter_tui.storage.ids import seed_ids
from tests.support.clock import ManualClock

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
AGENT = "agent-a"
CYCLE_ID = "01KJ0000000000000000000001"
IMPORTED = "01KH0000000000000000000001"
WORDS = ["apple", "river", "cobalt", "lantern", "meadow", "quartz", "saffron", "tundra"]


@dataclass
class Case:
    """`setup` prepares a store and returns the operation's arguments; `run` calls it."""

    setup: Callable[[LmdbStore, ManualClock], tuple[Any, ...]]
    run: Callable[..., Any]


def _facts(store: LmdbStore, n: int = 6, **kw: Any) -> list[Fact]:
    return store.put_many(
        NewFact(AGENT, f"Staging database restarts nightly, note {i}.", **kw) for i in range(n)
    )


def _pending_record(cycle_id: str = CYCLE_ID) -> CycleRecord:
    return CycleRecord(cycle_id=cycle_id, agent_id=AGENT, summariser="local", started_at="x")


def _apply_args(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    facts = _facts(store)
    request = ApplyRequest(
        cycle_id=CYCLE_ID,
        agent_id=AGENT,
        summary="Staging database restarts nightly.",
        consume=[f.id for f in facts[:3]],
        snapshot={f.id: f.text for f in facts},
    )
    return request, _pending_record()


def _applied(store: LmdbStore, clock: ManualClock) -> tuple[Any, ...]:
    request, record = _apply_args(store, clock)
    assert store.apply_consolidation(request, record).applied
    return (CYCLE_ID,)


def _weak_facts(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    _facts(store, 4, weight=0.005)
    _facts(store, 2)
    return AGENT, _pending_record()


def _aged(store: LmdbStore, clock: ManualClock) -> tuple[Any, ...]:
    _facts(store, 5, accessed_at=NOW - timedelta(days=40))
    return AGENT, 720.0


def _graph(store: LmdbStore, clock: ManualClock) -> tuple[Any, ...]:
    store.put_many(
        NewFact(AGENT, text)
        for text in ("Alice Chen owns Project Atlas.", "Bob Stone reviews Project Atlas.")
    )
    store.extract_graph(AGENT, extract_entities)
    clock.advance(hours=24 * 90)
    return AGENT, 720.0


def _import_args(_store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    stamp = "2026-02-01T10:00:00.000000Z"
    summary = Fact(
        id=IMPORTED,
        agent_id=AGENT,
        text="merged",
        created_at=stamp,
        accessed_at=stamp,
        cycle_id=CYCLE_ID,
    )
    consumed = Fact(
        id="01KH0000000000000000000002",
        agent_id=AGENT,
        text="old",
        created_at=stamp,
        accessed_at=stamp,
        superseded_by=IMPORTED,
        cycle_id=CYCLE_ID,
    )
    record = CycleRecord(
        cycle_id=CYCLE_ID,
        agent_id=AGENT,
        outcome="applied",
        summary_id=IMPORTED,
        consumed=[consumed.id],
    )
    return [summary, consumed], [record]


def _one(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    return (_facts(store, 1)[0].id,)


def _pinned(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    return (store.put(AGENT, "pinned note", pinned=True).id,)


def _nothing(_store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    return ()


TWIN = "Staging database restarts nightly, twice noted."


def _twins(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    store.put(AGENT, TWIN, pinned=True)
    store.put(AGENT, TWIN)
    return (TWIN,)


def _aliased(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    store.add_alias(AGENT, "db", ["database"])
    return ("db",)


def _held(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    (text,) = _twins(store, _clock)
    return (store.hold_change(AGENT, "update", text, "Restarts weekly.").id,)


def _queued(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    facts = _facts(store, 4)
    store.start_embedding("concepts")
    store.retire(facts[0].id)
    rows = store.embed_waiting(10)
    # Plain lists: the caller's arguments are compared after the run.
    vectors = [[1.0 if i == n else 0.0 for i in range(4)] for n in range(len(rows))]
    return "concepts", rows, vectors


def _probed(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    return (store.add_probe(AGENT, "staging database")[0].id,)


def _alert_held(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    """A fact the next one is a possible update of: `remember` also holds a review item."""
    store.put(AGENT, "Disk alerts on the staging database fire at 74% usage.")
    return ()


def _scheduled(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    store.set_probe_schedule(3600)  # never run yet: due now
    return ()


def _scored(store: LmdbStore, _clock: ManualClock) -> tuple[Any, ...]:
    from graymatter_tui.recall.probes import score

    _facts(store, 3)
    probe = store.add_probe(AGENT, "staging database")[0]
    return AGENT, score(store, [probe]), "cli"


def _snapshot_of_another(_store: LmdbStore, clock: ManualClock) -> tuple[Any, ...]:
    """Everything a migration carries, from a second store with a cycle, a probe, a
    checkpoint, an alias, a held change and a graph."""
    with tempfile.TemporaryDirectory() as other, LmdbStore.open(other, clock_fn=clock) as source:
        request, record = _apply_args(source, clock)
        assert source.apply_consolidation(request, record).applied
        source.add_probe(AGENT, "staging database")
        source.save_checkpoint(AGENT, '{"step": 1}')
        source.add_alias(AGENT, "db", ["database"])
        _held(source, clock)
        source.extract_graph(AGENT, extract_entities)
        return (source.snapshot(),)


def _trial_args(store: LmdbStore, clock: ManualClock) -> tuple[Any, ...]:
    request, _record = _apply_args(store, clock)

    def look(index: Any) -> list[tuple[str, int, int]]:
        return sorted(index.iter_postings(AGENT, "stage"))

    return request, look


def _alike(store: LmdbStore, clock: ManualClock) -> tuple[Any, ...]:
    """Two rewordings and an update, as the embedder's pass finds them close."""
    old = store.put(AGENT, "The kids' school starts at 8:00 a.m.")
    new = store.put(AGENT, "School for the kids now begins at 8:20.")
    same = store.put(AGENT, "The kids' school begins at 8:00 in the morning.")
    return ([(new.id, {old.id: 0.86, same.id: 0.84}), (same.id, {old.id: 0.95})],)


CASES: dict[str, Case] = {
    "remember": Case(
        _alert_held,
        lambda s: s.remember(AGENT, "Disk alerts on the staging database fire at 80% usage."),
    ),
    "put_many": Case(_nothing, lambda s: s.put_many(NewFact(AGENT, f"bulk {i}") for i in range(5))),
    "set_stem_language": Case(
        lambda s, c: (_facts(s, 3) and "german",), lambda s, lang: s.set_stem_language(lang)
    ),
    "pin": Case(_one, lambda s, i: s.pin(i)),
    "unpin": Case(_pinned, lambda s, i: s.unpin(i)),
    "revise": Case(_pinned, lambda s, i: s.revise(i, "pinned note, revised")),
    "retire": Case(_one, lambda s, i: s.retire(i)),
    "supersede_text": Case(_twins, lambda s, t: s.supersede_text(AGENT, t, "Restarts weekly.")),
    "retire_text": Case(lambda s, c: (_facts(s, 2)[0].text,), lambda s, t: s.retire_text(AGENT, t)),
    "pin_text": Case(_twins, lambda s, t: s.pin_text(AGENT, t, pinned=False)),
    "save_checkpoint": Case(_nothing, lambda s: s.save_checkpoint(AGENT, '{"step": 1}')),
    "add_alias": Case(_aliased, lambda s, t: s.add_alias(AGENT, t, ["postgres", "database"])),
    "touch": Case(lambda s, c: ([f.id for f in _facts(s, 3)],), lambda s, ids: s.touch(ids)),
    "delete": Case(lambda s, c: ([f.id for f in _facts(s, 3)],), lambda s, ids: s.delete(ids)),
    "import_all": Case(_import_args, lambda s, f, r: s.import_all(f, r)),
    "decay": Case(_aged, lambda s, a, h: s.decay(a, h)),
    "apply_consolidation": Case(_apply_args, lambda s, q, r: s.apply_consolidation(q, r)),
    "prune": Case(_weak_facts, lambda s, a, r: s.prune(a, r)),
    "save_record": Case(lambda s, c: (_pending_record(),), lambda s, r: s.save_record(r)),
    "revert": Case(_applied, lambda s, c: s.revert(c)),
    "extract_graph": Case(
        lambda s, c: (_facts(s, 3)[0].agent_id,),
        lambda s, a: s.extract_graph(a, extract_entities),
    ),
    "decay_graph": Case(_graph, lambda s, a, h: s.decay_graph(a, h)),
    # A new, empty store: the demo may claim it.
    "claim_for_demo": Case(_nothing, lambda s: s.claim_for_demo()),
    "hold_change": Case(_twins, lambda s, t: s.hold_change(AGENT, "update", t, "Restarts weekly.")),
    "start_embedding": Case(
        lambda s, c: (_facts(s, 3) and "concepts",), lambda s, m: s.start_embedding(m)
    ),
    "store_vectors": Case(
        _queued, lambda s, m, r, v: s.store_vectors(m, r, np.array(v, dtype=np.float32))
    ),
    "hold_close_pairs": Case(_alike, lambda s, close: s.hold_close_pairs(AGENT, close)),
    "approve_proposal": Case(_held, lambda s, i: s.approve_proposal(i)),
    "reject_proposal": Case(_held, lambda s, i: s.reject_proposal(i, "not what happened")),
    "save_probe": Case(_nothing, lambda s: s.save_probe(AGENT, "staging database", 5)),
    "remove_probe": Case(_probed, lambda s, i: s.remove_probe(i)),
    "set_probe_schedule": Case(_nothing, lambda s: s.set_probe_schedule(6 * 3600)),
    "claim_probe_run": Case(_scheduled, lambda s: s.claim_probe_run()),
    "record_probe_run": Case(_scored, lambda s, a, scores, t: s.record_probe_run(a, scores, t)),
    "trial_apply": Case(_trial_args, lambda s, q, look: s.trial_apply(q, look)),
    "load_snapshot": Case(_snapshot_of_another, lambda s, snap: s.load_snapshot(snap)),
}


def write_operations() -> set[str]:
    """Every operation of Store that runs a write transaction (`write` itself, the
    transaction API, is not an operation)."""
    found = set()
    for cls in LmdbStore.__mro__:
        for name, member in vars(cls).items():
            if name in ("write", "_write") or not inspect.isfunction(member):
                continue
            source = inspect.getsource(member)
            if "self._write(" in source or "self._env.write(" in source:
                found.add(name)
    return found


def test_every_write_operation_has_a_retry_case() -> None:
    assert write_operations() == set(CASES)


def dump(store: LmdbStore) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every table, key and value, as bytes."""

    def run(tx: Any) -> dict[str, list[tuple[bytes, bytes]]]:
        return {
            name: [(bytes(k), bytes(v)) for k, v in tx.txn.cursor(db=db).iternext()]
            for name, db in vars(tx.dbs).items()
        }

    return store.read(run)


def run_case(path: Path, case: Case, *, forced_retries: int) -> tuple[Any, Any, Any, Any]:
    """(result, every table, the arguments before, the arguments after) of one run."""
    seed_ids(20260301)
    clock = ManualClock(NOW)
    with LmdbStore.open(path, clock_fn=clock) as store:
        args = case.setup(store, clock)
        before = copy.deepcopy(args)
        retries = store.retries
        store.simulate_map_full = forced_retries
        result = case.run(store, *args)
        assert store.simulate_map_full == 0
        assert store.retries == retries + forced_retries
        return result, dump(store), before, args


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_retried_write_does_what_one_run_does(tmp_path: Path, name: str) -> None:
    once = run_case(tmp_path / "once", CASES[name], forced_retries=0)
    twice = run_case(tmp_path / "twice", CASES[name], forced_retries=1)
    assert twice[0] == once[0], "the return value differs after a retry"
    for table in once[1]:
        assert twice[1][table] == once[1][table], f"table {table} differs after a retry"
    assert once[3] == once[2] and twice[3] == twice[2], "the caller's arguments changed"
    seed_ids(None)


def test_a_cycle_whose_apply_never_commits_does_not_say_applied(tmp_path: Path) -> None:
    """The caller's record changes only after the commit: a failed apply leaves no trace
    beyond the record decay journaled (unfinished, no summary, nothing consumed)."""
    clock = ManualClock(NOW)
    with LmdbStore.open(tmp_path / "s", clock_fn=clock) as store:
        store.put_many(
            NewFact(AGENT, text, weight=0.2)
            for text in (
                "Staging database restarts nightly.",
                "Staging database restarts nightly. Owner is the ops team.",
            )
        )
        store.put_many(NewFact(AGENT, f"unrelated note {word}") for word in WORDS)
        cycle = Cycle(store, AGENT, LocalSummariser(), CycleOptions(threshold=5))
        while cycle.next_stage != "apply":
            asyncio.run(cycle.step())
        assert cycle.review is not None and cycle.review.plan.applicable
        store.simulate_map_full = 10_000  # every attempt fails until the map cannot grow
        with pytest.raises(StoreError):
            cycle.advance()
        store.simulate_map_full = 0
        assert cycle.record.outcome == ""
        assert cycle.record.summary_id == "" and cycle.record.consumed == []
        (journaled,) = store.records()
        assert (journaled.outcome, journaled.summary_id, journaled.consumed) == ("", "", [])
        assert store.counters().consolidations == 0


def test_prune_retried_by_a_real_full_map_copies_each_fact_once(tmp_path: Path) -> None:
    """No simulation. LMDB rounds a map size smaller than the data up to exactly the pages
    in use, so the map is then full. Pages freed by deleting filler facts let prune's
    deletes fit, and the journal record holding 300 fact copies (one large value, which
    needs contiguous new pages) is what overflows: the first attempt has copied the facts
    when the map fills."""
    with LmdbStore.open(tmp_path / "full") as store:
        weak = store.put_many(
            NewFact(AGENT, f"weak fact {i} " + "x" * 300, weight=0.005) for i in range(300)
        )
        filler = store.put_many(NewFact("filler", f"filler {i} " + "y" * 100) for i in range(2000))
        store.delete(f.id for f in filler)
        with store._env.resize.exclusive():
            store._env.lmdb_env.set_mapsize(1)  # rounded up to exactly the pages in use
        store.prune(AGENT, _pending_record())
        assert store.retries >= 1, "the map did not fill: this test proves nothing"
        (record,) = store.records()
        assert sorted(f.id for f in record.pruned) == sorted(f.id for f in weak)
        assert store.all_facts() == []
