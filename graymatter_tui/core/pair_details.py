"""Key details the pair check reads in forms the coverage guard's `key_details` takes
apart or leaves out: a date written in words ("March 4, 2027" is "2027-03-04"), a
version ("v2.3.1" is "version 2.3.1"), a quantity with its unit ("4GB" is "4 GB"), a
number written as a word ("three replicas" is "3 replicas"), a path ("/healthz"), a
hyphenated name with a number in it ("us-east-2"), a time of day ("6 pm" is "18:00"), a
weekday in six languages, a host name ("stage.corp-internal.net"). Each is taken out of
the text before the rest is read, with the key both spellings share. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Callable

from graymatter_tui.core.details import detail_key, fold, has_digit
from graymatter_tui.core.lexicon import EMAIL, URL

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
WRITTEN_DATE = re.compile(
    rf"\b(?:{_DAY}\s+(?:of\s+)?({_MONTH})\.?{_YEAR}|({_MONTH})\.?\s+{_DAY}{_YEAR})\b",
    re.IGNORECASE,
)
VERSION = re.compile(r"\b(?:v|version\s+)(\d+(?:\.\d+)*)\b|\b(\d+\.\d+\.\d+(?:\.\d+)?)\b", re.I)
# A unit and the ways it is spelt out; a quantity's key is its number and the unit.
_UNITS = {
    "gb": "gb gigabyte gigabytes",
    "gib": "gib",
    "mb": "mb megabyte megabytes",
    "mib": "mib",
    "kb": "kb kilobyte kilobytes",
    "tb": "tb terabyte terabytes",
    "ms": "ms millisecond milliseconds",
    "s": "sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "hr hrs hour hours",
    "km": "km kilometre kilometres kilometer kilometers",
    "kg": "kg kilogram kilograms",
    "mg": "mg milligram milligrams",
    "ml": "ml millilitre millilitres milliliter milliliters",
    "cm": "cm centimetre centimetres centimeter centimeters",
    "mm": "mm millimetre millimetres millimeter millimeters",
    "ghz": "ghz",
    "mhz": "mhz",
    "kwh": "kwh",
}
_UNIT = {spelling: unit for unit, spellings in _UNITS.items() for spelling in spellings.split()}
QUANTITY = re.compile(
    rf"(?<![\w.])(\d+(?:\.\d+)?)\s?({'|'.join(sorted(_UNIT, key=len, reverse=True))})\b",
    re.IGNORECASE,
)
PATH = re.compile(r"(?<![\w/.:])/[\w-]+(?:[./][\w-]+)*/?")
# "us-east-2", "orders-v2": a region or a name with a number, in lower case.
COMPOUND = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
_NUMBER_WORDS = {
    word: str(number)
    for number, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_NUMBER_WORDS.update(
    zip(
        "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split(),
        map(str, range(13, 20)),
        strict=True,
    )
)
_NUMBER_WORDS.update(
    zip(
        "twenty thirty forty fifty sixty seventy eighty ninety hundred".split(),
        "20 30 40 50 60 70 80 90 100".split(),
        strict=True,
    )
)
del _NUMBER_WORDS["zero"], _NUMBER_WORDS["one"]  # "no one", "one of": rarely a count
NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(_NUMBER_WORDS)})\b", re.IGNORECASE)
# A time of day in the forms people write it: "6 pm", "6:30 p.m.", "18:00", "07:40",
# "14 Uhr", "9h", "14h30". Its key is the 24-hour clock without a leading zero ("18:00").
CLOCK_12 = re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s?(am|pm|a\.m\.|p\.m\.)(?!\w)", re.IGNORECASE)
CLOCK_24 = re.compile(r"(?<![\d:.])(\d{1,2}):(\d{2})(?![\d:])")
CLOCK_WORD = re.compile(r"\b(\d{1,2})(?:\s?Uhr|h(\d{2})?)\b")
# Weekdays in English, German, French, Spanish, Portuguese and Italian ("Fridays",
# "mittwochs", "martes", "segunda-feira"): one key a day, whatever the language.
_WEEKDAYS = (
    "monday montag lundi lunes segunda-feira lunedì",
    "tuesday dienstag mardi martes terça-feira martedì",
    "wednesday mittwoch mercredi miércoles quarta-feira mercoledì",
    "thursday donnerstag jeudi jueves quinta-feira giovedì",
    "friday freitag vendredi viernes sexta-feira venerdì",
    "saturday samstag samedi sábado sabato",
    "sunday sonntag dimanche domingo domenica",
)
_WEEKDAY = {name: day for day, names in enumerate(_WEEKDAYS, 1) for name in names.split()}
WEEKDAY = re.compile(
    rf"(?<![\w-])(?:{'|'.join(sorted(_WEEKDAY, key=len, reverse=True))})s?(?![\w-])",
    re.IGNORECASE,
)
# A host name without a scheme ("stage.corp-internal.net", "db.internal").
_DOMAINS = r"\.(?:com|net|org|io|dev|app|ai|co|internal|local|cloud|corp|lan|example)(?![\w.-])"
HOST = re.compile(
    r"(?<![\w.@/-])(?=[\w-]*[a-z])[a-z0-9][\w-]*(?:\.[\w-]+)*" + _DOMAINS, re.IGNORECASE
)
# How every host name ends: found far faster than a host, whose pattern starts anywhere.
_HOST_END = re.compile(_DOMAINS, re.IGNORECASE)


def _absent_mark(text: str) -> str:
    """A character the text does not hold, to stand around a kept URL's number: NUL,
    unless the text itself holds one (then one of planes 15 and 16, private use: a fact
    of 64 KiB cannot hold all 131,072 of them)."""
    if "\x00" not in text:
        return "\x00"
    return next((c for c in map(chr, range(0xF0000, 0x110000)) if c not in text), "\x00")


def _kept(kept: list[str], match: re.Match[str]) -> str:
    number = int(match.group(1))
    return kept[number] if number < len(kept) else match.group(0)


def _anything(rest: str) -> bool:
    return True


def _may_name_a_host(rest: str) -> bool:
    return _HOST_END.search(rest) is not None


def _has_slash(rest: str) -> bool:
    return "/" in rest


def pair_details(text: str) -> tuple[list[tuple[str, str, str]], str]:
    """(key, as written, kind) of each detail found here, and the text with them blanked
    out, for `key_details` to read the rest."""
    found: list[tuple[str, str, str]] = []
    # URLs and emails are left whole, for `key_details`: a path or a host inside one is
    # part of it.
    kept: list[str] = []
    mark = _absent_mark(text)

    def keep(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"{mark}{len(kept) - 1}{mark}"

    def take(
        pattern: re.Pattern[str],
        key_of: Callable[[re.Match[str]], str],
        rest: str,
        needs: Callable[[str], bool] = _anything,
    ) -> str:
        """`rest` with each match of `pattern` that has a key blanked; not scanned at
        all when it lacks what every match holds (`needs`)."""
        if not needs(rest):
            return rest

        def blank(match: re.Match[str]) -> str:
            key = key_of(match)
            if not key:
                return match.group(0)
            found.append((key, match.group(0), "value"))
            return " "

        return pattern.sub(blank, rest)

    rest = text
    if "://" in rest:
        rest = URL.sub(keep, rest)
    if "@" in rest:
        rest = EMAIL.sub(keep, rest)
    rest = take(HOST, lambda m: fold(m.group(0)), rest, needs=_may_name_a_host)
    rest = take(WRITTEN_DATE, _date_key, rest, needs=has_digit)
    rest = take(CLOCK_12, _clock_12, rest, needs=has_digit)
    rest = take(CLOCK_24, lambda m: _clock(int(m.group(1)), int(m.group(2))), rest, has_digit)
    rest = take(
        CLOCK_WORD, lambda m: _clock(int(m.group(1)), int(m.group(2) or 0)), rest, has_digit
    )
    rest = take(WEEKDAY, _weekday, rest)
    rest = take(VERSION, lambda m: "v" + (m.group(1) or m.group(2)), rest, needs=has_digit)
    rest = take(
        QUANTITY, lambda m: detail_key(m.group(1)) + _UNIT[fold(m.group(2))], rest, has_digit
    )
    # A path is a setting's value here ("the health check path is /healthz").
    rest = take(PATH, lambda m: m.group(0).rstrip("/") or "/", rest, needs=_has_slash)
    # A region or a group of settings ("eu-west-2", "orders-v2") is a value of what the
    # fact is about, where a ticket or a service name picks out another subject.
    rest = take(COMPOUND, lambda m: m.group(0) if has_digit(m.group(0)) else "", rest, has_digit)
    rest = take(NUMBER_WORD, lambda m: _NUMBER_WORDS[fold(m.group(0))], rest)
    if kept:
        held = re.compile(f"{mark}([0-9]+){mark}")
        rest = held.sub(lambda m: _kept(kept, m), rest)
    return found, rest


def _clock(hour: int, minute: int) -> str:
    return f"{hour}:{minute:02d}" if hour < 24 and minute < 60 else ""


def _clock_12(match: re.Match[str]) -> str:
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if not 1 <= hour <= 12:
        return ""
    afternoon = fold(match.group(3)).startswith("p")
    return _clock(hour % 12 + (12 if afternoon else 0), minute)


def _weekday(match: re.Match[str]) -> str:
    name = fold(match.group(0))
    day = _WEEKDAY.get(name) or _WEEKDAY.get(name[:-1])
    return f"weekday {day}" if day else ""


def _date_key(match: re.Match[str]) -> str:
    """The ISO date's detail key ("2027 03 04") of a date written in words; without a
    year, the month and day alone ("03 04")."""
    day, month, year = match.group(1), match.group(2), match.group(3)
    if day is None:
        month, day, year = match.group(4), match.group(5), match.group(6)
    number = int(day)
    if not 1 <= number <= 31:
        return ""
    parts = [f"{_MONTHS[fold(month)]:02d}", f"{number:02d}"]
    return " ".join([year, *parts] if year else parts)
