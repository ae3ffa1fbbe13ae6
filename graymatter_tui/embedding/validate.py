"""Checks every embedding answer passes before anything is stored: as many vectors as
texts, none empty, one dimension (the store's, when it has one), every component a finite
float32, none all zeros. Rows come back normalised so similarity is a dot product."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from graymatter_tui.core.words import counted
from graymatter_tui.embedding.base import DimensionChanged, EmbedError

if TYPE_CHECKING:
    from graymatter_tui.embedding.base import Matrix

_NUMBERS = {int, float}


def vectors(where: str, raw: Any, count: int, dimension: int | None = None) -> Matrix:
    """`raw` (decoded JSON) as a (count, dim) float32 matrix of unit rows, or EmbedError."""
    if not isinstance(raw, list):
        raise EmbedError(f"{where} sent no list of vectors")
    if len(raw) != count:
        sent = f"{counted(len(raw), 'vector')} for {counted(count, 'text')}"
        raise EmbedError(f"{where} sent {sent}; nothing stored")
    if count == 0:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    sizes = set()
    for position, row in enumerate(raw):
        if not isinstance(row, list):
            raise EmbedError(f"{where} sent vector {position} as {type(row).__name__}, not a list")
        if not row:
            raise EmbedError(f"{where} sent an empty vector (text {position}); nothing stored")
        if not set(map(type, row)) <= _NUMBERS:  # map(type): C speed over 768 components
            raise EmbedError(f"{where} sent a vector with a non-number component; nothing stored")
        sizes.add(len(row))
    if len(sizes) > 1:
        found = " and ".join(str(s) for s in sorted(sizes)[:2])
        raise EmbedError(f"{where} sent vectors of different dimensions ({found}); nothing stored")
    size = sizes.pop()
    if dimension is not None and size != dimension:
        raise DimensionChanged(
            f"{where} sent vectors of dimension {size}, but this store's vectors of the "
            f"model have {dimension}; nothing stored",
            size,
        )
    with np.errstate(over="ignore", invalid="ignore"):
        matrix = np.asarray(raw, dtype=np.float64).astype(np.float32)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        position = int(np.argmin(finite))
        raise EmbedError(
            f"{where} sent a vector with NaN or infinite components (text {position}); "
            "nothing stored"
        )
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
    if not (norms > 0).all():
        position = int(np.argmin(norms > 0))
        raise EmbedError(f"{where} sent an all-zero vector (text {position}); nothing stored")
    unit: Matrix = (matrix / norms[:, None]).astype(np.float32)
    return unit
