"""Tokenising text for recall: Unicode-aware words, case- and width-folded, stop-words
dropped, and (per store) reduced to their Snowball stems. Shared by the store's inverted
index and by queries, so both agree exactly."""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import cache

import Stemmer

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.lexicon import EMAIL, STOPWORDS, URL, WORD

# Index keys are `agent \0 term \0 id`; LMDB keys stop at 511 bytes and an agent name may
# take 256, so a term is at most 200 bytes of UTF-8.
MAX_TOKEN_BYTES = 200

# The stemming language of a new store, unless GRAYMATTER_STEM_LANGUAGE says otherwise.
DEFAULT_LANGUAGE = "english"
# No stemming: folding only (what every store before schema 4 indexed).
NO_STEMMING = "none"


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


def _fold(text: str) -> str:
    return text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()


def _words(folded: str) -> list[str]:
    """Keyword tokens of already folded text."""
    if folded.isascii():
        return [
            w if len(w) <= MAX_TOKEN_BYTES else w[:MAX_TOKEN_BYTES]
            for w in _ASCII_TERM.findall(folded)
            if w not in STOPWORDS
        ]
    return [
        _clip(w) for w in WORD.findall(folded) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    ]


def tokens(text: str) -> list[str]:
    """Keyword tokens of `text`, in order, repeats kept (term frequency counts them),
    folded but not stemmed. A token longer than 200 bytes is cut to its first 200."""
    return _words(_fold(text))


# Spans whose words are names, not inflected language: URLs, emails, and identifiers
# joined by - _ . / : # + that hold a digit (INC-9418, v2.3.1, ops-7, ticket#9981).
# Only tried at word starts (`\b`): the unanchored forms cost more than the stemming.
_COMPOUND = r"\b\w+(?:[-_./:#+]\w+)+"
_IDENTIFIERS = re.compile(_COMPOUND)
_ANY_NAME = re.compile(f"{URL.pattern}|{EMAIL.pattern}|{_COMPOUND}", re.IGNORECASE)
_DIGIT_OR_UNDERSCORE = re.compile(r"[\d_]")
# Two word characters joined by a separator: where an identifier-shaped span may start.
_JOINED = re.compile(r"\w[-_./:#+]\w")


def _is_name(span: str) -> bool:
    return "@" in span or "://" in span or _DIGIT_OR_UNDERSCORE.search(span) is not None


@cache
def languages() -> tuple[str, ...]:
    """Every language a store may stem in, and `none`."""
    return (NO_STEMMING, *sorted(Stemmer.algorithms()))


def check_language(name: str) -> str:
    """`name` folded to a known stemming language; InvalidInput otherwise."""
    language = name.strip().lower()
    if language not in languages():
        raise InvalidInput(
            f"unknown stemming language {name!r}; choose one of: {', '.join(languages())}"
        )
    return language


# The variables naming it: DESIGN.md §10 fixes GRAYMATTER_LANGUAGE; the longer name says
# what the language is for, and either may be used (they must agree if both are set).
LANGUAGE_VARIABLES = ("GRAYMATTER_LANGUAGE", "GRAYMATTER_STEM_LANGUAGE")


def language_from_env() -> str:
    """The stemming language for a new (or upgraded) store: GRAYMATTER_LANGUAGE (or
    GRAYMATTER_STEM_LANGUAGE), else English."""
    chosen: dict[str, str] = {}
    for name in LANGUAGE_VARIABLES:
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                chosen[name] = check_language(raw)
            except InvalidInput as exc:
                raise InvalidInput(f"{name}: {exc}") from None
    if len(set(chosen.values())) > 1:
        raise InvalidInput(
            "GRAYMATTER_LANGUAGE and GRAYMATTER_STEM_LANGUAGE name different languages "
            f"({chosen['GRAYMATTER_LANGUAGE']}, {chosen['GRAYMATTER_STEM_LANGUAGE']}); set one"
        )
    return next(iter(chosen.values()), DEFAULT_LANGUAGE)


