"""A hit's keyword rank, worked out for that fact alone (`ranking._Ranks`), is its place
in the whole candidate list sorted by score, highest first, ties by id."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter_tui.recall.ranking import _best_first, _Ranks

# Few distinct scores: ties are the rule, as for facts matching the same terms.
SCORES = st.dictionaries(
    st.text("0123456789ABCDEF", min_size=1, max_size=4),
    st.sampled_from([0.0, 0.25, 0.5, 0.5000001, 1.0, 3.0]),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(scores=SCORES)
def test_each_rank_is_the_place_in_the_sorted_list(scores: dict[str, float]) -> None:
    ranks = _Ranks(scores)
    ordered = _best_first(scores, list(scores))
    assert [ranks.of(i) for i in ordered] == list(range(1, len(ordered) + 1))
    assert ranks.of("not a candidate") is None
