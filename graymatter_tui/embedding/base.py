"""What every embedding client is, and the one error they raise."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from graymatter_tui.core.errors import GraymatterError

Matrix = npt.NDArray[np.float32]


class EmbedError(GraymatterError):
    """The embedding server could not give usable vectors: nothing is stored. The message
    names the server and what was wrong, on one line."""


class DimensionChanged(EmbedError):
    """The server's vectors have another dimension than the store's for this model: one
    hostile answer, or the model really changed (the worker probes to tell which)."""

    def __init__(self, message: str, found: int) -> None:
        super().__init__(message)
        self.found = found


class Embedder(Protocol):
    name: str  # "ollama" or "openai"
    model: str
    where: str  # the server, as messages name it
    dimension: int | None  # the store's, once known: vectors of another are refused

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Matrix:
        """One unit-length float32 row per text, in order; EmbedError otherwise."""
        ...
