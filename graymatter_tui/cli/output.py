"""Printing for the command line: JSON for scripts, neutralised text for people.

Stored text is made safe here, once: `say` neutralises every line it prints, so a
command cannot forget it; `one_line` flattens a stored value for the middle of a line."""

from __future__ import annotations

import re
import shutil
import sys
from datetime import datetime
from typing import Any, NoReturn

import click
import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.model import Fact
from graymatter_tui.core.retirement import Retirement
from graymatter_tui.core.textsafe import neutralise

# JSON leaves C1 controls and bidi overrides as raw characters; escape them so `--json`
# output is safe to print to a terminal and still decodes to identical strings.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_encode = msgspec.json.Encoder().encode


def json_text(obj: Any) -> str:
    text = _encode(obj).decode("utf-8", errors="surrogateescape")
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def emit_json(obj: Any) -> None:
    click.echo(json_text(obj))


def say(text: str) -> None:
    """A line (or lines) for a person: every control or format character in it becomes a
    visible placeholder; newlines stay."""
    click.echo(neutralise(text))


def one_line(value: str) -> str:
    """A stored value for the middle of a line: newlines shown as ⏎, tabs as spaces (and,
    like everything `say` prints, controls made visible)."""
    return neutralise(value, one_line=True)


def note(message: str) -> None:
    """One line on stderr that is worth knowing but is no error."""
    click.echo(f"graymatter-tui: note: {one_line(message)}", err=True)


def warn(message: str) -> None:
    """One line on stderr about something done that a person should look at."""
    click.echo(f"graymatter-tui: warning: {one_line(message)}", err=True)


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"graymatter-tui: error: {one_line(message)}", err=True)
    sys.exit(code)


def fact_line(
    fact: Fact, now: datetime, *, with_agent: bool, retirement: Retirement | None = None
) -> str:
    """A fact in one line: ★ pinned, † tombstone, ↺ retired by a revert (which it names)."""
    width = shutil.get_terminal_size((120, 24)).columns
    star = "★" if fact.pinned else ("†" if fact.is_tombstone else " ")
    if retirement is not None and retirement.by_revert:
        star = "↺"
    when = clock.short_age(now, fact.created_at)
    head = f"{fact.id} {star} {fact.weight:5.3f} {when:>4} {fact.access_count:>4}  "
    if with_agent:
        head += f"{one_line(fact.agent_id)}: "
    if retirement is not None:
        head += f"[{retirement.short()}] "
    room = max(width - len(head), 20)
    text = one_line(fact.text)
    if len(text) > room:
        text = text[: room - 1] + "…"
    return head + text
