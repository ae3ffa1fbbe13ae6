"""The Journal tab: cycles newest first with their outcome, the replayed diff, and revert
(u + y), including a second revert that must be refused."""

from __future__ import annotations

from typing import Any

import msgspec
from textual.widgets import DataTable

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.core.model import RETIRED, CycleRecord
from graymatter_tui.tui.screens.dialogs import ConfirmScreen
from graymatter_tui.tui.screens.journal import JOURNAL_COLUMNS, CycleDiffScreen
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    modal_text,
    notifications,
    plain,
    run_cli,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)


def table_rows(app: Any) -> list[dict[str, str]]:
    """The journal table's rows as plain text, by column title."""
    table = app.query_one("#journal-table", DataTable)
    titles = [str(column.label) for column in table.ordered_columns]
    assert titles == list(JOURNAL_COLUMNS)
    return [
        dict(zip(titles, (plain(cell) for cell in table.get_row_at(i)), strict=True))
        for i in range(table.row_count)
    ]


def state(store: LmdbStore) -> dict[str, Any]:
    return {
        "facts": {f.id: msgspec.to_builtins(f) for f in store.all_facts()},
        "counters": msgspec.to_builtins(store.counters()),
        "records": [msgspec.to_builtins(r) for r in store.records()],
    }


async def two_cycles(store: LmdbStore) -> tuple[CycleRecord, CycleRecord]:
    """An applied cycle (local merge) and, after it, a skipped one (no summariser)."""
    applied = await Cycle(store, OPS, LocalSummariser()).run()
    skipped = await Cycle(store, OPS, None).run()
    assert (applied.outcome, skipped.outcome) == ("applied", "skipped")
    return applied, skipped


async def move_to(pilot: Any, cycle_id: str) -> None:
    pane = pilot.app.query_one("#journal-pane")
    await pilot.press("ctrl+home")  # DataTable: home scrolls sideways, ctrl+home goes to the top
    for _ in range(len(pane.records)):
        if pane.selected().cycle_id == cycle_id:
            return
        await pilot.press("down")
    assert pane.selected().cycle_id == cycle_id, "the cycle is not in the journal table"


async def test_journal_lists_cycles_newest_first_and_replays_a_diff(demo_store: LmdbStore) -> None:
    applied, skipped = await two_cycles(demo_store)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("4")
        await pilot.pause()
        assert static_text(app, "#journal-info").startswith(" 2 records, newest first")
        rows = table_rows(app)
        # the whole id, as `graymatter-tui revert` takes it
        assert [row["cycle"] for row in rows] == [skipped.cycle_id, applied.cycle_id]
        assert [row["outcome"] for row in rows] == ["skipped", "applied"]
        assert rows[1]["time"] == "2026-11-30 12:00:00"
        assert [rows[1][c] for c in ("agent", "summariser")] == [OPS, "local"]
        assert [rows[1]["consumed"], rows[1]["pruned"]] == ["2", "0"]
        assert rows[0]["summariser"] == "none"
        shown = screen_text(app)
        assert shown.index(skipped.cycle_id) < shown.index(applied.cycle_id)

        # enter replays the applied cycle's diff from its record
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, CycleDiffScreen)
        head = modal_text(app)
        assert f"Cycle {applied.cycle_id}" in head and "applied" in head
        assert "✓ review" in head and "would consume 2 of 32 batch facts" in head
        diff = static_text(app, "#diff-body")
        assert f" − {STAGING_A}\n" in diff and f" − {STAGING_B}\n" in diff
        assert f" + {STAGING_B}\n" in diff
        assert "2 consumed · 30 kept" in diff
        assert f"− {STAGING_A}" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CycleDiffScreen)

        await pilot.press("up", "enter")
        await pilot.pause()
        assert f"Cycle {skipped.cycle_id}" in modal_text(app)
        assert "No proposal yet." in static_text(app, "#diff-body")
        await pilot.press("escape")
        await pilot.pause()


async def test_u_then_y_reverts_and_a_second_revert_is_refused(demo_store: LmdbStore) -> None:
    applied, _skipped = await two_cycles(demo_store)
    summary_id = applied.summary_id
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await move_to(pilot, applied.cycle_id)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Revert cycle {applied.cycle_id}?" in screen_text(app)
        assert "Its 2 consumed facts become live again" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)

        for fact_id in applied.consumed:
            fact = demo_store.require(fact_id)
            assert fact.is_live and fact.cycle_id == ""
        assert demo_store.require(summary_id).superseded_by == RETIRED
        assert demo_store.receipts(summary_id) == []
        assert demo_store.counters().reverts == 1
        newest = demo_store.records()[0]
        assert newest.kind == "revert" and newest.reverted_cycle_id == applied.cycle_id
        assert demo_store.require_record(applied.cycle_id).reverted_by == newest.cycle_id
        assert any(f"cycle {applied.cycle_id} reverted" in m for _, m in notifications(app))

        await wait_until(pilot, lambda: len(table_rows(app)) == 3, what="the revert record")
        rows = table_rows(app)
        assert rows[0]["outcome"] == "revert" and rows[0]["consumed"] == "2"  # restored
        original = next(row for row in rows if row["cycle"] == applied.cycle_id)
        assert original["outcome"] == "applied ↺"
        assert newest.cycle_id in screen_text(app)

        # reverting the same cycle again is refused before any question, with the store's
        # own reason, and the store is left alone
        before = state(demo_store)
        app.clear_notifications()
        await move_to(pilot, applied.cycle_id)
        await pilot.press("u")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert state(demo_store) == before
        warnings = [m for severity, m in notifications(app) if severity == "warning"]
        assert any(f"was already reverted by {newest.cycle_id}" in m for m in warnings)
        assert app.is_running

        # a revert record cannot itself be reverted: refused the same way
        await move_to(pilot, newest.cycle_id)
        await pilot.press("u")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert state(demo_store) == before
        assert any("cannot be reverted" in m for s, m in notifications(app) if s == "warning")


async def test_selection_stays_on_its_cycle_when_another_process_adds_one(
    demo_store: LmdbStore,
) -> None:
    applied, _skipped = await two_cycles(demo_store)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await move_to(pilot, applied.cycle_id)
        pane = app.query_one("#journal-pane")
        done = run_cli(
            "consolidate",
            "research-agent",
            "--llm",
            "none",
            "--dir",
            str(demo_store.path),
            env={"GRAYMATTER_NOW": "2026-11-30T13:00:00Z"},
        )
        assert done.returncode == 0, done.stderr
        await wait_until(pilot, lambda: len(table_rows(app)) == 3, what="the new record")
        assert pane.selected().cycle_id == applied.cycle_id  # type: ignore[attr-defined]
