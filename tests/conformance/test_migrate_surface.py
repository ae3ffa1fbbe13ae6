"""`snapshot` and `load_snapshot` (ADR 0046) on both backends: a snapshot read from
either loads into either and reads back the same, rows in one layout; a store holding
anything is refused and left as it was; shared ids are refused even when a non-empty
target is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.core.entities import extract_entities
from graymatter_tui.core.errors import Conflict
from graymatter_tui.recall.ranking import rank
from graymatter_tui.storage import NewFact, StoreSnapshot, TargetNotEmpty
from tests.conformance.conftest import AnyStore
from tests.support.clock import ManualClock

AGENT = "ops"


def fill(store: AnyStore, clock: ManualClock) -> None:
    """A cycle applied and one reverted, a pin, a probe, a checkpoint, an alias, a held
    change and a rejected one, and the graph the cycles extracted."""
    store.put_many(
        NewFact(AGENT, text, weight=0.2)
        for text in (
            "Staging database restarts nightly.",
            "Staging database restarts nightly. Owner is the ops team.",
            "Invoices for Acme go out by email.",
            "Invoices for Acme go out by email on Fridays.",
        )
    )
    store.put_many(
        NewFact(AGENT, f"Unrelated note about {w}.") for w in ("apple", "river", "cobalt")
    )
    for _ in range(2):
        cycle = Cycle(store, AGENT, LocalSummariser(), CycleOptions(threshold=3))
        cycle.run_sync()
        clock.advance(hours=1)
    applied = [r for r in store.records() if r.outcome == "applied"]
    store.revert(applied[-1].cycle_id)
    pinned = store.put(AGENT, "Alice Chen owns Project Atlas.", pinned=True)
    store.add_probe(AGENT, "staging database")
    store.save_checkpoint(AGENT, '{"step": 2}')
    store.add_alias(AGENT, "db", ["database"])
    store.hold_change(AGENT, "update", pinned.text, "Alice Chen owns Project Atlas and Zeus.")
    rejected = store.hold_change(AGENT, "add", "", "A fact to refuse.")
    store.reject_proposal(rejected.id, "no")
    store.extract_graph(AGENT, extract_entities)


def filled_lmdb_snapshot(tmp_path: Path, clk: ManualClock) -> StoreSnapshot:
    """The snapshot of an LMDB store holding `fill`'s content."""
    with LmdbStore.open(tmp_path / "lmdb-source", clock_fn=clk) as source:
        fill(source, clk)
        return source.snapshot()


def _content(snap: StoreSnapshot) -> tuple[object, ...]:
    counters = {k: v for k, v in snap.counters.items() if k != "activity_seq"}
    return (snap.stem_language, snap.facts, snap.records, snap.probes, snap.rows, counters)


def test_a_snapshot_of_either_backend_loads_into_the_other_and_reads_back_the_same(
    any_store: AnyStore, clk: ManualClock, tmp_path: Path
) -> None:
    fill(any_store, clk)
    snap = any_store.snapshot()
    assert snap.rows["graph_nodes"] and snap.rows["proposals"] and snap.rows["receipts"]
    assert snap.counters["review_pending"] == 1 and snap.counters["reverts"] == 1
    with LmdbStore.open(tmp_path / "lmdb-copy", clock_fn=clk) as copy:
        result = copy.load_snapshot(snap, origin="test")
        assert result.facts == len(snap.facts) and result.activity_copied
        again = copy.snapshot()
        assert _content(again) == _content(snap)
        assert again.activity[: len(snap.activity)] == snap.activity
        assert all(check.ok for check in check_invariants(copy))
        assert copy.pending_count() == 1


def test_a_snapshot_loads_into_either_backend(
    any_store: AnyStore, clk: ManualClock, tmp_path: Path
) -> None:
    snap = filled_lmdb_snapshot(tmp_path, clk)
    any_store.load_snapshot(snap, origin="lmdb:somewhere")
    assert _content(any_store.snapshot()) == _content(snap)
    assert all(check.ok for check in check_invariants(any_store))
    assert any_store.latest_checkpoint(AGENT) is not None
    assert any_store.aliases(AGENT) == {"db": ["database"]}
    assert any_store.graph_size(AGENT)[0] > 0


def test_a_store_holding_anything_is_refused_and_unchanged(
    any_store: AnyStore, clk: ManualClock, tmp_path: Path
) -> None:
    snap = filled_lmdb_snapshot(tmp_path, clk)
    any_store.add_alias("someone", "k8s", ["kubernetes"])  # no fact at all, still content
    before = any_store.snapshot()
    with pytest.raises(TargetNotEmpty, match="aliases rows"):
        any_store.load_snapshot(snap)
    assert any_store.snapshot() == before


def test_allowed_into_a_non_empty_store_shared_ids_are_still_refused(
    any_store: AnyStore, clk: ManualClock, tmp_path: Path
) -> None:
    snap = filled_lmdb_snapshot(tmp_path, clk)
    any_store.load_snapshot(snap)
    before = any_store.snapshot()
    with pytest.raises(Conflict, match=r"already holds .* of the source's ids or keys"):
        any_store.load_snapshot(snap, allow_non_empty=True)
    assert any_store.snapshot() == before


def test_allowed_into_a_non_empty_store_the_counters_add_up(
    any_store: AnyStore, clk: ManualClock, tmp_path: Path
) -> None:
    snap = filled_lmdb_snapshot(tmp_path, clk)
    any_store.put("other", "a fact of another agent")
    any_store.load_snapshot(snap, allow_non_empty=True)
    after = any_store.snapshot()
    assert len(after.facts) == len(snap.facts) + 1
    for name in ("consolidations", "facts_consolidated", "reverts", "cycles", "review_pending"):
        assert after.counters[name] == snap.counters[name]
    assert all(check.ok for check in check_invariants(any_store))


def test_an_empty_target_takes_the_source_stemming_language(
    any_store: AnyStore, clk: ManualClock, tmp_path: Path
) -> None:
    with LmdbStore.open(tmp_path / "german", clock_fn=clk, stem_language="german") as source:
        source.put(AGENT, "Die Datenbanken werden nachts neu gestartet.")
        snap = source.snapshot()
    assert any_store.info().stem_language == "english"
    any_store.load_snapshot(snap)
    assert any_store.info().stem_language == "german"
    ranked = rank(any_store, AGENT, "Datenbank")
    assert [hit.fact.text for hit in ranked] == [snap.facts[0].text]
