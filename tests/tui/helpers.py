"""Helpers of the TUI tests: building the app on a real store, reading what the screen
shows, and waiting (with a deadline, never a fixed sleep) for the app to catch up."""

from __future__ import annotations

import asyncio
import io
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.app import App
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input, Static
from textual.worker import WorkerCancelled, WorkerFailed

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.config import Settings
from graymatter_tui.tui.app import GraymatterApp
from graymatter_tui.tui.widgets.fact_rows import FactRows
from tests.conftest import clean_env
from tests.support.cli_process import run_in_process, wants_subprocess

FIXED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FIXED_TEXT = "2026-11-30T12:00:00Z"
SIZE = (120, 36)
OPS = "ops-agent"
# The near-duplicate pair the `local` summariser merges for ops-agent on the demo store.
STAGING_A = "The staging database listens on port 5432."
STAGING_B = "The staging database listens on port 5432. Use the VPN to reach it."
PINNED_OPS = "Production deploys need two approvals; never skip them."
CLI_TIMEOUT = 60


def fixed_clock() -> datetime:
    return FIXED


def open_store(path: Path) -> LmdbStore:
    return LmdbStore.open(path, clock_fn=fixed_clock)


def settings_for(path: Path, summariser: str = "local", **overrides: Any) -> Settings:
    return Settings.from_env(data_dir=path).with_overrides(summariser=summariser, **overrides)


def make_app(
    store: LmdbStore,
    *,
    summariser: str = "local",
    agent: str | None = OPS,
    read_only: bool = False,
    poll_seconds: float = 0.5,
    **overrides: Any,
) -> GraymatterApp:
    app = GraymatterApp(
        store=store,
        settings=settings_for(store.path, summariser, **overrides),
        read_only=read_only,
        agent=agent,
        poll_seconds=poll_seconds,
    )
    # Tab underlines animate; with animations on, every key press waits for them.
    app.animation_level = "none"
    return app


@asynccontextmanager
async def running(
    app: GraymatterApp, *, size: tuple[int, int] = SIZE
) -> AsyncIterator[Pilot[None]]:
    """`app.run_test` with notifications on, ended through the app's own exit path.

    Leaving `run_test` while the app still runs makes Textual tear the screens down while
    the app's poll timer can still fire. The app ignores such a tick
    (test_navigation.py::test_a_poll_tick_while_the_app_closes_is_harmless), but exiting
    the app before leaving the block is the path a real user takes.
    """
    try:
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            await first_read(pilot)
            yield pilot
            if app.is_running:
                app.exit()
                await pilot.pause()
    finally:
        # As `graymatter-tui` does once the terminal is restored (cli/launch.py): the
        # store is closed after the embedder's last write, not under it.
        app.finish_background()


# ---- reading the screen ----------------------------------------------------------------
def screen_lines(app: App[Any], *, styles: bool = False) -> list[str]:
    """The characters of every line of the current screen, as a terminal would show them
    (modal screens drawn over the screens below); with `styles`, their ANSI styles too."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        record=True,
        force_terminal=True,
        color_system="truecolor",
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text(styles=styles).splitlines()


def screen_text(app: GraymatterApp) -> str:
    return "\n".join(screen_lines(app))


def plain(value: Any, width: int = 200) -> str:
    """Plain text of what a Static was given (str, Text or any Rich renderable)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Text):
        return value.plain
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(value)
    return console.export_text(styles=False)


def static_text(app: GraymatterApp, selector: str) -> str:
    return plain(app.screen.query_one(selector, Static).content)


def modal_text(app: GraymatterApp) -> str:
    """The text of every Static on the current (modal) screen, whole, even the parts that
    need scrolling to be seen."""
    return "\n".join(plain(widget.content) for widget in app.screen.query(Static))


def detail_fields(app: GraymatterApp) -> dict[str, str]:
    """The label → value rows of the fact-detail modal's field table."""
    out = {}
    for line in static_text(app, "#detail-fields").splitlines():
        match = re.match(r"^\s*(\S.*?)\s{2,}(.*)$", line)
        if match:
            out[match.group(1)] = match.group(2).strip()
    return out


def fact_rows(app: GraymatterApp) -> FactRows:
    source = app.query_one("#fact-list").source  # type: ignore[attr-defined]
    assert isinstance(source, FactRows)
    return source


def visible_texts(app: GraymatterApp) -> list[str]:
    rows = fact_rows(app)
    texts = []
    for index in range(len(rows)):
        fact = rows.fact(index)
        assert fact is not None
        texts.append(fact.text)
    return texts


