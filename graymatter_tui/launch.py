"""Opening the TUI from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

from graymatter_tui.config import Settings
from graymatter_tui.demo import create_demo
from graymatter_tui.store import Store


def demo_dir() -> Path:
    return Settings.from_env().data_dir.parent / "graymatter-tui-demo"


def launch_tui(
    *,
    data_dir: Path | None,
    demo: bool,
    read_only: bool,
    agent: str | None,
    llm: str | None,
) -> None:
    if demo and data_dir is None:
        data_dir = demo_dir()
    settings = Settings.from_env(data_dir=data_dir)
    if demo:
        settings = settings.with_overrides(summariser=llm or "local")
    elif llm:
        settings = settings.with_overrides(summariser=llm)
    store = Store.open(settings.data_dir)
    if demo:
        create_demo(store)
    from graymatter_tui.app import GraymatterApp

    app = GraymatterApp(store=store, settings=settings, read_only=read_only, agent=agent)
    app.run()
    if app.return_code:
        # An unhandled error in the app: Textual has restored the terminal and printed the
        # traceback; the exit status must say so too (1 = error).
        sys.exit(app.return_code)
