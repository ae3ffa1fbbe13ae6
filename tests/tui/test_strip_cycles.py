"""Rendered lines are freed when dropped, not left for the cycle collector
(tui/strip_cycles.py, ADR 0077)."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from graymatter_tui.tui.strip_cycles import (
    _textual_divide,
    divide_makes_a_cycle,
    mend_strip_divide,
)


def strips_alive() -> int:
    return sum(type(obj) is Strip for obj in gc.get_objects())


def test_textuals_divide_makes_a_cycle_and_the_mended_one_does_not() -> None:
    # Textual is pinned (pyproject.toml): if a release stops caching the strip in its
    # own cache, this fails, and the mend (which then does nothing) can go.
    assert divide_makes_a_cycle(_textual_divide)
    assert mend_strip_divide()
    assert Strip.divide is not _textual_divide
    assert not divide_makes_a_cycle(Strip.divide)
    assert mend_strip_divide()  # a second call changes nothing


def test_a_line_cut_at_its_length_is_freed_with_its_last_reference() -> None:
    mend_strip_divide()
    gc.collect()
    gc.disable()
    try:
        before = strips_alive()
        for n in range(200):
            strip = Strip([Segment(f"line {n:03}", Style(bold=True))], 8)
            assert strip.divide([8]) == [strip]
            del strip
        assert strips_alive() - before < 5
        # Textual's own divide leaves each one behind until a full pass.
        for n in range(200):
            strip = Strip([Segment(f"line {n:03}")], 8)
            _textual_divide(strip, [8])
            del strip
        assert strips_alive() - before >= 200
    finally:
        gc.enable()
        gc.collect()


texts = st.lists(
    st.tuples(st.text(alphabet="ab 界", min_size=1, max_size=6), st.booleans()),
    min_size=1,
    max_size=5,
)


@given(texts, st.lists(st.integers(min_value=0, max_value=30), max_size=4))
def test_the_mended_divide_cuts_as_textuals_does(
    parts: list[tuple[str, bool]], cuts: list[int]
) -> None:
    mend_strip_divide()
    segments = [Segment(text, Style(bold=bold)) for text, bold in parts]
    length = Strip(segments).cell_length
    for wanted in (sorted(cuts), [*sorted(c for c in cuts if c < length), length]):
        ours = Strip.divide(Strip(segments), wanted)
        theirs = _textual_divide(Strip(segments), wanted)
        assert [(list(s), s.cell_length) for s in ours] == [
            (list(s), s.cell_length) for s in theirs
        ]
