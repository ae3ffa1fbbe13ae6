"""When a fact stopped being live, and when (after a revert) it was live again.

Every write that makes a fact a tombstone, or deletes it, records an `Ending` in the same
transaction (schema 6); a revert that makes it live again closes that ending (`until`).
A fact's endings, oldest first, are its lifespan: it was live at a moment when it had
been written by then and no ending covers the moment. Stores written before schema 6
had their endings derived from the journal and the activity feed when they were
upgraded; where the moment could only be estimated, the ending says `approximate`.

Pure: no I/O. `storage.lifespan_ops` reads and writes the rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import RecordKind
from graymatter_tui.core.textsafe import canonical_id

# How a fact stopped being live: a consolidation consumed it into a summary, a revision
# (or an approved update) replaced it, it was retired with no replacement (by hand, by an
# approved forget, or a revert retiring the summary it wrote), or decay pruned it.
EndHow = Literal["consumed", "revised", "retired", "pruned"]
END_HOWS: tuple[EndHow, ...] = get_args(EndHow)


class Ending(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One time a fact stopped being live."""

    at: str  # RFC 3339 UTC, as every stored time (`clock.format_time`)
    how: EndHow
    by: str = ""  # the fact's `superseded_by` then: the summary, the revision, "agent"
    record: str = ""  # the journal record that did it (a cycle, a review, a revert)
    record_kind: RecordKind | Literal[""] = ""  # that record's kind
    source: str = ""  # who wrote it (`provenance`), when known
    until: str = ""  # when a revert made it live again ("" while it is not)
    restored_by: str = ""  # that revert's record
    approximate: bool = False  # a time derived after the fact (see the module docstring)

    @property
    def open(self) -> bool:
        return not self.until


_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")


def canonical_time(stamp: str) -> str:
    """`stamp` in the one form every stored time has (microseconds, `Z`), so that times
    compare as strings; a time imported in another RFC 3339 form is rewritten."""
    if len(stamp) == 27 and _CANONICAL.match(stamp):
        return stamp
    return clock.format_time(clock.parse_time(stamp))


@dataclass(frozen=True)
class Moment:
    """A moment of the store's past. `at` is canonical; with `before`, the moment is
    the instant just before `at` (a journal record's first write: writes stamped `at`
    itself have not happened yet). `record` names the record it was taken from."""

    at: str
    before: bool = False
    record: str = ""

    def reached(self, stamp: str) -> bool:
        """Whether a write stamped `stamp` had happened by this moment."""
        when = canonical_time(stamp)
        return when < self.at if self.before else when <= self.at

    def covered(self, ending: Ending) -> bool:
        """Whether the fact was not live at this moment because of `ending`."""
        return self.reached(ending.at) and (ending.open or not self.reached(ending.until))

    def said(self) -> str:
        """The moment for people: `2026-12-20 12:00:00 UTC`, or `before cycle C (…)`."""
        shown = self.at[:19].replace("T", " ") + " UTC"
        return f"just before record {self.record} ({shown})" if self.record else shown


def live_at(created_at: str, endings: Sequence[Ending], moment: Moment) -> bool:
    """Whether a fact written at `created_at` with these endings was live at `moment`."""
    return moment.reached(created_at) and not any(moment.covered(e) for e in endings)


def ended_at(endings: Sequence[Ending], moment: Moment) -> Ending | None:
    """The ending that made the fact not live at `moment`, if one did."""
    return next((e for e in endings if moment.covered(e)), None)


def later(endings: Sequence[Ending], moment: Moment) -> list[Ending]:
    """What happened to the fact after `moment`: endings that began later, and the one
    covering the moment when a revert ended it later (its `until`)."""
    return [
        e for e in endings if not moment.reached(e.at) or (e.until and not moment.reached(e.until))
    ]


# ---- what `--as-of` takes -----------------------------------------------------------------
_DATE = re.compile(r"\d{4}-\d\d-\d\d\Z")


@dataclass(frozen=True)
class AsOf:
    """A moment as a person names it: a time, or a journal record (`record`)."""

    time: datetime | None = None
    record: str = ""

    def said(self) -> str:
        if self.time is not None:
            return clock.format_time(self.time)
        return f"record {self.record}"


def parse_as_of(value: str) -> AsOf:
    """`--as-of`'s value: a journal record id (26-character ULID, any case), an RFC 3339
    time with a zone, or a date (`2026-11-30`, its first instant in UTC)."""
    text = value.strip()
    record = canonical_id(text)
    if record is not None:
        return AsOf(record=record)
    if _DATE.match(text):
        try:
            day = datetime.strptime(text, "%Y-%m-%d")
        except ValueError:
            raise InvalidInput(f"not a date: {value!r}") from None
        return AsOf(time=day.replace(tzinfo=UTC))
    shown = text if len(text) <= 40 else text[:40] + "…"
    try:
        return AsOf(time=clock.parse_time(text))
    except InvalidInput:
        pass
    if "T" in text.upper() and not re.search(r"(Z|[+-]\d\d:?\d\d)\Z", text.upper()):
        try:
            datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            raise InvalidInput(
                f"{shown!r} has no time zone: add Z for UTC or an offset such as +02:00"
            )
    raise InvalidInput(
        f"{shown!r} is neither a time (RFC 3339, such as 2026-11-30T12:00:00Z, or a date "
        "such as 2026-11-30) nor a journal record id"
    )


def check_not_future(as_of: AsOf, now: datetime) -> AsOf:
    """Refuse a time after `now`: nothing is known of it yet."""
    if as_of.time is not None and as_of.time > now:
        raise InvalidInput(
            f"{clock.format_time(as_of.time)} is in the future (the store's clock says "
            f"{clock.format_time(now)})"
        )
    return as_of
