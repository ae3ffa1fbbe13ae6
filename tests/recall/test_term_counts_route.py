"""`Analyzer.term_counts` of ASCII text counts the terms of each white-space-separated
chunk (remembered once seen) rather than tokenising the whole text again. It must count
exactly `Analyzer.terms(text)`, first occurrences in the same order, in every language,
or the index would disagree with the queries and with indexes built before."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter_tui.core.tokens import Analyzer

ANALYZERS = [Analyzer("english"), Analyzer("none"), Analyzer("german"), Analyzer("french")]

# Pieces where names (a digit or underscore, joined by - _ . / : # +) meet prose.
PIECES = [
    "Deploying",
    "deployed",
    "the",
    "And",
    "a",
    "I",
    "9",
    "OPS-1234",
    "ops-7955)",
    "(ref",
    "#17",
    "build_2024",
    "foo_bar-baz",
    "_-running",
    "x_",
    "_",
    "e.g.",
    "wiki/pages",
    "x-ray",
    "a-1",
    "v2.3.1",
    "runs:",
    "10:30",
    "key+value",
    "c++",
    "running.",
    "Straße",
    "mail@example.com",
    "https://example.com/runbooks/3",
    "x" * 230,
    "y" * 199 + "s",
]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", ""]


def _spaced(pieces: list[str]) -> st.SearchStrategy[str]:
    gaps = st.lists(st.sampled_from(SPACES), min_size=len(pieces), max_size=len(pieces))
    return gaps.map(lambda chosen: "".join(p + g for p, g in zip(pieces, chosen, strict=True)))


texts = st.lists(
    st.sampled_from(PIECES)
    | st.text(alphabet=string.ascii_letters + string.digits + "_-./:#+@()", max_size=24),
    max_size=30,
).flatmap(_spaced)


def _counted(analyzer: Analyzer, text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for term in analyzer.terms(text):
        counts[term] = counts.get(term, 0) + 1
    return counts


@settings(max_examples=500)
@given(texts)
def test_term_counts_are_the_counted_terms_in_order(text: str) -> None:
    for analyzer in ANALYZERS:
        want = _counted(analyzer, text)
        for _ in range(2):  # the first time fills the cache, the second reads it
            got = analyzer.term_counts(text)
            assert got == want, analyzer.language
            assert list(got) == list(want), analyzer.language


@settings(max_examples=300)
@given(st.text(alphabet=string.printable + "\x00\x01\x1b\x7f", max_size=300))
def test_any_printable_ascii_text(text: str) -> None:
    for analyzer in ANALYZERS:
        assert analyzer.term_counts(text) == _counted(analyzer, text), analyzer.language
        assert list(analyzer.term_counts(text)) == list(_counted(analyzer, text))
