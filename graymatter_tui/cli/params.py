"""Checking a flag's value while the command line is parsed: a bad value is a usage
error (exit 2, with click's usage lines), refused before any store is opened.

The checks themselves are the project's (`validate_agent`, `parse_store_url`, …), which
raise InvalidInput; these callbacks turn that into click's BadParameter, naming the flag.
An argument that is stored as given (a fact's TEXT, an AGENT to write under, a rejection's
--reason) is not checked here: it stays an error about data (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from graymatter_tui.core import clock
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.lifespan import AsOf, check_not_future, parse_as_of

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

Callback = Callable[[click.Context, click.Parameter, Any], Any]


def checked_by(check: Callable[[str], T]) -> Callback:
    """A callback giving `check(value)` for a given value (None passes through); its
    InvalidInput becomes a usage error for this flag."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> T | None:
        if value is None:
            return None
        try:
            return check(value)
        except InvalidInput as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None

    return callback


def _as_of(value: str) -> AsOf:
    return check_not_future(parse_as_of(value), clock.now())


def as_of_option(help_text: str) -> Callable[[F], F]:
    """`--as-of TIME|CYCLE`, passed as `as_of` (an `AsOf`, None when not given): refused
    here when it is neither a time nor a record id, or a time after now."""
    return click.option(
        "--as-of",
        "as_of",
        metavar="TIME|CYCLE",
        default=None,
        callback=checked_by(_as_of),
        help=help_text,
    )


def usage_error(message: str) -> click.UsageError:
    """A usage error about flags given together, for the current command."""
    return click.UsageError(message, ctx=click.get_current_context(silent=True))
