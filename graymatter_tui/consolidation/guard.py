"""The coverage guard: a fact may be consumed only if its key details survive in the summary.

Key details are what a person would call load-bearing: identifiers (ABC-1234), numbers,
dates, URLs, emails and proper names. They are compared after normalising case,
punctuation and the way numbers are written ("5,432", "5 432" and "5432" are one number).
`strict` mode also asks for most content words.
"""

from __future__ import annotations

from graymatter_tui.core.details import (
    CLOCK_TIME,
    IDENTIFIER,
    ISO_DATE,
    NUMBER,
    SCIENTIFIC,
    content_words,
    detail_key,
    fold,
    key_details,
    normalise_number,
)
from graymatter_tui.core.lexicon import EMAIL, URL, WORD
from graymatter_tui.core.model import GuardVerdict


def _strip_structured(text: str) -> str:
    """The text without URLs, emails, dates, times and identifiers, so the numbers left
    are numbers in their own right ("1234" inside "SUP-1234" is not the number 1234)."""
    for pattern in (URL, EMAIL, ISO_DATE, CLOCK_TIME, SCIENTIFIC, IDENTIFIER):
        text = pattern.sub(" ", text)
    return text


def _summary_index(summary: str) -> tuple[str, set[str]]:
    """The summary as normalised words (for phrase search) and its normalised numbers."""
    words = " " + " ".join(WORD.findall(fold(summary))) + " "
    numbers = {normalise_number(n.strip()) for n in NUMBER.findall(_strip_structured(summary))}
    return words, numbers


def _present(detail: str, words: str, numbers: set[str]) -> bool:
    stripped = detail.strip()
    if NUMBER.fullmatch(stripped):
        return normalise_number(stripped) in numbers
    key = detail_key(detail)
    return f" {key} " in words


def check(fact_id: str, text: str, summary: str, mode: str) -> GuardVerdict:
    """Whether the fact `text` may be consumed by `summary` under guard `mode`."""
    if mode == "off":
        return GuardVerdict(id=fact_id, consumed=True)
    words, numbers = _summary_index(summary)
    missing = [d for d in key_details(text) if not _present(d, words, numbers)]
    if mode == "strict":
        wanted = list(dict.fromkeys(content_words(text)))
        absent = [w for w in wanted if f" {w} " not in words]
        if wanted and len(absent) > len(wanted) // 5:
            missing += [f"word '{w}'" for w in absent]
    return GuardVerdict(id=fact_id, consumed=not missing, missing=missing)