def cursor_fact_id(app: GraymatterApp, selector: str = "#fact-list") -> str:
    widget = app.query_one(selector)
    fact = widget.source.fact(widget.cursor)  # type: ignore[attr-defined]
    assert fact is not None
    return str(fact.id)


def notifications(app: GraymatterApp) -> list[tuple[str, str]]:
    """(severity, message) of every notification still on display."""
    return [(n.severity, n.message) for n in app._notifications]


# ---- waiting -----------------------------------------------------------------------------
async def first_read(pilot: Pilot[Any], timeout: float = 30.0) -> None:
    """Until the app has heard the store (its watch reads the generation at once) and the
    shown pane has drawn what it read: reads run off the UI thread, so a frame drawn just
    after start-up may not hold them yet. A store that cannot be read ends the wait too."""
    app = pilot.app
    assert isinstance(app, GraymatterApp)

    def read() -> bool:
        if app.last_error or not app.is_running:
            return True
        if app.create_store is not None or app.generation < 0:
            return app.create_store is not None
        pane = app._pane_or_none(app._active_tab())
        shown = pane is not None and not pane.stale and not pane._reading
        return shown and app.agents_seen is not None

    steps = max(int(timeout / 0.01), 1)
    for _ in range(steps):
        if read():
            break
        await pilot.pause(0.01)
    await settle(pilot)


async def workers_done(pilot: Pilot[Any]) -> None:
    """Until every worker running now has ended: finished, failed, or superseded by a
    newer read (a cancelled worker ends too)."""
    for worker in list(pilot.app.workers):
        with suppress(WorkerCancelled, WorkerFailed):
            await worker.wait()


async def settle(pilot: Pilot[Any]) -> None:
    """Let every worker finish (store reads and writes run in threads, and what a read
    found is drawn once it has) and the screen catch up."""
    for _ in range(3):
        await workers_done(pilot)
        await pilot.pause()


async def press_each(pilot: Pilot[Any], *keys: str) -> None:
    """Press each key in turn and let the app settle after each one."""
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def wait_until(
    pilot: Pilot[Any], condition: Callable[[], bool], *, timeout: float = 30.0, what: str = ""
) -> None:
    """Poll `condition` between short pauses until it holds; fail after `timeout` seconds
    of app time (each pause is 0.1 s), never asserting on how long it took: the deadline
    only says when to give up, and is generous, as a loaded machine needs."""
    steps = max(int(timeout / 0.1), 1)
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.1)
    assert condition(), f"timed out waiting for {what or condition}"


# ---- the real CLI in a subprocess --------------------------------------------------------
def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return clean_env({"GRAYMATTER_NOW": FIXED_TEXT, **(extra or {})})


async def remember_elsewhere(
    agent: str, text: str, *args: str, env: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """`graymatter-tui remember AGENT TEXT ARGS` in another process while the app keeps
    running (its event loop is not blocked meanwhile): the new fact's id and the stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "graymatter_tui", "remember", agent, text, *args,
        env=cli_env(env),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip(), err.decode()


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI with no standard input, in this process where that is the same as a
    subprocess (tests/support/cli_process.py)."""
    if not wants_subprocess(args):
        return run_in_process(args, b"", cli_env(env))
    return subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=cli_env(env),
        timeout=CLI_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def start_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        env=cli_env(env),
    )


async def export_to(pilot: Pilot[Any], target: Path) -> None:
    """In the running app, export to `target` through the Export dialog."""
    pilot.app.action_export()  # type: ignore[attr-defined]
    await pilot.pause()
    pilot.app.screen.query_one("#line-text", Input).value = str(target)
    await pilot.press("enter")
    await settle(pilot)


async def export_via_palette(store: LmdbStore, target: Path) -> list[tuple[str, str]]:
    """Export from a new app to `target`; the notifications it left."""
    app = make_app(store)
    async with running(app) as pilot:
        await export_to(pilot, target)
        assert app.is_running
        return notifications(app)


async def type_in_palette(pilot: Pilot[Any], command: str, shows: str) -> None:
    """Open the command palette, type `command`, and wait until the screen shows `shows`."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    assert isinstance(pilot.app.screen, CommandPalette)
    await pilot.press(*command)
    await wait_until(pilot, lambda: shows in screen_text(pilot.app))  # type: ignore[arg-type]
