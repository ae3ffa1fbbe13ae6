"""The best facts among scored vector rows, where a fact may own several rows (one per
sentence, ADR 0038): its score is its best row's. Shared by the block search
(`vector_ops.nearest`) and the in-memory copy (`embedding.vector_cache`), so both answer
the same facts with the same scores."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# Rows per fact taken at first: a server's sentences (`embedding.sentences.MAX_PIECES`);
# the local model writes up to 64 windows a fact (ADR 0058), and the search widens then.
ROWS_PER_FACT = 32


def row_cosines(matrix: npt.NDArray[np.float32], vector: npt.NDArray[np.float32]) -> Any:
    """Each row's dot product with `vector`, computed the same way whatever the row's
    place in `matrix` or the matrix's size (numpy's einsum loop, not BLAS: a BLAS product
    gives two identical rows results an ulp apart by where they sit, and ties must go by
    id). Every search scores rows through this, so all answer alike."""
    import numpy as np

    return np.einsum("ij,j->i", matrix, vector)


def best_per_fact(
    scores: npt.NDArray[np.float32], id_at: Callable[[int], str], limit: int
) -> list[tuple[str, float]]:
    """Up to `limit` distinct (fact id, best score) over the finite `scores` (a free row
    scores -inf), best first, ties by id. Takes the top `limit * ROWS_PER_FACT` rows,
    which hold `limit` distinct facts whenever no fact has more rows; when they do not
    (more rows than that per fact), it widens until they do or every row is taken."""
    import numpy as np

    finite = int(np.isfinite(scores).sum())
    if limit <= 0 or finite == 0:
        return []
    take = min(finite, limit * ROWS_PER_FACT)
    while True:
        if take < scores.size:
            positions = np.argpartition(-scores, take - 1)[:take]
            # Every row tied with the last one taken, too: which of them argpartition
            # kept is arbitrary, and ties go by id.
            positions = np.flatnonzero(scores >= scores[positions].min())
        else:
            positions = np.arange(scores.size)
        # Best first, so a fact's first row seen is its best; stop once `limit` facts are
        # found and the next row scores below the last of them (a tie may still come).
        ordered = positions[np.argsort(-scores[positions], kind="stable")]
        best: dict[str, float] = {}
        boundary = -np.inf
        for position in ordered.tolist():
            score = float(scores[position])
            if score == -np.inf or (len(best) >= limit and score < boundary):
                break
            fact_id = id_at(position)
            if fact_id not in best:
                best[fact_id] = score
                if len(best) == limit:
                    boundary = score
        if len(best) >= limit or take >= finite:
            break
        take = min(finite, take * 4)
    found = sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))
    return found[:limit]
