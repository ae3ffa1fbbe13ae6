"""The top bar says when the store is the demo's, and the app notices a store whose files
were deleted or replaced while it was open: it stops writing and says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import TextArea

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.cli.launch import open_for_tui
from tests.conftest import run_graymatter
from tests.tui.helpers import (
    OPS,
    make_app,
    notifications,
    running,
    screen_lines,
    settle,
    static_text,
    wait_until,
)

GONE = "were deleted or replaced while open; nothing was written"


async def test_the_demo_store_says_so_in_the_top_bar(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app):
        topbar = static_text(app, "#topbar")
        assert "[DEMO]" in topbar
        assert str(demo_store.path) in topbar
        assert "DEMO" in screen_lines(app)[0]


async def test_a_store_of_ones_own_has_no_demo_badge(empty_store: LmdbStore) -> None:
    empty_store.put(OPS, "a real fact")
    app = make_app(empty_store)
    async with running(app):
        assert "DEMO" not in static_text(app, "#topbar")


async def test_dash_dash_demo_shows_where_the_demo_store_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("GRAYMATTER_DIR", "/")
    store, _settings, read_only = open_for_tui(data_dir=None, demo=True, read_only=False, llm=None)
    try:
        app = make_app(store, read_only=read_only)
        async with running(app):
            topbar = static_text(app, "#topbar")
            assert "[DEMO]" in topbar
            assert str(tmp_path / "xdg" / "graymatter-tui-demo") in topbar
    finally:
        store.close()


@pytest.mark.parametrize("change", ["deleted", "replaced by another store"])
async def test_a_store_changed_under_the_app_stops_writes(
    empty_store: LmdbStore, tmp_path: Path, change: str
) -> None:
    empty_store.put(OPS, "written before")
    path = empty_store.path
    app = make_app(empty_store)
    async with running(app) as pilot:
        errorbar = app.query_one("#errorbar")
        if change == "deleted":
            shutil.rmtree(path)
        else:
            path.rename(tmp_path / "aside")
            done = run_graymatter("--dir", str(path), "remember", "other", "another store")
            assert done.returncode == 0, done.stderr
        await wait_until(pilot, lambda: errorbar.display, what="the error bar")
        assert GONE in static_text(app, "#errorbar")

        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#entry-text", TextArea).text = "written after"
        await pilot.press("ctrl+s")
        await settle(pilot)
        errors = [m for severity, m in notifications(app) if severity == "error"]
        assert errors and GONE in errors[-1]
        assert not [m for _, m in notifications(app) if m == "fact added"]
        assert app.is_running
    if change == "deleted":
        assert not path.exists()
