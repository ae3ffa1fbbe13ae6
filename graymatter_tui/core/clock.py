"""The store clock: wall time in UTC unless GRAYMATTER_NOW pins it (tests, demos, audits)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

from graymatter_tui.core.errors import InvalidInput

_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (any offset, up to nanoseconds) into an aware UTC datetime."""
    text = _FRACTION.sub(r"\1", value.strip())
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"not an RFC 3339 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"timestamp has no time zone: {value!r}")
    return parsed.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with microseconds and a `Z`, the form every stored timestamp uses."""
    # isoformat is several times faster than strftime; bulk writes format two per fact.
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"


def now() -> datetime:
    """The current store time, honouring GRAYMATTER_NOW."""
    pinned = os.environ.get("GRAYMATTER_NOW", "").strip()
    if pinned:
        try:
            return parse_time(pinned)
        except InvalidInput:
            raise InvalidInput(f"GRAYMATTER_NOW is not an RFC 3339 timestamp: {pinned!r}") from None
    return datetime.now(UTC)


def short_age(now: datetime, stamp: str) -> str:
    """How long before `now` the timestamp `stamp` was, in its largest whole unit
    (`3d`, `2mo`; minutes below an hour): the age column of `list` and of the TUI."""
    seconds = max((now - parse_time(stamp)).total_seconds(), 0.0)
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds // 60)}m"
