"""The coverage guard: a fact may be consumed only if its key details survive in the summary.

Key details are what a person would call load-bearing: identifiers (ABC-1234), numbers,
dates, URLs, emails and proper names. They are compared after normalising case,
punctuation and the way numbers are written ("5,432", "5 432" and "5432" are one number).
`strict` mode also asks for most content words.
"""

from __future__ import annotations

import re
import unicodedata

from graymatter_tui.core.lexicon import EMAIL, STOPWORDS, URL, WORD
from graymatter_tui.core.model import GuardVerdict

IDENTIFIER = re.compile(r"\b[A-Za-z]{1,12}[-_]?\d[\w-]*\b|\b\d+[A-Za-z]+\w*\b")
ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
CLOCK_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+\b")
NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:[ ,.\u00a0\u202f]\d{3})+(?:[.,]\d+)?(?!\w)|\d+(?:[.,]\d+)?"
)
SENTENCE_END = re.compile(r"[.!?:;]\s+|\n")


def _fold(text: str) -> str:
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
        if starts_sentence or _fold(words[0]) in STOPWORDS:
            return []
        return [words[0]]
    # A capitalised word that opens the sentence ("Yesterday Maria Lopez…", "Call Maria
    # Lopez…") is usually not part of the name after it; a two-word run ("Acme Corp") is
    # kept whole.
    if starts_sentence and (_fold(words[0]) in STOPWORDS or len(words) >= 3):
        words = words[1:]
    return [" ".join(words)] if words else []


def key_details(text: str) -> list[str]:
    """The details of `text` a summary must keep, in order of appearance, de-duplicated."""
    found: list[str] = []
    rest = text
    for pattern in (URL, EMAIL):
        for match in pattern.findall(rest):
            found.append(match.rstrip(".,;:"))
        rest = pattern.sub(" ", rest)
    for pattern in (ISO_DATE, CLOCK_TIME, SCIENTIFIC):
        found.extend(pattern.findall(rest))
        rest = pattern.sub(" ", rest)
    for match in IDENTIFIER.findall(rest):
        if not match.isdigit() and any(c.isdigit() for c in match) and not _is_plain_number(match):
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
    return out


def _is_plain_number(token: str) -> bool:
    return bool(re.fullmatch(r"\d+(?:[.,]\d+)?", token))


def detail_key(detail: str) -> str:
    if NUMBER.fullmatch(detail.strip()):
        return normalise_number(detail.strip())
    return " ".join(WORD.findall(_fold(detail)))


def _strip_structured(text: str) -> str:
    """The text without URLs, emails, dates, times and identifiers, so the numbers left
    are numbers in their own right ("1234" inside "SUP-1234" is not the number 1234)."""
    for pattern in (URL, EMAIL, ISO_DATE, CLOCK_TIME, SCIENTIFIC, IDENTIFIER):
        text = pattern.sub(" ", text)
    return text


def _summary_index(summary: str) -> tuple[str, set[str]]:
    """The summary as normalised words (for phrase search) and its normalised numbers."""
    words = " " + " ".join(WORD.findall(_fold(summary))) + " "
    numbers = {normalise_number(n.strip()) for n in NUMBER.findall(_strip_structured(summary))}
    return words, numbers


def _present(detail: str, words: str, numbers: set[str]) -> bool:
    stripped = detail.strip()
    if NUMBER.fullmatch(stripped):
        return normalise_number(stripped) in numbers
    key = detail_key(detail)
    return f" {key} " in words


def content_words(text: str) -> list[str]:
    return [
        w
        for w in WORD.findall(_fold(text))
        if len(w) >= 4 and w not in STOPWORDS and not w.isdigit()
    ]


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
