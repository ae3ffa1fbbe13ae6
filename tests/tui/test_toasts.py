"""Where toasts (app.notify) go: in rows of their own at the bottom of the screen, never
over a dialog or over the row the cursor is on. Checked geometrically: the region each
toast is drawn in against the dialog's region and the cursor row's, under run_test."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import DataTable
from textual.widgets._toast import Toast  # Textual's own toast widget (Textual pinned: ADR 0002)

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.tui.screens.dialogs import ConfirmScreen
from graymatter_tui.tui.screens.recall import RecallScreen
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from tests.tui.helpers import make_app, running, screen_lines, screen_text, settle, wait_until

SIZES = [(80, 24), (200, 60)]
# A short one, one with a title, and one long enough to wrap at 80 columns.
TOASTS = (
    ("Reloaded.", ""),
    ("The store is read-only here.", "Not done"),
    ("A long message " + "that goes on and on " * 6 + "to the end.", ""),
)


async def show_toasts(pilot: Pilot[None]) -> list[Region]:
    """Post every toast of TOASTS, wait until all of them are drawn and on screen; the
    regions they are drawn in."""
    app = pilot.app
    for message, title in TOASTS:
        app.notify(message, title=title, timeout=60)

    def drawn() -> list[Toast]:
        return [t for t in app.screen.query(Toast) if t.region.area]

    await wait_until(pilot, lambda: len(drawn()) == len(TOASTS), what="every toast drawn")
    await settle(pilot)
    shown = screen_text(app)  # type: ignore[arg-type]
    for message, _title in TOASTS:
        assert message[:20] in shown  # really on screen, not behind anything
    return [t.region for t in drawn()]


def cursor_row(fact_list: VirtualList) -> Region:
    """The screen region of the list's cursor row; the cursor must be in view."""
    top = fact_list.scroll_offset.y
    region = fact_list.content_region
    assert top <= fact_list.cursor < top + region.height, "the cursor's row is out of view"
    return Region(region.x, region.y + fact_list.cursor - top, region.width, 1)


@pytest.mark.parametrize("size", SIZES)
async def test_toasts_never_cover_the_cursor_row(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        fact_list = app.query_one("#fact-list", VirtualList)
        # The cursor on the last row the list shows: where toasts used to be drawn.
        rows = fact_list.content_region.height
        await pilot.press(*["down"] * (rows - 1))
        await settle(pilot)
        assert cursor_row(fact_list).bottom == fact_list.content_region.bottom
        text = demo_store.require(str(fact_list.source.ids[fact_list.cursor])).text  # type: ignore[attr-defined]
        for toast in await show_toasts(pilot):
            row = cursor_row(fact_list)
            assert not toast.overlaps(row), (toast, row)
        await settle(pilot)
        row = cursor_row(fact_list)
        assert text[:30] in screen_lines(app)[row.y]  # the cursor's fact is still read there


async def test_toasts_never_cover_the_journals_cursor_row(demo_store: LmdbStore) -> None:
    for _ in range(24):  # more records than the journal shows at 80×24
        await Cycle(demo_store, "ops-agent", LocalSummariser(), CycleOptions()).run()
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        table = app.query_one("#journal-table", DataTable)
        # The cursor on the last row the table shows (under its header line).
        rows = table.content_region.height - 1
        assert table.row_count > rows
        await pilot.press(*["down"] * (rows - 1))
        await settle(pilot)
        assert table.scroll_offset.y == 0 and table.cursor_row == rows - 1
        for toast in await show_toasts(pilot):
            region = table.content_region
            line = region.y + 1 + table.cursor_row - table.scroll_offset.y
            assert region.y < line < region.bottom, "the cursor's row is out of view"
            assert not toast.overlaps(Region(region.x, line, region.width, 1))


@pytest.mark.parametrize("size", SIZES)
async def test_toasts_never_cover_a_confirmation(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        await pilot.press("x")  # retire the highlighted fact: a confirmation first
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        for toast in await show_toasts(pilot):
            dialog = app.screen.query_one(".dialog").region
            assert not toast.overlaps(dialog), (toast, dialog)
        buttons = app.screen.query_one(".dialog-buttons").region
        assert buttons.bottom <= app.screen.query_one(".dialog").region.bottom
        assert "Retire (y)" in screen_text(app) and "Cancel (n)" in screen_text(app)


@pytest.mark.parametrize("size", SIZES)
async def test_toasts_never_cover_a_dialog_that_fills_the_screen(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"staging", "enter")
        await settle(pilot)
        assert isinstance(app.screen, RecallScreen)
        for toast in await show_toasts(pilot):
            dialog = app.screen.query_one(".dialog").region
            assert not toast.overlaps(dialog), (toast, dialog)
        await wait_until(pilot, lambda: "esc back" in screen_text(app), what="the hint line")
