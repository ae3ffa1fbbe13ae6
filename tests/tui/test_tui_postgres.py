"""The TUI over a PostgreSQL store: it draws the same panes, picks up writes made by
another host (a separate process with its own connection) within its poll, shows them in
Activity, and never draws the database password."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from textual.widgets import TabbedContent

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core.config import Settings
from graymatter_tui.core.store_url import parse_store_url
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.tui.app import GraymatterApp
from tests.support.postgres import Cluster
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    cli_env,
    fact_rows,
    fixed_clock,
    running,
    screen_text,
    settle,
    static_text,
    visible_texts,
    wait_until,
)


@pytest.fixture
def demo_pg(pg_url: str) -> Iterator[PgStore]:
    store = PgStore.open(pg_url, clock_fn=fixed_clock)
    try:
        create_demo(store)
        yield store
    finally:
        store.close()


def app_over(store: PgStore, url: str) -> GraymatterApp:
    settings = Settings.from_env(store=url).with_overrides(summariser="local")
    app = GraymatterApp(
        store=store, settings=settings, read_only=False, agent=OPS, poll_seconds=0.5
    )
    app.animation_level = "none"
    return app


def password_of(url: str) -> str:
    return unquote(url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1])


async def test_another_hosts_write_appears_and_the_password_is_never_drawn(
    demo_pg: PgStore, pg_url: str, pg_cluster: Cluster
) -> None:
    secret = password_of(pg_url)
    app = app_over(demo_pg, pg_url)
    async with running(app) as pilot:
        await settle(pilot)
        before = len(fact_rows(app).ids)
        topbar = static_text(app, "#topbar")
        assert parse_store_url(pg_url).redacted in topbar
        assert secret not in topbar
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "graymatter_tui", "remember", OPS, "written on another host",
            env=cli_env({"GRAYMATTER_STORE": pg_url}),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()  # the app keeps running meanwhile
        assert process.returncode == 0, err.decode()
        assert secret not in err.decode()
        new_id = out.decode().strip()
        await wait_until(
            pilot,
            lambda: "written on another host" in visible_texts(app),
            timeout=10.0,
            what="the generation poll to pick up the other host's write",
        )
        assert fact_rows(app).ids[0] == new_id  # newest first
        assert len(fact_rows(app).ids) == before + 1
        # Activity lists the other process's write, as on one machine.
        await pilot.press("6")
        await settle(pilot)
        assert app.query_one("#tabs", TabbedContent).active == "activity"
        await wait_until(
            pilot,
            lambda: "written on another host" in screen_text(app),
            timeout=10.0,
            what="the activity pane to show the write",
        )
        # Status names the database, never its password.
        await pilot.press("5")
        await settle(pilot)
        await wait_until(
            pilot,
            lambda: "postgresql" in screen_text(app),
            timeout=10.0,
            what="the status pane to name the server",
        )
        for shown in (screen_text(app), app.export_screenshot()):
            assert secret not in shown
            assert pg_cluster.password not in shown


async def test_a_cycle_stepped_through_in_the_tui_applies_on_postgres(
    demo_pg: PgStore, pg_url: str
) -> None:
    """Decay, select, propose, review, apply over the database: the journal holds the
    applied cycle, its consumed facts point at the summary and the invariants hold."""
    app = app_over(demo_pg, pg_url)
    async with running(app) as pilot:
        await pilot.press("3")
        await settle(pilot)
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        assert "would consume 2 of 32 batch facts" in static_text(app, "#stepper")
        assert f" − {STAGING_A}\n" in static_text(app, "#diff-body")
        assert demo_pg.counters().consolidations == 0  # nothing applied before `a`
        await pilot.press("a")
        await settle(pilot)
        assert "Outcome: applied" in static_text(app, "#stepper")
    record = demo_pg.records()[0]
    assert record.outcome == "applied" and record.agent_id == OPS
    for fact_id in record.consumed:
        assert demo_pg.require(fact_id).superseded_by == record.summary_id
    assert demo_pg.receipts(record.summary_id) == record.consumed
    assert all(check.ok for check in check_invariants(demo_pg))


@pytest.mark.parametrize("answer", ["q", "c"])
async def test_a_database_with_no_store_is_asked_about_before_any_table_is_made(
    pg_url: str, answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graymatter_tui.backends.postgres import NoStoreYet
    from graymatter_tui.cli.launch import tui_app
    from graymatter_tui.tui.screens.dialogs import NoStoreScreen

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    app = tui_app(data_dir=None, store=pg_url, demo=False, read_only=False, agent=None, llm=None)
    app.animation_level = "none"
    async with running(app) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, NoStoreScreen)
        with pytest.raises(NoStoreYet):  # nothing made in the database yet
            PgStore.open(pg_url, read_only=True)
        await pilot.press(answer)
        if answer == "c":
            await wait_until(pilot, lambda: not app.store.absent, what="the store created")
        await settle(pilot)
    if answer == "q":
        with pytest.raises(NoStoreYet):
            PgStore.open(pg_url, read_only=True)
    else:
        app.store.close()
        with PgStore.open(pg_url, read_only=True) as store:
            assert store.all_facts() == []
