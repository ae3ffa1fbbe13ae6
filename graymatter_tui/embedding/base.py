"""What every embedding client is, and the one error they raise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from graymatter_tui.core.errors import GraymatterError

if TYPE_CHECKING:  # numpy loads with the first vector, not with the settings (`status`)
    import numpy as np
    import numpy.typing as npt

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
    name: str  # "local", "ollama" or "openai"
    dimension: int | None  # the store's, once known: vectors of another are refused

    @property
    def model(self) -> str:
        """The model name the store records for these vectors: what made them."""
        ...

    @property
    def where(self) -> str:
        """The model or server, as messages name it."""
        ...

    def pieces(self, text: str) -> list[str]:
        """The pieces of a fact's text that get a vector each (its similarity is its best
        piece's): the local model's windows, a server's sentences (ADR 0038, 0058). []
        when nothing in it can be embedded: the fact is then found by keyword only."""
        ...

    def pieces_of(self, texts: list[str]) -> list[list[str]]:
        """`pieces` of each text, in order, in one call (a model in another process is
        asked once for a batch, not once a fact)."""
        ...

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Matrix:
        """One unit-length float32 row per text, in order; EmbedError otherwise."""
        ...
