"""ASCII text takes a faster route through the tokeniser; it must give the very tokens
the general (Unicode) route gives, or the index and the queries would disagree."""

from __future__ import annotations

import string
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter_tui.core.lexicon import STOPWORDS, WORD
from graymatter_tui.core.tokens import _clip, term_counts, tokens


def general_route(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [
        _clip(w) for w in WORD.findall(folded) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    ]


ascii_text = st.text(alphabet=string.printable + "\x00\x01\x1b\x7f", max_size=400)
wordy = st.lists(
    st.sampled_from(["The", "a", "I", "DEPLOY", "x_y", "9", "OPS-1234", "and", "Ä".lower(), "ß"])
    | st.text(alphabet=string.ascii_letters + string.digits + "_", min_size=1, max_size=260),
    max_size=30,
).map(" ".join)


@settings(max_examples=400)
@given(ascii_text)
def test_ascii_route_matches_the_general_route(text: str) -> None:
    assert text.isascii()
    assert tokens(text) == general_route(text)


@settings(max_examples=200)
@given(wordy)
def test_words_and_long_words_match_too(text: str) -> None:
    assert tokens(text) == general_route(text)
    counts = term_counts(text)
    assert sum(counts.values()) == len(tokens(text))
