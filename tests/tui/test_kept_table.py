"""The Journal and Review tables keep their drawn rows when their tab is shown again and
when the focus moves (`tui/widgets/kept_table.py`, ADR 0085), and what they draw from the
kept rows is exactly what they would draw afresh: focused or not, after a resize, after
a theme change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from rich.segment import Segment
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import DataTable

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.tui.app import TABS, GraymatterApp
from graymatter_tui.tui.screens.journal import JournalPane
from graymatter_tui.tui.widgets.kept_table import KeptRowsTable
from tests.tui.helpers import OPS, make_app, running, settle, wait_until

JOURNAL_KEY = str(TABS.index("journal") + 1)
REVIEW_KEY = str(TABS.index("review") + 1)
TABLES = {JOURNAL_KEY: "#journal-table", REVIEW_KEY: "#review-table"}
PANES = {JOURNAL_KEY: "#journal-pane", REVIEW_KEY: "#review-pane"}


def drawn(table: DataTable[Any]) -> list[list[tuple[str, Any]]]:
    """The table's visible lines as (text, style) runs, from whatever it has cached."""
    width, height = table.size
    strips = table.render_lines(Region(0, 0, width, height))
    return [[(s.text, s.style) for s in Segment.simplify(strip)] for strip in strips]


def drawn_afresh(table: DataTable[Any]) -> list[list[tuple[str, Any]]]:
    """The same lines with every cache of the table thrown away first."""
    table._clear_caches()
    table._update_count += 1
    return drawn(table)


async def with_cycles(store: LmdbStore) -> LmdbStore:
    """The demo store with two journal records: an applied cycle and a skipped one."""
    await Cycle(store, OPS, LocalSummariser()).run()
    await Cycle(store, OPS, None).run()
    return store


def table_of(app: GraymatterApp, key: str) -> KeptRowsTable:
    return app.query_one(TABLES[key], KeptRowsTable)


