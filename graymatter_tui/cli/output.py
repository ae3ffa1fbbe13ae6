"""Printing for the command line: JSON for scripts, neutralised text for people."""

from __future__ import annotations

import re
import shutil
import sys
from datetime import datetime
from typing import Any, NoReturn

import click
import msgspec

from graymatter_tui import clock
from graymatter_tui.model import Fact
from graymatter_tui.textsafe import neutralise

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
    """A line for a person; the caller has neutralised any stored text in it."""
    click.echo(text)


def note(message: str) -> None:
    """One line on stderr that is worth knowing but is no error."""
    click.echo(f"graymatter-tui: note: {neutralise(message, one_line=True)}", err=True)


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"graymatter-tui: error: {neutralise(message, one_line=True)}", err=True)
    sys.exit(code)


def age(now: datetime, stamp: str) -> str:
    seconds = max((now - clock.parse_time(stamp)).total_seconds(), 0.0)
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds // 60)}m"


def fact_line(fact: Fact, now: datetime, *, with_agent: bool) -> str:
    width = shutil.get_terminal_size((120, 24)).columns
    star = "★" if fact.pinned else ("†" if fact.is_tombstone else " ")
    when = age(now, fact.created_at)
    head = f"{fact.id} {star} {fact.weight:5.3f} {when:>4} {fact.access_count:>4}  "
    if with_agent:
        head += f"{neutralise(fact.agent_id, one_line=True)}: "
    room = max(width - len(head), 20)
    text = neutralise(fact.text, one_line=True)
    if len(text) > room:
        text = text[: room - 1] + "…"
    return head + text
