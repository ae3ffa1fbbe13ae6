"""The vector cache's int8 first pass (ADR 0071) answers exactly what the float32 product
answers: the same facts, the same order, the same scores, whatever the rows (near-ties,
copies of one vector, facts with many rows, freed rows, a limit above what is held)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter_tui.embedding import int8_product, vector_cache
from graymatter_tui.embedding.vector_cache import AgentMatrix
from graymatter_tui.storage.values import VectorBlocks

BLOCK_ROWS = 16


def _blocks(matrix: np.ndarray, ids: list[str]) -> VectorBlocks:
    count = len(ids)
    numbers = tuple(range((count + BLOCK_ROWS - 1) // BLOCK_ROWS))
    changed = {
        b: (
            matrix[b * BLOCK_ROWS : (b + 1) * BLOCK_ROWS],
            tuple(ids[b * BLOCK_ROWS : (b + 1) * BLOCK_ROWS]),
        )
        for b in numbers
    }
    dimension = matrix.shape[1]
    return VectorBlocks(1, "m", dimension, BLOCK_ROWS, numbers, changed)


def _both(
    matrix: np.ndarray, ids: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[AgentMatrix, AgentMatrix]:
    monkeypatch.setattr(vector_cache, "CHUNK_BLOCKS", 2)  # rows span several chunks
    quantised = AgentMatrix(_blocks(matrix, ids))
    monkeypatch.setattr(vector_cache, "QUANTISED", False)
    plain = AgentMatrix(_blocks(matrix, ids))
    monkeypatch.setattr(vector_cache, "QUANTISED", True)
    assert quantised.product is not None and plain.product is None
    return quantised, plain


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 140),
    facts=st.integers(1, 60),
    centroids=st.integers(1, 6),
    spread=st.sampled_from([0.0, 0.001, 0.02, 0.3]),
    freed=st.integers(0, 10),
    limit=st.integers(1, 70),
)
def test_the_int8_pass_answers_what_the_float_product_answers(
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    count: int,
    facts: int,
    centroids: int,
    spread: float,
    freed: int,
    limit: int,
) -> None:
    rng = np.random.default_rng(seed)
    dimension = 24
    centres = rng.standard_normal((centroids, dimension))
    rows = centres[rng.integers(0, centroids, count)] + spread * rng.standard_normal(
        (count, dimension)
    )
    matrix = _unit(rows)
    ids = [f"F{rng.integers(0, facts):03d}" for _ in range(count)]  # several rows a fact
    for gone in rng.integers(0, count, freed).tolist():
        ids[gone] = ""
    if not any(ids):
        ids[0] = "F000"
    quantised, plain = _both(matrix, ids, monkeypatch)
    for query in (matrix[rng.integers(0, count)], _unit(rng.standard_normal((1, dimension)))[0]):
        got = quantised.nearest(query, limit)
        want = plain.nearest(query, limit)
        assert got is not None and want is not None
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)


def test_the_int8_pass_is_taken_and_reads_few_rows_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    matrix = _unit(rng.standard_normal((3000, 48)))
    ids = [f"F{i:05d}" for i in range(3000)]
    quantised, plain = _both(matrix, ids, monkeypatch)
    scored: list[int] = []
    exact = quantised._exact

    def counting(positions: np.ndarray, vector: np.ndarray) -> np.ndarray:
        scored.append(len(positions))
        return exact(positions, vector)

    monkeypatch.setattr(quantised, "_exact", counting)
    query = matrix[42]
    assert quantised.nearest(query, 5) == plain.nearest(query, 5)
    assert quantised._last is None and plain._last is not None  # the int8 pass answered
    assert sum(scored) < 3000 / 4  # most rows were ruled out by the int8 scores alone


def test_the_product_is_exact_integers_and_refuses_nothing_it_is_given() -> None:
    product = int8_product.product_for(24)
    assert product is not None
    rng = np.random.default_rng(3)
    rows = rng.integers(-127, 128, size=(24, 1000), dtype=np.int8)
    for query in (
        rng.integers(-127, 128, size=24, dtype=np.int8),
        np.full(24, 127, dtype=np.int8),
        np.full(24, -127, dtype=np.int8),
    ):
        want = query.astype(np.int64) @ rows.astype(np.int64)
        assert (product.scores(query, rows) == want).all()
    assert product.scores(np.zeros(24, np.int8), np.zeros((24, 0), np.int8)).shape == (0,)


def test_a_zero_query_or_an_empty_copy_answers_as_the_float_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matrix = _unit(np.random.default_rng(5).standard_normal((40, 24)))
    quantised, plain = _both(matrix, [f"F{i:02d}" for i in range(40)], monkeypatch)
    zero = np.zeros(24, dtype=np.float32)
    assert quantised.nearest(zero, 3) == plain.nearest(zero, 3)
    empty, _ = _both(matrix[:1], [""], monkeypatch)
    assert empty.nearest(matrix[0], 3) is None
