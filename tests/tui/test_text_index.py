"""The filter's substring index agrees with a plain `in` over every text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter_tui.widgets.text_index import TextIndex


def test_hand_checked_search() -> None:
    index = TextIndex(["a", "b", "c"], ["Staging DB", "prod db", "STAGING again"])
    assert index.search("staging") == [0, 2]
    assert index.search("db") == [0, 1]
    assert index.search("staging", within=[2]) == [2]
    assert index.search("g db") == [0]
    assert index.search("db prod") == []  # never matches across two texts
    assert index.search("nothing") == []


@settings(max_examples=200)
@given(
    texts=st.lists(st.text(alphabet="abcAB é", max_size=12), max_size=30),
    needle=st.text(alphabet="abcé ", min_size=1, max_size=3),
)
def test_search_equals_a_plain_scan(texts: list[str], needle: str) -> None:
    index = TextIndex([str(i) for i in range(len(texts))], texts)
    folded = needle.casefold()
    expected = [i for i, t in enumerate(texts) if folded in t.casefold()]
    assert index.search(folded) == expected
    assert index.search(folded, within=list(range(len(texts)))) == expected
