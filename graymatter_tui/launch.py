"""Opening the TUI from the command line."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from graymatter_tui.backends import open_location
from graymatter_tui.config import Settings, SummariserName, default_demo_dir
from graymatter_tui.demo import create_demo
from graymatter_tui.errors import InvalidInput, ReadOnlyStore
from graymatter_tui.progress import Report
from graymatter_tui.store import MemoryStore


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
) -> tuple[MemoryStore, Settings, bool]:
    """The store, settings and read-only flag the TUI opens with.

    `--demo` fills the demo store first (and refuses a store it did not create).
    `--read-only` opens the files read-only; a store this user cannot write opens
    read-only too, with the READ-ONLY badge, rather than not at all."""
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
    """Open the store, then the TUI. `opening` gives the reporter of an upgrade's
    re-index while the store opens (the CLI's bar on stderr, before the TUI draws)."""
    with opening or nullcontext() as progress:
        opened, settings, read_only = open_for_tui(
            data_dir=data_dir,
            demo=demo,
            read_only=read_only,
            llm=llm,
            progress=progress,
            store=store,
        )
    from graymatter_tui.app import GraymatterApp

    app = GraymatterApp(store=opened, settings=settings, read_only=read_only, agent=agent)
    app.run()
    if app.return_code:
        # An unhandled error in the app: Textual has restored the terminal and printed the
        # traceback; the exit status must say so too (1 = error).
        sys.exit(app.return_code)
