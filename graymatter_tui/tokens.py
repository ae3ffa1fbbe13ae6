"""Tokenising text for recall: Unicode-aware words, case- and width-folded, stop-words
dropped. Shared by the store's inverted index and by queries, so both agree exactly."""

from __future__ import annotations

import re
import unicodedata

from graymatter_tui.lexicon import STOPWORDS, WORD

# Index keys are `agent \0 term \0 id`; LMDB keys stop at 511 bytes and an agent name may
# take 256, so a term is at most 200 bytes of UTF-8.
MAX_TOKEN_BYTES = 200


def _clip(word: str) -> str:
    if len(word) <= MAX_TOKEN_BYTES // 4:  # at most 4 bytes a character: surely short enough
        return word
    raw = word.encode("utf-8", errors="surrogatepass")
    if len(raw) <= MAX_TOKEN_BYTES:
        return word
    return raw[:MAX_TOKEN_BYTES].decode("utf-8", errors="ignore")


# For ASCII text, NFKC changes nothing, casefold is lower, a word is [0-9a-z_], and a byte
# is a character: the same tokens as the general route, several times faster (a bulk
# import tokenises 100k texts). The pattern itself drops one-letter words (digits stay).
_ASCII_TERM = re.compile(r"[0-9a-z_]{2,}|[0-9]")


def tokens(text: str) -> list[str]:
    """Keyword tokens of `text`, in order, repeats kept (term frequency counts them).
    A token longer than 200 bytes is cut to its first 200 (queries are cut alike)."""
    if text.isascii():
        return [
            w if len(w) <= MAX_TOKEN_BYTES else w[:MAX_TOKEN_BYTES]
            for w in _ASCII_TERM.findall(text.lower())
            if w not in STOPWORDS
        ]
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [
        _clip(w) for w in WORD.findall(folded) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    ]


def term_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for token in tokens(text):
        counts[token] = counts.get(token, 0) + 1
    return counts
