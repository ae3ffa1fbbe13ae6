"""The Status tab's overview is drawn in a worker, never on the UI thread: after its read,
when the app's state it shows changes, and at a new width (tui/screens/status.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.screens.base import Reach
from graymatter_tui.tui.screens.status import StatusPane
from graymatter_tui.tui.widgets.drawn_lines import DrawnStatic
from tests.tui.helpers import make_app, running, screen_text, static_text, wait_until


@pytest.fixture
def table_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """For each Rich table drawn from now on: whether it was on the main (UI) thread."""
    on_main: list[bool] = []
    drawn = Table.__rich_console__

    def recorded(self: Table, console: Console, options: ConsoleOptions) -> RenderResult:
        on_main.append(threading.current_thread() is threading.main_thread())
        return drawn(self, console, options)

    monkeypatch.setattr(Table, "__rich_console__", recorded)
    yield on_main


def body_of(app: Any) -> DrawnStatic:
    return app.query_one("#status-body", DrawnStatic)


async def test_the_overview_is_drawn_off_the_ui_thread(
    demo_store: LmdbStore, table_threads: list[bool]
) -> None:
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        table_threads.clear()  # only what the Status tab draws
        await pilot.press("5")
        await wait_until(pilot, lambda: "avg weight" in screen_text(app), what="drawn")
        # What the summariser's probe found, as the app's state (the embedder's line would
        # be written over by the app's own embedder on its next tick).
        await wait_until(pilot, lambda: app.reach.state != "checking", what="the probe")
        app.reach = Reach("failed", "connection refused on port 7")
        await wait_until(
            pilot, lambda: "refused on port 7" in screen_text(app), what="the new line"
        )
        await pilot.resize_terminal(200, 50)
        body = body_of(app)
        await wait_until(
            pilot,
            lambda: body.drawn_width == body.content_size.width > 150,
            what="drawn at the new width",
        )
        # the read, the summariser's line, the new width: three drawings at least, each of
        # the grid and the agents' table
        assert table_threads.count(False) >= 6
        assert True not in table_threads


async def test_the_overview_is_as_wide_as_the_tab_after_each_resize(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app, size=(200, 50)) as pilot:
        await pilot.press("5")
        body = body_of(app)
        for columns in (200, 80, 120):
            await pilot.resize_terminal(columns, 40)
            await wait_until(
                pilot,
                lambda: body.drawn_width == body.content_size.width > 0,
                what=f"drawn at {columns} columns",
            )
            lines = static_text(app, "#status-body").splitlines()
            assert max(len(line.rstrip()) for line in lines) <= body.content_size.width
            assert "Weights of ops-agent's live facts" in static_text(app, "#status-body")


async def test_end_right_after_the_tab_shows_reaches_the_last_line(
    demo_store: LmdbStore,
) -> None:
    """The overview is drawn at the width the body will have once the scroll bar comes:
    drawn again just after, it grew a wrapped line below where `End` had scrolled."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("5")
        # As a person would: `End` once the overview shows (before, there is nothing to
        # scroll; the tmux test does the same in a real terminal).
        await wait_until(pilot, lambda: "300 live" in screen_text(app), what="the overview")
        await pilot.press("end")
        await pilot.pause(0.5)
        assert "0.9–1.0" in screen_text(app)
        body = body_of(app)
        assert body.drawn_width == body.content_size.width


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
async def test_the_width_drawn_before_layout_is_the_width_the_body_gets(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    """The first drawing is made before the pane was ever laid out (its tab was hidden):
    its width must be the body's, whether the overview then needs a scroll bar (80×24)
    or not (200×60)."""
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        pane = app.query_one(StatusPane)
        before = pane._width_before_layout()
        await pilot.press("5")
        await wait_until(pilot, lambda: "300 live" in screen_text(app), what="the overview")
        assert body_of(app).content_size.width == before
