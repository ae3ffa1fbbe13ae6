"""Tokenising text for recall: Unicode-aware words, case- and width-folded, stop-words
dropped. Shared by the store's inverted index and by queries, so both agree exactly."""

from __future__ import annotations

import unicodedata

from graymatter_tui.lexicon import STOPWORDS, WORD

MAX_TOKEN_CHARS = 64


def tokens(text: str) -> list[str]:
    """Keyword tokens of `text`, in order, repeats kept (term frequency counts them)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [
        w
        for w in WORD.findall(folded)
        if w not in STOPWORDS and (len(w) > 1 or w.isdigit()) and len(w) <= MAX_TOKEN_CHARS
    ]


def term_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for token in tokens(text):
        counts[token] = counts.get(token, 0) + 1
    return counts
