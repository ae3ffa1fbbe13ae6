"""Options every command shares (`--dir`, `--json`) and opening the store for a command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from graymatter_tui.config import Settings
from graymatter_tui.store import Store

F = TypeVar("F", bound=Callable[..., Any])


def common_options(fn: F) -> F:
    fn = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")(
        fn
    )
    fn = click.option(
        "--dir",
        "data_dir",
        type=click.Path(path_type=Path, readable=False),
        default=None,
        help="Data directory (default: $GRAYMATTER_DIR, else the user data dir).",
    )(fn)
    return fn


def settings_for(data_dir: Path | None) -> Settings:
    ctx = click.get_current_context()
    chosen = data_dir or (ctx.obj or {}).get("data_dir")
    return Settings.from_env(data_dir=chosen)


def open_store(data_dir: Path | None) -> Store:
    return Store.open(settings_for(data_dir).data_dir)
