"""Options every command shares (`--dir`, `--store`, `--json`) and opening the store for
a command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from graymatter_tui.backends.opening import open_location
from graymatter_tui.cli.output import note
from graymatter_tui.cli.params import usage_error
from graymatter_tui.cli.progress import open_upgrading
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.store_url import parse_store_url
from graymatter_tui.storage import MemoryStore

F = TypeVar("F", bound=Callable[..., Any])


DIR_HELP = "Data directory (default: $GRAYMATTER_DIR, else the user data dir)."
STORE_HELP = (
    "The store: a directory, lmdb:PATH or postgresql://USER@HOST:PORT/DATABASE "
    "(default: $GRAYMATTER_STORE, else the data directory)."
)
STORE_KEY = "store"
BOTH_GIVEN = "give --store or --dir, not both"


def _remember_store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        try:
            parse_store_url(value)  # its messages never hold the password
        except InvalidInput as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
        ctx.meta[STORE_KEY] = value


def store_option(fn: F) -> F:
    """`--store URL`, kept in the context (`settings_for` reads it), not passed as an
    argument: every command takes it without changing its signature."""
    return click.option(
        "--store",
        metavar="URL",
        default=None,
        expose_value=False,
        is_eager=True,
        callback=_remember_store,
        help=STORE_HELP,
    )(fn)


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
    return store_option(dir_option()(fn))


def settings_for(data_dir: Path | None) -> Settings:
    """Settings with the store this command names: its own `--dir`/`--store`, else the
    ones given before the command name. `--store` and `--dir` together are refused
    wherever each stands."""
    ctx = click.get_current_context()
    directory = data_dir if data_dir is not None else (ctx.obj or {}).get("data_dir")
    store = ctx.meta.get(STORE_KEY)
    if directory is not None and store is not None:
        raise usage_error(BOTH_GIVEN)
    return Settings.from_env(data_dir=directory, store=store)


def open_store(data_dir: Path | None) -> MemoryStore:
    """The store for a command that writes (created if new; upgraded, with a bar on a
    terminal's stderr, if older)."""
    return open_upgrading(settings_for(data_dir))


def open_reader(data_dir: Path | None, *, as_json: bool = False) -> MemoryStore:
    """The store for a command that only reads: opened read-only, so it works on a store
    this user cannot write and never creates one (no store reads as an empty one)."""
    store = open_location(settings_for(data_dir).location, read_only=True)
    if store.absent and not as_json:
        note(f"no store at {store.location} yet; showing an empty one (nothing was created)")
    if store.lockless:
        note(reading_without_lock(store))
    return store


def reading_without_lock(store: MemoryStore) -> str:
    return (
        f"this user cannot write {store.location}/lock.mdb, so the store is read without "
        "LMDB's reader lock; a process writing to it meanwhile could make this view "
        "inconsistent"
    )
