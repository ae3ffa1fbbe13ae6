"""Key details and content words of a text: what the coverage guard asks a summary to keep
and what the pair check compares (identifiers, numbers, dates, URLs, emails, proper
names), normalised so that "5,432", "5 432" and "5432" are one number. Pure functions.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from graymatter_tui.core.lexicon import EMAIL, STOPWORDS, URL, WORD

IDENTIFIER = re.compile(r"\b[A-Za-z]{1,12}[-_]?\d[\w-]*\b|\b\d+[A-Za-z]+\w*\b")
ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
CLOCK_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+\b")
NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:[ ,.\u00a0\u202f]\d{3})+(?:[.,]\d+)?(?!\w)|\d+(?:[.,]\d+)?"
)
SENTENCE_END = re.compile(r"[.!?:;]\s+|\n")
# Most sentences people write hold no digit, and most patterns here need one: a text
# without one is not scanned by them (the pair check profiles every fact written).
DIGIT = re.compile(r"\d")


def has_digit(text: str) -> bool:
    """Whether `text` holds what `\\d` matches: a pattern that needs one cannot match
    a text without one."""
    return DIGIT.search(text) is not None


def without_addresses(text: str) -> str:
    """`text` with its URLs and email addresses blanked."""
    if "@" in text:
        text = EMAIL.sub(" ", text)
    return URL.sub(" ", text) if "://" in text else text


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return text


def normalise_number(raw: str) -> str:
    """'5,432' / '5 432' / '5.432' (thousands) -> '5432'; '3,5' / '3.5' -> '3.5'."""
    text = raw.replace("\u00a0", " ").replace("\u202f", " ").lstrip("+")
    groups = re.fullmatch(r"(-?\d{1,3})((?:[ ,.]\d{3})+)([.,]\d+)?", text)
    if groups:
        whole = groups.group(1) + re.sub(r"[ ,.]", "", groups.group(2))
        frac = groups.group(3)
        return whole + ("." + frac[1:] if frac else "")
    return text.replace(",", ".")


def _proper_names(text: str) -> list[str]:
    names: list[str] = []
    for sentence in SENTENCE_END.split(text):
        words = WORD.findall(sentence)
        run: list[tuple[int, str]] = []
        for index, word in enumerate(words):
            capital = word[0].isupper() and (not word.isupper() or len(word) > 1)
            if capital and not word[0].isdigit():
                run.append((index, word))
                continue
            names.extend(_close_run(run))
            run = []
        names.extend(_close_run(run))
    return names


def _close_run(run: list[tuple[int, str]]) -> list[str]:
    if not run:
        return []
    words = [w for _, w in run]
    starts_sentence = run[0][0] == 0
    if len(words) == 1:
        if starts_sentence or fold(words[0]) in STOPWORDS:
            return []
        return [words[0]]
    # A capitalised word that opens the sentence ("Yesterday Maria Lopez…", "Call Maria
    # Lopez…") is usually not part of the name after it; a two-word run ("Acme Corp") is
    # kept whole.
    if starts_sentence and (fold(words[0]) in STOPWORDS or len(words) >= 3):
        words = words[1:]
    return [" ".join(words)] if words else []


def key_details(text: str) -> list[str]:
    """The details of `text` a summary must keep, in order of appearance, de-duplicated."""
    return list(_key_details(text))


@lru_cache(maxsize=4096)  # the pair check, the profile and the guard ask of the same text
def _key_details(text: str) -> tuple[str, ...]:
    found: list[str] = []
    rest = text
    # Each pattern is skipped where it cannot match: a URL needs "://", an email "@",
    # and the rest a digit.
    for pattern, needs in ((URL, "://"), (EMAIL, "@")):
        if needs in rest:
            for match in pattern.findall(rest):
                found.append(match.rstrip(".,;:"))
            rest = pattern.sub(" ", rest)
    if has_digit(rest):
        for pattern in (ISO_DATE, CLOCK_TIME, SCIENTIFIC):
            found.extend(pattern.findall(rest))
            rest = pattern.sub(" ", rest)
        for match in IDENTIFIER.findall(rest):
            if (
                not match.isdigit()
                and any(c.isdigit() for c in match)
                and not _is_plain_number(match)
            ):
                found.append(match)
        rest = IDENTIFIER.sub(" ", rest)
        for match in NUMBER.findall(rest):
            found.append(match.strip())
    found.extend(_proper_names(rest))
    seen: set[str] = set()
    out = []
    for item in found:
        key = detail_key(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)


def _is_plain_number(token: str) -> bool:
    return bool(re.fullmatch(r"\d+(?:[.,]\d+)?", token))


def detail_key(detail: str) -> str:
    if NUMBER.fullmatch(detail.strip()):
        return normalise_number(detail.strip())
    return " ".join(WORD.findall(fold(detail)))


def content_words(text: str) -> list[str]:
    return [
        w
        for w in WORD.findall(fold(text))
        if len(w) >= 4 and w not in STOPWORDS and not w.isdigit()
    ]
