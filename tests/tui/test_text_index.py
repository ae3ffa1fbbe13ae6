"""The filter's compact substring index agrees with a plain `in` over every casefolded
text, and its compact id list with a plain list."""

from __future__ import annotations

import random
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter_tui.tui.widgets.id_list import IdList, Picked
from graymatter_tui.tui.widgets.text_index import BLOCK, TextIndex


def reference(texts: list[str], needle: str) -> list[int]:
    folded = needle.casefold()
    return [i for i, t in enumerate(texts) if folded in t.casefold()]


def test_hand_checked_search() -> None:
    index = TextIndex(["a", "b", "c"], ["Staging DB", "prod db", "STAGING again"])
    assert list(index.search("staging")) == [0, 2]
    assert list(index.search("db")) == [0, 1]
    assert list(index.search("g db")) == [0]
    assert list(index.search("db prod")) == []  # never matches across two texts
    assert list(index.search("nothing")) == []
    assert list(index.search("")) == [0, 1, 2]
    assert list(index.search("staging", limit=1)) == [0, 2]  # a whole block at least


# Characters whose casefold changes length or kind (ß → ss, ﬁ → fi, İ → i̇), non-BMP,
# combining marks, NUL, lone surrogates, and the two bytes the index uses as markers
# could never be confused with them: U+00FE/U+00FF encode to other bytes.
ALPHABET = "abcABé ßSſﬁİi̇\u0307Σσς\x00\U0001f600þÿ\ud800"


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=ALPHABET, max_size=12), max_size=40),
    needle=st.text(alphabet=ALPHABET, max_size=3),
)
def test_search_equals_a_plain_scan(texts: list[str], needle: str) -> None:
    index = TextIndex([str(i) for i in range(len(texts))], texts)
    assert list(index.search(needle.casefold())) == reference(texts, needle)


def test_many_blocks_of_random_texts_match_the_plain_scan() -> None:
    rng = random.Random(10)
    words = ["Straße", "STRASSE", "ﬁle", "file", "naïve", "😀 ok", "İstanbul", "σς", "a\x00b", ""]
    texts = [" ".join(rng.choices(words, k=rng.randint(0, 4))) for _ in range(BLOCK * 3 + 17)]
    index = TextIndex.from_pages(
        [
            ([f"{i:026d}" for i in range(s, min(s + 500, len(texts)))], texts[s : s + 500])
            for s in range(0, len(texts), 500)
        ]
    )
    assert len(index) == len(texts)
    for needle in ["", "strasse", "ss", "fi", "😀", "ı", "i̇", "σ", "\x00", "e s", "zz", "a"]:
        expected = reference(texts, needle)
        assert list(index.search(needle.casefold())) == expected, needle
        first = list(index.search(needle.casefold(), limit=5))
        assert first == expected[: len(first)] and len(first) >= min(5, len(expected))
        picked = Picked(index.ids, index.search(needle.casefold()))
        assert list(picked) == [f"{i:026d}" for i in expected]


def test_a_cancelled_search_stops_between_blocks() -> None:
    texts = ["x"] * (BLOCK * 4)
    index = TextIndex([str(i) for i in range(len(texts))], texts)
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2

    assert list(index.search("x", cancelled=cancelled)) == list(range(BLOCK * 2))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="0123456789ABé", min_size=0, max_size=5), unique=True))
def test_id_list_behaves_like_a_list(ids: list[str]) -> None:
    packed = IdList.of(ids)
    assert len(packed) == len(ids)
    assert list(packed) == ids
    assert packed[1:3] == ids[1:3]
    for position, fact_id in enumerate(ids):
        assert packed[position] == fact_id
        assert packed.index(fact_id) == position
    assert "nope!" not in packed
    if ids:
        assert packed[-1] == ids[-1]
        positions = array("i", range(0, len(ids), 2))
        picked = Picked(packed, positions)
        assert list(picked) == ids[::2]
        for at, fact_id in enumerate(ids[::2]):
            assert picked.index(fact_id) == at
        if len(ids) > 1:
            assert ids[1] not in picked


def test_pages_of_ulids_pack_without_padding() -> None:
    pages = [
        ["01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"],
        ["01ARZ3NDEKTSV4RRFFQ69G5FAX"],
    ]
    ids = IdList.joined(pages)
    assert ids.width == 26 and len(ids) == 3
    assert ids.index("01ARZ3NDEKTSV4RRFFQ69G5FAX") == 2
    mixed = IdList.joined([["short"], ["01ARZ3NDEKTSV4RRFFQ69G5FAV"]])
    assert list(mixed) == ["short", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]
