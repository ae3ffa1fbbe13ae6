"""Opening the TUI from the command line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from graymatter_tui.backends.opening import open_location
from graymatter_tui.core.config import Settings, SummariserName, default_data_dir, default_demo_dir
from graymatter_tui.core.errors import InvalidInput, ReadOnlyStore
from graymatter_tui.core.progress import Report
from graymatter_tui.core.store_url import lmdb_url
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.storage import MemoryStore

if TYPE_CHECKING:
    from graymatter_tui.tui.app import GraymatterApp


def demo_dir() -> Path:
    """The demo's own store (ADR 0011): not inside a store, not moved by GRAYMATTER_DIR."""
    return default_demo_dir()


def open_for_tui(
    *,
    data_dir: Path | None,
    demo: bool,
    read_only: bool,
    llm: str | None,
    progress: Report | None = None,
    store: str | None = None,
    ask_before_creating: bool = False,
) -> tuple[MemoryStore, Settings, bool]:
    """The store, settings and read-only flag the TUI opens with.

    `--demo` fills the demo store first (and refuses a store it did not create).
    `--read-only` opens the files read-only; a store this user cannot write opens
    read-only too, with the READ-ONLY badge, rather than not at all.
    `ask_before_creating`: where a person named a place (--dir, --store, GRAYMATTER_DIR,
    GRAYMATTER_STORE) that holds no store, nothing is created: an empty read-only view
    is returned (its `absent` is true) for the TUI to ask what to do. The default data
    dir is still created on a first run."""
    if demo and store is not None:
        raise InvalidInput("--demo keeps its own store; give it no --store")
    if demo and data_dir is None:
        data_dir = demo_dir()
    settings = Settings.from_env(data_dir=data_dir, store=store)
    location = settings.location
    if demo:
        settings = settings.with_overrides(summariser=llm or SummariserName.LOCAL)
    elif llm:
        settings = settings.with_overrides(summariser=llm)
    if read_only and not demo:
        return open_location(location, read_only=True), settings, True
    if ask_before_creating and not demo and location != lmdb_url(default_data_dir()):
        view = open_location(location, read_only=True)
        if view.absent:
            return view, settings, True
        view.close()
    try:
        opened = open_location(location, progress=progress)
    except ReadOnlyStore:
        if demo:
            raise
        return open_location(location, read_only=True), settings, True
    if demo:
        try:
            create_demo(opened)
        except BaseException:
            opened.close()
            raise
        if read_only:  # filled; now the files themselves are opened read-only
            opened.close()
            opened = open_location(location, read_only=True)
    return opened, settings, read_only


def creator(
    opened: MemoryStore, settings: Settings, *, asked_read_only: bool
) -> Callable[[], MemoryStore] | None:
    """What creates the store the TUI found missing, once the person says so (None: it
    is there, or the person asked for read-only)."""
    if not opened.absent or asked_read_only:
        return None
    return partial(open_location, settings.location)


def tui_app(
    *,
    data_dir: Path | None,
    demo: bool,
    read_only: bool,
    agent: str | None,
    llm: str | None,
    opening: AbstractContextManager[Report | None] | None = None,
    store: str | None = None,
) -> GraymatterApp:
    """Open the store, then build the TUI over it. `opening` gives the reporter of an
    upgrade's re-index while the store opens (the CLI's bar on stderr, before the TUI
    draws). A place the person named that holds no store is not created here: the app
    asks first."""
    with opening or nullcontext() as progress:
        opened, settings, opened_read_only = open_for_tui(
            data_dir=data_dir,
            demo=demo,
            read_only=read_only,
            llm=llm,
            progress=progress,
            store=store,
            ask_before_creating=True,
        )
    from graymatter_tui.tui.app import GraymatterApp

    return GraymatterApp(
        store=opened,
        settings=settings,
        read_only=opened_read_only,
        agent=agent,
        create_store=creator(opened, settings, asked_read_only=read_only),
    )


def launch_tui(
    *,
    data_dir: Path | None,
    demo: bool,
    read_only: bool,
    agent: str | None,
    llm: str | None,
    opening: AbstractContextManager[Report | None] | None = None,
    store: str | None = None,
) -> None:
    """The TUI of `tui_app`, run until the person quits."""
    app = tui_app(
        data_dir=data_dir,
        demo=demo,
        read_only=read_only,
        agent=agent,
        llm=llm,
        opening=opening,
        store=store,
    )
    app.run()
    app.finish_background(notice=lambda line: print(line, file=sys.stderr, flush=True))
    if app.return_code:
        # An unhandled error in the app: Textual has restored the terminal and printed the
        # traceback; the exit status must say so too (1 = error).
        sys.exit(app.return_code)