# Word -> term, per language: a text's words are mostly ones seen before, and a dict
# lookup costs a fraction of a call into the stemmer. Emptied when it grows past the limit.
_STEMS: dict[str, dict[str, str]] = {}
_STEM_CACHE = 200_000
# Folded ASCII chunk of text (no white space) -> its terms, per language, for
# `term_counts`; emptied when it grows past the limit (it holds a few MB at most).
_CHUNK_TERMS: dict[str, dict[str, tuple[str, ...]]] = {}
_CHUNK_CACHE = 100_000
# PyStemmer's stemmers are not safe to share between threads (each keeps a cache).
_local = threading.local()


def _stemmer(language: str) -> Stemmer.Stemmer:
    held: dict[str, Stemmer.Stemmer] = _local.__dict__.setdefault("stemmers", {})
    stemmer = held.get(language)
    if stemmer is None:
        stemmer = held[language] = Stemmer.Stemmer(language)
    return stemmer


@dataclass(frozen=True)
class Analyzer:
    """Terms of a text as one store indexes them: folded tokens, each word of prose
    reduced to its stem in the store's language. Words of URLs, emails and identifiers,
    and any token holding a digit or underscore, are never stemmed, so `INC-9418` or
    `build_2024` are found as written."""

    language: str = DEFAULT_LANGUAGE

    def terms(self, text: str) -> list[str]:
        folded = _fold(text)
        if self.language == NO_STEMMING:
            return _words(folded)
        if _DIGIT_OR_UNDERSCORE.search(folded) is None and "@" not in folded:
            return self._stemmed(_words(folded))  # prose only: the common case
        out: list[str] = []
        start = 0
        names = _ANY_NAME if "@" in folded or "://" in folded else _IDENTIFIERS
        for match in names.finditer(folded):
            if not _is_name(match.group()):
                continue
            out += self._stemmed(_words(folded[start : match.start()]))
            out += _words(match.group())
            start = match.end()
        out += self._stemmed(_words(folded[start:]))
        return out

    def _stemmed(self, words: list[str]) -> list[str]:
        cache = _STEMS.setdefault(self.language, {})
        get = cache.get
        stems = [get(w) for w in words]
        if None not in stems:
            return stems  # type: ignore[return-value]  # every word was cached
        if len(cache) > _STEM_CACHE:
            cache.clear()
        stem = _stemmer(self.language).stemWord
        out: list[str] = []
        for word, known in zip(words, stems, strict=True):
            if known is None:
                known = word if _DIGIT_OR_UNDERSCORE.search(word) else (stem(word) or word)
                cache[word] = known
            out.append(known)
        return out

    def term_counts(self, text: str) -> dict[str, int]:
        """How often each of `terms(text)` occurs, keyed in the order they first appear."""
        folded = _fold(text)
        counts: dict[str, int] = {}
        if not folded.isascii() or "@" in folded or "://" in folded:
            for term in self.terms(text):
                counts[term] = counts.get(term, 0) + 1
            return counts
        # ASCII without emails or URLs, the bulk of what an import indexes: no word or
        # identifier spans white space, so the terms of the text are those of each of its
        # white-space-separated chunks in turn, and a chunk seen before is a look-up.
        cache = _CHUNK_TERMS.setdefault(self.language, {})
        get = cache.get
        for chunk in folded.split():
            terms = get(chunk)
            if terms is None:
                if len(cache) >= _CHUNK_CACHE:
                    cache.clear()
                terms = cache[chunk] = self._chunk_terms(chunk)
            for term in terms:
                counts[term] = counts.get(term, 0) + 1
        return counts

    def _chunk_terms(self, chunk: str) -> tuple[str, ...]:
        """`terms(chunk)` of folded ASCII text holding no white space, '@' or '://'."""
        if _DIGIT_OR_UNDERSCORE.search(chunk) is None or _JOINED.search(chunk) is None:
            words = _words(chunk)  # no name: prose only
            return tuple(words if self.language == NO_STEMMING else self._stemmed(words))
        return tuple(self.terms(chunk))


FOLDING_ONLY = Analyzer(NO_STEMMING)


def term_counts(text: str) -> dict[str, int]:
    """Term counts of `text`, folded and not stemmed."""
    return FOLDING_ONLY.term_counts(text)