@asynccontextmanager
async def shown(
    store: LmdbStore, key: str
) -> AsyncIterator[tuple[GraymatterApp, Pilot[Any], KeptRowsTable]]:
    """The app on `store` with two cycles, the tab of `key` shown, and its table."""
    app = make_app(await with_cycles(store))
    async with running(app, size=(120, 36)) as pilot:
        await pilot.press(key)
        await settle(pilot)
        yield app, pilot, table_of(app, key)


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per table cell drawn afresh (not taken from a table's caches)."""
    cells: list[int] = []
    render_cell = DataTable._render_cell

    def counting(self: DataTable[Any], *args: Any, **kwargs: Any) -> Any:
        cells.append(1)
        return render_cell(self, *args, **kwargs)

    monkeypatch.setattr(DataTable, "_render_cell", counting)
    return cells


@pytest.mark.parametrize("key", [JOURNAL_KEY, REVIEW_KEY], ids=["journal", "review"])
async def test_a_tab_shown_again_draws_no_cell_afresh(
    demo_store: LmdbStore, key: str, rendered: list[int]
) -> None:
    app = make_app(await with_cycles(demo_store))
    async with running(app, size=(120, 36)) as pilot:
        await pilot.press(key)
        await settle(pilot)
        table = table_of(app, key)
        assert table.row_count > 0 and rendered  # drawn once, with rows
        first = drawn(table)
        for _ in range(3):  # away (hidden, unfocused) and back (shown, focused)
            await pilot.press("1")
            await settle(pilot)
            rendered.clear()
            await pilot.press(key)
            await settle(pilot)
            assert rendered == [], f"{len(rendered)} cells drawn afresh"
            assert drawn(table) == first


@pytest.mark.parametrize("key", [JOURNAL_KEY, REVIEW_KEY], ids=["journal", "review"])
async def test_kept_rows_read_as_rows_drawn_afresh_focused_or_not(
    demo_store: LmdbStore, key: str
) -> None:
    async with shown(demo_store, key) as (app, pilot, table):
        focused = drawn(table)
        assert table.has_focus
        app.screen.set_focus(None)  # the cursor row's look changes with the focus
        await settle(pilot)
        unfocused = drawn(table)
        assert unfocused != focused
        assert unfocused == drawn_afresh(table)
        table.focus()
        await settle(pilot)
        assert drawn(table) == focused == drawn_afresh(table)


async def test_a_theme_change_redraws_the_kept_rows_in_the_new_theme(
    demo_store: LmdbStore,
) -> None:
    async with shown(demo_store, REVIEW_KEY) as (app, pilot, table):
        dark = drawn(table)
        app.theme = "textual-light"
        await settle(pilot)
        light = drawn(table)
        assert light != dark
        assert light == drawn_afresh(table)
        app.theme = "textual-dark"
        await settle(pilot)
        assert drawn(table) == dark == drawn_afresh(table)


async def test_a_resized_table_draws_as_one_drawn_afresh(demo_store: LmdbStore) -> None:
    async with shown(demo_store, REVIEW_KEY) as (_app, pilot, table):
        before = drawn(table)
        await pilot.resize_terminal(90, 30)
        await settle(pilot)
        narrow = drawn(table)
        assert narrow != before
        assert narrow == drawn_afresh(table)


async def test_a_css_change_to_the_cursor_alone_redraws_the_kept_rows(
    demo_store: LmdbStore,
) -> None:
    """A change of the styles the table draws with that leaves its own background as it
    was (so no cache key changes): the kept rows are thrown away, not drawn stale."""
    async with shown(demo_store, REVIEW_KEY) as (app, pilot, table):
        before = drawn(table)
        app.stylesheet.add_source(
            "KeptRowsTable > .datatable--cursor { background: #ff00ff; }",
            read_from=("test", "cursor"),
        )
        app.stylesheet.parse()
        app.refresh_css()
        await settle(pilot)
        after = drawn(table)
        assert after != before
        assert after == drawn_afresh(table)


@pytest.mark.parametrize("key", [JOURNAL_KEY, REVIEW_KEY], ids=["journal", "review"])
async def test_a_read_that_finds_the_same_rows_draws_no_cell_afresh(
    demo_store: LmdbStore, key: str, rendered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another write moves the store, the shown pane reads again and finds its rows as
    they were: the table keeps them as drawn, and its cursor."""
    async with shown(demo_store, key) as (app, pilot, table):
        await pilot.press("j")
        await settle(pilot)
        cursor, first = table.cursor_row, drawn(table)
        assert cursor == 1
        pane = app.query_one(PANES[key])
        reads: list[int] = []
        read_done = type(pane)._read_done
        monkeypatch.setattr(
            type(pane), "_read_done", lambda self, *a: (reads.append(1), read_done(self, *a))[1]
        )
        rendered.clear()
        demo_store.put(OPS, "a fact written while the table is shown")
        await wait_until(pilot, lambda: reads != [], what="the pane's read after the write")
        await settle(pilot)
        assert rendered == [], f"{len(rendered)} cells drawn afresh"
        assert (table.cursor_row, drawn(table)) == (cursor, first)


async def test_a_read_that_finds_another_row_shows_it(demo_store: LmdbStore) -> None:
    async with shown(demo_store, REVIEW_KEY) as (_app, pilot, table):
        before = table.row_count
        held = demo_store.list_facts(OPS, limit=1)[0]
        demo_store.put(OPS, held.text)  # the same text again: a duplicate held for review
        await wait_until(pilot, lambda: table.row_count == before + 1, what="the new row")
        assert drawn(table) == drawn_afresh(table)


async def test_rows_built_again_in_another_theme_are_drawn_in_it(demo_store: LmdbStore) -> None:
    """A theme change builds the journal's rows again with the new theme's outcome
    colours, which are the cells' own styles: the table takes them, though each cell's
    text and spans are the same (`Text.__eq__` would call them equal)."""
    async with shown(demo_store, JOURNAL_KEY) as (app, pilot, table):
        app.theme = "textual-light"
        await settle(pilot)
        shown_now = drawn(table)
        pane = app.query_one(PANES[JOURNAL_KEY], JournalPane)
        table.clear()  # the rows given afresh to a table that shows none
        pane._fill(pane.records[table.cursor_row].cycle_id if pane.records else None)
        await settle(pilot)
        assert shown_now == drawn(table)
