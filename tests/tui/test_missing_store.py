"""The TUI never creates a store silently at a place the person named (--dir, --store,
GRAYMATTER_DIR, GRAYMATTER_STORE): it asks first (create it, look at it empty and
read-only, or quit), and until the answer nothing exists there. The default data dir on
a first run and the demo's store are still made without asking. The app is built as the
command line builds it (`launch.tui_app`) and driven under `run_test`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.cli.launch import tui_app
from graymatter_tui.tui.app import GraymatterApp
from graymatter_tui.tui.screens.dialogs import NoStoreScreen
from tests.tui.helpers import modal_text, notifications, running, settle, static_text, wait_until


def app_for(
    data_dir: Path | None = None,
    *,
    store: str | None = None,
    read_only: bool = False,
    demo: bool = False,
) -> GraymatterApp:
    app = tui_app(
        data_dir=data_dir, store=store, demo=demo, read_only=read_only, agent=None, llm=None
    )
    app.animation_level = "none"
    _MADE.append(app)
    return app


_MADE: list[GraymatterApp] = []


@pytest.fixture(autouse=True)
def _close_the_stores() -> Iterator[None]:
    """Close the store each app opened (the CLI's process ends with its app; a test's
    goes on). A store left open here made every later CLI run of this worker a subprocess
    (the CLI in-process would share it): 20 s more for tests/reliability/test_secrets.py
    alone when it came after this file."""
    yield
    while _MADE:
        store = _MADE.pop().store
        if store is not None and not store.closed:
            store.close()


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user data dir (platformdirs) inside tmp_path, so no default store is touched."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


async def test_quit_at_the_question_creates_nothing(tmp_path: Path, xdg: Path) -> None:
    missing = tmp_path / "stores" / "mistyped"
    app = app_for(missing)
    async with running(app, size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, NoStoreScreen)
        text = modal_text(app)
        assert f"There is no store at {missing}" in text and "Nothing has been created" in text
        assert not (tmp_path / "stores").exists()  # asked before anything was made
        await pilot.press("q")
        await settle(pilot)
        assert not app.is_running
    assert app.return_code in (None, 0)
    assert list(tmp_path.iterdir()) == []  # no store, no directory, anywhere


@pytest.mark.parametrize("key", ["r", "escape"])
async def test_read_only_shows_it_empty_and_creates_nothing(
    tmp_path: Path, xdg: Path, key: str
) -> None:
    missing = tmp_path / "mistyped"
    app = app_for(missing)
    async with running(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert not isinstance(app.screen, NoStoreScreen)
        assert "[READ-ONLY]" in static_text(app, "#topbar")
        assert ("information", f"Read-only: nothing was created at {missing}") in (
            notifications(app)
        )
        await pilot.press("a")  # Add fact: refused, read-only
        await settle(pilot)
        assert any("Read-only mode" in message for _, message in notifications(app))
    assert not missing.exists()


async def test_create_makes_the_store_and_it_takes_writes(tmp_path: Path, xdg: Path) -> None:
    wanted = tmp_path / "stores" / "team"
    app = app_for(wanted)
    async with running(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.store.absent, what="the store created")
        await settle(pilot)
        assert (wanted / "data.mdb").exists()
        assert "[READ-ONLY]" not in static_text(app, "#topbar")
        await pilot.press("a")
        await settle(pilot)
        await pilot.press(*"first fact here", "ctrl+s")
        await settle(pilot)
        await wait_until(pilot, lambda: "(1 live)" in static_text(app, "#topbar"), what="the fact")
    with LmdbStore.open(wanted, read_only=True) as store:
        assert [f.text for f in store.all_facts()] == ["first fact here"]


@pytest.mark.parametrize(
    ("variable", "form"),
    [("GRAYMATTER_DIR", "{path}"), ("GRAYMATTER_STORE", "lmdb:{path}")],
)
async def test_a_place_named_by_the_environment_is_asked_about_too(
    tmp_path: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch, variable: str, form: str
) -> None:
    missing = tmp_path / "from-env"
    monkeypatch.setenv(variable, form.format(path=missing))
    app = app_for()
    async with running(app) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, NoStoreScreen)
        assert str(missing) in modal_text(app)
        await pilot.press("q")
        await settle(pilot)
    assert not missing.exists()


async def test_store_lmdb_url_is_asked_about(tmp_path: Path, xdg: Path) -> None:
    missing = tmp_path / "by-flag"
    app = app_for(store=f"lmdb:{missing}")
    async with running(app) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, NoStoreScreen)
        await pilot.press("r")
        await settle(pilot)
    assert not missing.exists()


async def test_the_default_data_dir_is_created_on_a_first_run_without_asking(
    xdg: Path,
) -> None:
    app = app_for()
    async with running(app) as pilot:
        await settle(pilot)
        assert not isinstance(app.screen, NoStoreScreen)
        assert "[READ-ONLY]" not in static_text(app, "#topbar")
    assert (xdg / "graymatter-tui" / "data.mdb").exists()


async def test_the_demo_store_is_made_without_asking(xdg: Path) -> None:
    app = app_for(demo=True)
    try:
        async with running(app) as pilot:
            await settle(pilot)
            assert not isinstance(app.screen, NoStoreScreen)
            assert "[DEMO]" in static_text(app, "#topbar")
    finally:
        app.store.close()
    assert (xdg / "graymatter-tui-demo" / "data.mdb").exists()


async def test_read_only_on_a_missing_store_asks_nothing_and_says_nothing_was_made(
    tmp_path: Path, xdg: Path
) -> None:
    missing = tmp_path / "mistyped"
    app = app_for(missing, read_only=True)
    async with running(app) as pilot:
        await settle(pilot)
        assert not isinstance(app.screen, NoStoreScreen)
        said = [message for _, message in notifications(app)]
        assert f"No store at {missing} yet; showing an empty one" in said
    assert not missing.exists()


async def test_an_existing_store_opens_without_a_question(tmp_path: Path, xdg: Path) -> None:
    there = tmp_path / "there"
    with LmdbStore.open(there) as store:
        store.put("ops", "already here")
    app = app_for(there)
    async with running(app) as pilot:
        await settle(pilot)
        assert not isinstance(app.screen, NoStoreScreen)
        assert "(1 live)" in static_text(app, "#topbar")
