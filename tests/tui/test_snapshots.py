"""SVG snapshots of every screen on the demo store, at a fixed path and a fixed clock.

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update` and look at the
SVGs before committing them. Ids are made reproducible with `seed_ids` (what
GRAYMATTER_ID_SEED does for a demo), so screens showing a cycle id match every run.
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.core import provenance
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.storage.ids import seed_ids
from tests.support.clock import ManualClock
from tests.tui.helpers import FIXED, OPS, SIZE, make_app, open_store, settle
from tests.tui.test_status_history import build_history

# The topbar and the Status pane show the store's path, so it must not vary.
SNAPSHOT_DIR = Path(tempfile.gettempdir()) / "graymatter-snapshots"

Compare = Callable[..., bool]


@pytest.fixture
def snapshot_store() -> Iterator[LmdbStore]:
    # Two test runs on one machine (two checkouts) would share the fixed path; the lock
    # makes the second wait instead of drawing the first one's store.
    with open(f"{SNAPSHOT_DIR}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(SNAPSHOT_DIR, ignore_errors=True)
        seed_ids(2026)
        store = open_store(SNAPSHOT_DIR)
        try:
            create_demo(store)
            yield store
        finally:
            store.close()
            seed_ids(None)
            shutil.rmtree(SNAPSHOT_DIR, ignore_errors=True)


@pytest.fixture
def history_snapshot_store() -> Iterator[LmdbStore]:
    """The demo store with six points of ops-agent's history, hours apart (a clock the
    history moves, then stands still), at the snapshots' fixed path."""
    with open(f"{SNAPSHOT_DIR}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(SNAPSHOT_DIR, ignore_errors=True)
        seed_ids(2026)
        clock = ManualClock(FIXED)
        store = LmdbStore.open(SNAPSHOT_DIR, clock_fn=clock)
        try:
            create_demo(store)
            build_history(store, clock)
            yield store
        finally:
            store.close()
            seed_ids(None)
            shutil.rmtree(SNAPSHOT_DIR, ignore_errors=True)


async def ready(pilot: Pilot[Any]) -> None:
    """Let the app finish starting: panes 2-5 mount lazily after the first frame (a key
    typed before that crashes the app; see test_navigation's typed-ahead test)."""
    await settle(pilot)


def applied_cycle(store: LmdbStore) -> None:
    assert Cycle(store, OPS, LocalSummariser()).run_sync().outcome == "applied"


def test_facts(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    assert snap_compare(make_app(snapshot_store), terminal_size=SIZE, run_before=ready)


def test_fact_detail(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    app = make_app(snapshot_store)
    assert snap_compare(app, terminal_size=SIZE, run_before=ready, press=["down", "enter"])


def test_status(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    assert snap_compare(make_app(snapshot_store), terminal_size=SIZE, run_before=ready, press=["5"])


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_status_history_charts(
    snap_compare: Compare, history_snapshot_store: LmdbStore, size: tuple[int, int]
) -> None:
    app = make_app(history_snapshot_store)
    assert snap_compare(app, terminal_size=size, run_before=ready, press=["5", "h"])


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_status_history_table(
    snap_compare: Compare, history_snapshot_store: LmdbStore, size: tuple[int, int]
) -> None:
    app = make_app(history_snapshot_store)
    assert snap_compare(app, terminal_size=size, run_before=ready, press=["5", "h", "t"])


def test_help(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    assert snap_compare(
        make_app(snapshot_store), terminal_size=SIZE, run_before=ready, press=["question_mark"]
    )


def test_tombstones_after_a_cycle(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    applied_cycle(snapshot_store)
    assert snap_compare(make_app(snapshot_store), terminal_size=SIZE, run_before=ready, press=["2"])


def test_consolidate_at_review(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    async def to_review(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("3")
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)

    app = make_app(snapshot_store)
    assert snap_compare(app, terminal_size=SIZE, run_before=to_review)


def test_journal(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    applied_cycle(snapshot_store)
    assert snap_compare(make_app(snapshot_store), terminal_size=SIZE, run_before=ready, press=["4"])


def test_activity(snap_compare: Compare, snapshot_store: LmdbStore) -> None:
    # Every write names its source: a write without one would take the process's name,
    # which an app made by an earlier test sets to "tui".
    with provenance.writing_as(provenance.TUI):
        applied_cycle(snapshot_store)
    with provenance.writing_as("mcp:claude-code"):
        fact = snapshot_store.put(OPS, "The on-call rota moved to PagerDuty in November.")
        snapshot_store.pin(fact.id)
    with provenance.writing_as(provenance.CLI):
        snapshot_store.put("research-agent", "Benchmarks run on the c6i.2xlarge runners.")
    assert snap_compare(make_app(snapshot_store), terminal_size=SIZE, run_before=ready, press=["6"])


# One light and one dark theme (the default is textual-dark): the rows' star and weight
# bars, and the diff's consumed and summary rows, take each theme's own colours.
THEMES = ["textual-light", "gruvbox"]


def in_theme(theme: str, then: Callable[[Pilot[Any]], Any] | None = None) -> Any:
    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.theme = theme
        await ready(pilot)
        if then is not None:
            await then(pilot)

    return run_before


async def to_review(pilot: Pilot[Any]) -> None:
    await pilot.press("3")
    for _ in range(4):
        await pilot.press("n")
        await settle(pilot)


@pytest.mark.parametrize("theme", THEMES)
def test_facts_in_theme(snap_compare: Compare, snapshot_store: LmdbStore, theme: str) -> None:
    app = make_app(snapshot_store)
    assert snap_compare(app, terminal_size=SIZE, run_before=in_theme(theme))


@pytest.mark.parametrize("theme", THEMES)
def test_consolidate_at_review_in_theme(
    snap_compare: Compare, snapshot_store: LmdbStore, theme: str
) -> None:
    app = make_app(snapshot_store)
    assert snap_compare(app, terminal_size=SIZE, run_before=in_theme(theme, to_review))
