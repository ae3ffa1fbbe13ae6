"""Rendered lines freed as soon as they are dropped, not by the cycle collector.

Textual's compositor cuts every line it renders with `Strip.divide`; for a widget that
fills its whole row, the cut is the strip's own length and `divide` returns `[strip]`,
after storing that list in the strip's own cache. The strip then refers to itself: it
outlives its last reference until a full collection finds it, and between two such
passes a person switching tabs leaves ~20,000 of them (seven small caches each), which
made each pass 20-60 ms on the event loop (ADR 0077).

`mend_strip_divide` makes a whole-length cut return `[strip]` without caching it: the
same answer, no cycle. It changes nothing where the installed Textual makes no cycle
there (`divide_makes_a_cycle`), so a release that fixes this needs no change here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from rich.segment import Segment
from textual.strip import Strip

Divide = Callable[[Strip, Iterable[int]], Sequence[Strip]]

_textual_divide: Divide = Strip.divide


def divide_makes_a_cycle(divide: Divide = _textual_divide) -> bool:
    """Whether `divide` leaves a strip cut at its own length referring to itself."""
    strip = Strip([Segment("probe")], 5)
    parts = divide(strip, [strip.cell_length])
    return any(part is strip for part in parts) and any(
        cached is parts for cached in strip._divide_cache._cache.values()
    )


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    length = self.cell_length
    kept = [cut for cut in cuts if cut <= length]  # what Textual's divide keeps
    if kept == [length]:
        return [self]
    return _textual_divide(self, kept)


def mend_strip_divide() -> bool:
    """Install the mended `divide` where Textual's makes a cycle; whether it is in place."""
    if Strip.divide is _divide:
        return True
    if not divide_makes_a_cycle():
        return False
    Strip.divide = _divide  # type: ignore[method-assign]
    return True
