"""The TUI never waits on the database: over a PostgreSQL server 50 ms away (a delaying
proxy in front of the real throwaway cluster) the event loop keeps answering while a
person types in the Facts filter and shows every tab, and another host's write still
appears. A read that fails is said once on the error bar, and the next good read clears
it."""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from textual.widgets import Static

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.core.config import Settings
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.tui.app import GraymatterApp
from tests.support.delaying_proxy import DelayingProxy
from tests.support.loop_lag import LagProbe
from tests.support.postgres import Cluster
from tests.tui.helpers import (
    OPS,
    SIZE,
    cli_env,
    fact_rows,
    first_read,
    fixed_clock,
    running,
    static_text,
    visible_texts,
    wait_until,
)

DELAY = 0.05  # seconds added to every round trip to the server


class ThreadNotingStore(PgStore):
    """The real PostgreSQL store, noting the thread of every round trip it makes: how
    long the loop stalls is measured by benchmarks/tui_stall_bench.py; what is checked
    here is that no read or write ever runs on the UI (main) thread."""

    on_main: list[str]
    trips: int

    def _run(self, fn: Any, *, write: bool) -> Any:
        if not hasattr(self, "on_main"):
            self.on_main, self.trips = [], 0
        self.trips += 1
        if threading.current_thread() is threading.main_thread():
            self.on_main.append("".join(traceback.format_stack(limit=8)))
        return super()._run(fn, write=write)


def held_texts(app: GraymatterApp) -> list[str]:
    """The texts of the Facts rows the app has read (the test reads nothing itself: a
    read of its own would stall the loop it measures)."""
    rows = fact_rows(app)
    return [fact.text for index in range(len(rows)) if (fact := rows.held_fact(index))]


def app_over(store: PgStore, url: str) -> GraymatterApp:
    settings = Settings.from_env(store=url).with_overrides(summariser="local")
    app = GraymatterApp(store=store, settings=settings, agent=OPS, poll_seconds=0.5)
    app.animation_level = "none"
    return app


@pytest.fixture
def far_store(pg_url: str) -> Iterator[tuple[ThreadNotingStore, str]]:
    """The demo store, and a store object on it whose every round trip takes DELAY
    longer (its URL too): the server is far away."""
    with PgStore.open(pg_url, clock_fn=fixed_clock) as direct:
        create_demo(direct)
    target = urlsplit(pg_url)
    proxy = DelayingProxy((target.hostname or "", target.port or 0), DELAY)
    far_url = proxy.url_for(pg_url)
    try:
        with ThreadNotingStore.open(far_url, clock_fn=fixed_clock) as store:
            store.on_main, store.trips = [], 0
            yield store, far_url
    finally:
        proxy.close()


async def test_no_store_round_trip_runs_on_the_ui_thread(
    far_store: tuple[ThreadNotingStore, str], pg_url: str
) -> None:
    store, far_url = far_store
    app = app_over(store, far_url)
    async with app.run_test(size=SIZE) as pilot:
        await first_read(pilot, timeout=60)
        assert "Deploy freeze" in " ".join(held_texts(app))
        # Every tab once first: what a pane costs to lay out the first time it is shown
        # is the app's own drawing, not a wait, and no part of what is measured here.
        for tab in "234567781":
            await pilot.press(tab)
            await pilot.pause(0.3)
        probe = LagProbe()
        probe.start()
        await pilot.press("1", "slash")
        for char in "staging":
            await pilot.press(char)
            await pilot.pause(0.1)
        await pilot.press(*["backspace"] * len("staging"), "escape")
        # Another host writes meanwhile; the app hears it and reads, still never waiting.
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "graymatter_tui", "remember", OPS, "written from afar",
            env=cli_env({"GRAYMATTER_STORE": pg_url}),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _out, err = await process.communicate()
        assert process.returncode == 0, err.decode()
        for tab in "23456781":
            await pilot.press(tab)
            await pilot.pause(0.2)
        # The Status tab's history, as charts and as a table: read off the loop too.
        for key in ("5", "h", "t", "t", "h", "1"):
            await pilot.press(key)
            await pilot.pause(0.2)
        await wait_until(
            pilot,
            lambda: "written from afar" in held_texts(app),
            timeout=30,
            what="the other host's write, read through the slow connection",
        )
        lags = probe.take()
        probe.stop()
        assert len(lags) > 100  # the loop kept answering all along
        assert store.trips > 10  # the app did read, through the slow connection
        assert not store.on_main, "a store round trip ran on the UI thread:\n" + store.on_main[0]
        app.exit()


async def test_a_failing_read_shows_the_error_bar_once_and_a_later_good_read_clears_it(
    pg_url: str, pg_cluster: Cluster
) -> None:
    """The facts table is locked by another session and the app's reads of it give up
    after a lock timeout (its other reads, and the store's watch, go on): the rows it
    could not read say so on the error bar, once however many fail; once the lock is
    gone, the next read (after another host's write) clears the bar."""
    database = urlsplit(pg_url).path.lstrip("/")
    with PgStore.open(pg_url, clock_fn=fixed_clock) as direct:
        create_demo(direct)
    pg_cluster.admin(f"ALTER DATABASE \"{database}\" SET lock_timeout = '200ms'")
    with PgStore.open(pg_url, clock_fn=fixed_clock) as store:
        app = app_over(store, pg_url)
        async with running(app) as pilot:
            errorbar = app.query_one("#errorbar", Static)
            assert not errorbar.display
            with psycopg.connect(pg_url) as locker:
                locker.execute("LOCK TABLE facts IN ACCESS EXCLUSIVE MODE")
                await pilot.press("end")  # rows whose facts were not read yet
                await wait_until(pilot, lambda: errorbar.display, what="the error bar")
                assert "lock timeout" in static_text(app, "#errorbar")
                assert app.errors_shown == 1
                await pilot.press("pageup", "pageup", "home", "end")
                await pilot.pause(1.0)
                assert errorbar.display
                assert app.errors_shown == 1  # said once, not once per failed read
                locker.rollback()
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "graymatter_tui", "remember", OPS, "after the lock",
                env=cli_env({"GRAYMATTER_STORE": pg_url}),
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            _out, err = await process.communicate()
            assert process.returncode == 0, err.decode()
            await wait_until(
                pilot,
                lambda: "after the lock" in visible_texts(app) and not errorbar.display,
                timeout=10,
                what="the next good read to clear the error bar",
            )
            assert app.last_error == ""
            assert app.errors_shown == 1
