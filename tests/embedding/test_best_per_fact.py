"""`best_per_fact` (shared by the block search and the in-memory copy) against the plain
reading of its contract: every fact's best row, best first, ties by id, `limit` of them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter_tui.storage import vector_rank
from graymatter_tui.storage.vector_rank import best_per_fact

# Few distinct scores, so ties (across facts and within one) are common.
SCORES = st.sampled_from([-np.inf, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0])


def reference(scores: list[float], ids: list[str], limit: int) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for fact_id, score in zip(ids, scores, strict=True):
        if score != -np.inf and score > best.get(fact_id, -np.inf):
            best[fact_id] = score
    return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 12), SCORES), max_size=80),
    limit=st.integers(1, 10),
    rows_per_fact=st.integers(1, 4),
)
def test_the_best_row_of_each_fact_best_first_ties_by_id(
    rows: list[tuple[int, float]], limit: int, rows_per_fact: int
) -> None:
    ids = [f"F{n:02d}" for n, _ in rows]
    scores = np.array([s for _, s in rows], dtype=np.float32)
    # A small first take makes the search widen, as a fact with many rows makes it do.
    saved = vector_rank.ROWS_PER_FACT
    vector_rank.ROWS_PER_FACT = rows_per_fact
    try:
        found = best_per_fact(scores, ids.__getitem__, limit)
    finally:
        vector_rank.ROWS_PER_FACT = saved
    assert found == reference([float(s) for s in scores], ids, limit)
