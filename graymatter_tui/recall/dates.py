"""The dates a recall query names, and whether a fact was written on one of them.

"What did Maria donate in December 2023?", "who was on call on 3 June?", "the outage of
2026-11-30": a fact written then is likelier the one meant, whatever its words. Recall
adds a small prior for such facts (`RecallWeights.date`, ADR 0069); a query naming no date
ranks exactly as without it.

Understood, in English: `2023-06-03`; `June 3, 2023`, `3 June 2023`, `June 3rd`, `3 June`
(abbreviated months too, `Jun 3`); `June 2023`; a month after a word that places it in
time (`in June`, `since March`, `last May`); a year after one (`in 2023`). A month alone
is any year's, a day without a year any year's. Relative dates ("yesterday", "last week")
and ranges ("before April 10") are not: "before April 10" counts as April 10.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

_MONTHS = (
    "january february march april may june july august september october november december"
).split()
MONTH_NUMBERS = {name: number for number, name in enumerate(_MONTHS, start=1)}
MONTH_NUMBERS.update({name[:3]: number for name, number in list(MONTH_NUMBERS.items())})
MONTH_NUMBERS["sept"] = 9
_ANY_MONTH = "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True))
_FULL_MONTH = "|".join(_MONTHS)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# Words that put a bare month or year in time ("in May", not "may I ask").
_PLACED = r"(?:in|on|during|since|until|till|by|of|from|early|late|mid|last|this|next|before|after)"

# Most specific first: each match is taken out of the text before the next pattern runs.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b"), "ymd"),
    (re.compile(rf"\b({_ANY_MONTH})\.?\s+{_DAY}(?:,?\s+{_YEAR})?\b"), "mdy"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_ANY_MONTH})\.?(?:,?\s+{_YEAR})?\b"), "dmy"),
    (re.compile(rf"\b({_ANY_MONTH})\.?,?\s+{_YEAR}\b"), "my"),
    (re.compile(rf"\b{_PLACED}\s+({_FULL_MONTH})\b"), "m"),
    (re.compile(rf"\b{_PLACED}\s+{_YEAR}\b"), "y"),
)


@dataclass(frozen=True)
class NamedDate:
    """A day, a month or a year a query names; a part left None matches any."""

    year: int | None = None
    month: int | None = None
    day: int | None = None

    def holds(self, moment: datetime) -> bool:
        return (
            (self.year is None or moment.year == self.year)
            and (self.month is None or moment.month == self.month)
            and (self.day is None or moment.day == self.day)
        )


def named_dates(query: str) -> tuple[NamedDate, ...]:
    """Every date `query` names, once each, in the order first named."""
    text = query.casefold()
    found: list[NamedDate] = []
    for pattern, form in _PATTERNS:

        def take(match: re.Match[str], form: str = form) -> str:
            named = _named(form, match.groups())
            if named is not None and named not in found:
                found.append(named)
            return " " * len(match.group())  # keeps later matches' positions

        text = pattern.sub(take, text)
    return tuple(found)


def _named(form: str, groups: tuple[str | None, ...]) -> NamedDate | None:
    values = dict(zip(form, groups, strict=True))
    year_text, month_text, day_text = values.get("y"), values.get("m"), values.get("d")
    year = int(year_text) if year_text else None
    month = None
    if month_text:
        month = int(month_text) if month_text.isdigit() else MONTH_NUMBERS[month_text]
    day = int(day_text) if day_text else None
    try:  # a real calendar day (February 30 is none; a day without a year, a leap one)
        date(year or 2000, month or 1, day or 1)
    except ValueError:
        return None
    return NamedDate(year, month, day)


def written_on(moment: datetime, dates: tuple[NamedDate, ...]) -> bool:
    """Whether a fact created at `moment` (UTC) was written on any of `dates`."""
    return any(named.holds(moment) for named in dates)
