"""The pair check's candidates: the ids sharing most of a fact's rarest terms, the newer
first among equals, against a plain reference ordering."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from graymatter_tui.storage.conflict_ops import _most_shared

IDS = st.text(alphabet="0123456789abcdef", min_size=1, max_size=4)


@given(
    counts=st.dictionaries(IDS, st.integers(min_value=1, max_value=4), max_size=60),
    limit=st.integers(min_value=1, max_value=15),
    least=st.integers(min_value=0, max_value=4),
)
def test_the_most_shared_are_ranked_by_count_then_newest(
    counts: dict[str, int], limit: int, least: int
) -> None:
    expected = sorted(
        (i for i, n in counts.items() if n >= max(least, 1)),
        key=lambda i: (counts[i], i),
        reverse=True,
    )[:limit]
    assert _most_shared(Counter(counts), limit, least) == expected
