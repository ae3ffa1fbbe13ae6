"""Patterns and word lists shared by the coverage guard, entity extraction and recall."""

from __future__ import annotations

import re

# A URL never ends in sentence punctuation, so "…/runbook. Check it" keeps its full stop.
URL = re.compile(r"\bhttps?://[^\s<>\"')\]]*[^\s<>\"')\].,;:!?]", re.IGNORECASE)
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")


def _mark_ranges(limit: int = 0x20000) -> str:
    """Character-class ranges of every combining mark (Mn, Mc, Me) below `limit`: Python's
    `\\w` leaves them out, which would cut "हिन्दी" or "தமிழ்" into single letters."""
    import unicodedata

    ranges: list[tuple[int, int]] = []
    for code in range(limit):
        if unicodedata.category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(f"{chr(a)}-{chr(b)}" if a != b else chr(a) for a, b in ranges)


# A word: letters, digits, underscore and combining marks (so Devanagari, Tamil, Arabic
# with vowel signs, and decomposed Latin stay whole).
WORD = re.compile(f"[\\w{_mark_ranges()}]+", re.UNICODE)

# Function words of English, Spanish, French and German: never key details or keywords.
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "also",
        "about",
        "after",
        "before",
        "over",
        "under",
        "very",
        "just",
        "only",
        "more",
        "most",
        "some",
        "such",
        "each",
        "any",
        "all",
        "other",
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "y",
        "o",
        "de",
        "del",
        "en",
        "que",
        "es",
        "por",
        "para",
        "con",
        "se",
        "su",
        "sus",
        "al",
        "lo",
        "le",
        "les",
        "des",
        "et",
        "est",
        "une",
        "dans",
        "pour",
        "pas",
        "qui",
        "sur",
        "der",
        "die",
        "das",
        "und",
        "ist",
        "nicht",
        "ein",
        "eine",
        "zu",
        "mit",
        "den",
        "von",
        "im",
    }
)
