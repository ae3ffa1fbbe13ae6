"""What every process pays at start, which a hook pays on every prompt: the table of
combining marks the tokenizer needs is read, not computed, and it is the table the
running Unicode database gives."""

from __future__ import annotations

import unicodedata

import pytest

from graymatter_tui.core import lexicon


@pytest.mark.skipif(
    unicodedata.unidata_version != lexicon.MARKS_UNICODE_VERSION,
    reason="the table is for another Unicode version; this Python computes its own",
)
def test_the_stored_table_of_combining_marks_is_the_computed_one() -> None:
    assert lexicon._mark_ranges() == lexicon._mark_ranges(computed=True)


def test_words_with_combining_marks_stay_whole() -> None:
    assert lexicon.WORD.findall("हिन्दी தமிழ் e\u0301te") == ["हिन्दी", "தமிழ்", "e\u0301te"]
