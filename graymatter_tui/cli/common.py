"""Options every command shares (`--dir`, `--json`) and opening the store for a command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from graymatter_tui.cli.output import note
from graymatter_tui.cli.progress import open_upgrading
from graymatter_tui.config import Settings
from graymatter_tui.store import Store

F = TypeVar("F", bound=Callable[..., Any])


DIR_HELP = "Data directory (default: $GRAYMATTER_DIR, else the user data dir)."


def dir_option(help_text: str = DIR_HELP) -> Callable[[F], F]:
    """`--dir`, passed to the command as `data_dir` (None when not given)."""
    return click.option(
        "--dir",
        "data_dir",
        type=click.Path(path_type=Path, readable=False),
        default=None,
        help=help_text,
    )


def common_options(fn: F) -> F:
    fn = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")(
        fn
    )
    return dir_option()(fn)


def settings_for(data_dir: Path | None) -> Settings:
    ctx = click.get_current_context()
    chosen = data_dir or (ctx.obj or {}).get("data_dir")
    return Settings.from_env(data_dir=chosen)


def open_store(data_dir: Path | None) -> Store:
    """The store for a command that writes (created if new; upgraded, with a bar on a
    terminal's stderr, if older)."""
    return open_upgrading(settings_for(data_dir).data_dir)


def open_reader(data_dir: Path | None, *, as_json: bool = False) -> Store:
    """The store for a command that only reads: opened read-only, so it works on a store
    this user cannot write and never creates one (no store reads as an empty one)."""
    store = Store.open(settings_for(data_dir).data_dir, read_only=True)
    if store.absent and not as_json:
        note(f"no store at {store.path} yet; showing an empty one (nothing was created)")
    if store.lockless:
        note(reading_without_lock(store))
    return store


def reading_without_lock(store: Store) -> str:
    return (
        f"this user cannot write {store.path / 'lock.mdb'}, so the store is read without "
        "LMDB's reader lock; a process writing to it meanwhile could make this view "
        "inconsistent"
    )
