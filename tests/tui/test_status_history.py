"""The Status tab's history (`h`): the agent's probe hit rate, facts and running totals as
charts, their numbers as a table (`t`), probes scored on `p`, and a scheduled probe run
made by the open app when one falls due (not by a read-only one).

The store is the demo store with a scripted history on a clock the test moves: probe
runs, a cycle and its revert, hours apart. The numbers shown are compared with the
series `views.history` reads (the CLI's tests check that series exactly)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from textual_plotext import PlotextPlot

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.recall.probes import run_probes
from graymatter_tui.views.history import cells, history
from tests.support.clock import ManualClock
from tests.tui.helpers import (
    FIXED,
    OPS,
    make_app,
    press_each,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)

NOTHING = "xylophone quartz"


def build_history(store: LmdbStore, clock: ManualClock) -> None:
    """Six points of ops-agent, hours apart: runs (3 probes, one finding nothing), a
    cycle of the `local` summariser (the staging pair merged), a run, the cycle's revert
    and a last run, after a fact the third probe finds."""
    for query in ("deploy approvals", "staging database", NOTHING):
        store.add_probe(OPS, query)
    run_probes(store, OPS, "cli")
    clock.advance(6)
    run_probes(store, None, "schedule")
    clock.advance(1)
    record = Cycle(store, OPS, LocalSummariser()).run_sync()
    assert record.outcome == "applied"
    clock.advance(5)
    run_probes(store, None, "schedule")
    clock.advance(6)
    store.revert(record.cycle_id)
    clock.advance(5)
    store.put(OPS, "The xylophone quartz of the lobby clock is replaced every spring.")
    clock.advance(1)
    run_probes(store, OPS, "tui")


@pytest.fixture
def history_store(tmp_path: Path) -> Iterator[tuple[LmdbStore, ManualClock]]:
    clock = ManualClock(FIXED)
    store = LmdbStore.open(tmp_path / "store", clock_fn=clock)
    try:
        create_demo(store)
        build_history(store, clock)
        yield store, clock
    finally:
        store.close()


async def test_h_shows_charts_t_the_numbers_and_h_again_the_overview(
    history_store: tuple[LmdbStore, ManualClock],
) -> None:
    store, _clock = history_store
    points = history(store, OPS)
    assert [p["event"] for p in points] == [
        "probe_run",
        "probe_run",
        "consolidate",
        "probe_run",
        "revert",
        "probe_run",
    ]
    app = make_app(store)
    async with running(app, size=(80, 24)) as pilot:
        await press_each(pilot, "5", "h")
        head = static_text(app, "#history-head")
        assert head.startswith(f"History of {OPS} · 6 points, 4 probe runs")
        text = screen_text(app)
        assert "probe hit rate %" in text
        assert "facts: • live   x tombstones" in text  # each series has its own marker
        plots = list(app.query(PlotextPlot))
        assert len(plots) == 3 and all(p.display for p in plots)
        # Each chart a third of the pane, at least 9 rows: the third scrolls into view.
        assert [p.size.height for p in plots] == [9, 9, 9]
        await press_each(pilot, "t")
        assert not app.query_one("#history-charts").display
        table = static_text(app, "#history-table").splitlines()
        rows = [line.split() for line in table[1 : 1 + len(points)]]
        for row, point in zip(rows, points, strict=True):
            want = cells(point)
            want[0] = want[0][5:]  # the pane shows month, day and time
            assert row == " ".join(want).split(), (row, want)
        assert "hits: probes that find something" in static_text(app, "#history-table")
        await press_each(pilot, "t")
        assert app.query_one("#history-charts").display
        await press_each(pilot, "h")
        assert app.query_one("#status-body").display
        assert not app.query_one("#status-history").display
        assert "Weights of ops-agent's live facts" in static_text(app, "#status-body")


async def test_p_scores_the_agents_probes_and_the_history_grows(
    history_store: tuple[LmdbStore, ManualClock],
) -> None:
    store, clock = history_store
    clock.advance(1)
    app = make_app(store)
    async with running(app, size=(80, 24)) as pilot:
        await press_each(pilot, "5", "h")
        assert "6 points" in static_text(app, "#history-head")
        await press_each(pilot, "p")
        await wait_until(
            pilot,
            lambda: "7 points, 5 probe runs" in static_text(app, "#history-head"),
            what="the new run in the history",
        )
    newest = store.records(OPS, limit=1)[0]
    assert (newest.kind, newest.trigger, len(newest.probes)) == ("probe_run", "tui", 3)


async def test_the_open_app_makes_a_due_scheduled_run_once(
    history_store: tuple[LmdbStore, ManualClock],
) -> None:
    store, clock = history_store
    store.set_probe_schedule(6 * 3600)
    clock.advance(6, minutes=1)  # the last run of every agent's probes was 6 h 1 min ago
    before = len(store.records())
    read_only = make_app(store, read_only=True)
    async with running(read_only, size=(80, 24)) as pilot:
        await settle(pilot)
        assert read_only.due_probe_runs is None
    assert len(store.records()) == before
    app = make_app(store)
    app.probe_check_seconds = 0.05
    async with running(app, size=(80, 24)) as pilot:
        await wait_until(
            pilot,
            lambda: app.due_probe_runs is not None and app.due_probe_runs.checks >= 3,
            what="three checks of the schedule",
        )
    records = store.records()
    made = records[: len(records) - before]
    assert [(r.kind, r.trigger) for r in made] == [("probe_run", "schedule")]
    schedule = store.probe_schedule()
    assert schedule.last_run_at == made[0].started_at
    assert schedule.next_due_at.startswith((clock.now + timedelta(hours=6)).isoformat()[:16])


async def test_the_journal_shows_a_probe_run_and_refuses_to_revert_it(
    history_store: tuple[LmdbStore, ManualClock],
) -> None:
    store, _clock = history_store
    newest = store.records(OPS, limit=1)[0]
    assert newest.kind == "probe_run"
    app = make_app(store)
    async with running(app, size=(80, 24)) as pilot:
        await press_each(pilot, "4")
        text = screen_text(app)
        assert text.count("probes scored") == 4  # every run, none as a consolidation
        await press_each(pilot, "enter")
        shown = screen_text(app)
        assert f"Probe run {newest.cycle_id}" in shown and "asked by tui" in shown
        assert "Probes scored (tui): 3 of 3 probes found something" in shown
        await press_each(pilot, "escape", "u")
        await wait_until(
            pilot,
            lambda: "is a probe run: it changed no fact" in screen_text(app),
            what="the refusal",
        )
    assert store.records(OPS, limit=1)[0].cycle_id == newest.cycle_id
