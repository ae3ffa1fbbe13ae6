"""Ollama's POST /api/embed: a batch of texts in `input`, `embeddings` back in order."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from graymatter_tui.embedding import validate
from graymatter_tui.embedding.base import EmbedError
from graymatter_tui.embedding.http import Connection, post_json
from graymatter_tui.embedding.sentences import sentences

if TYPE_CHECKING:
    from graymatter_tui.embedding.base import Matrix


class OllamaEmbedder:
    name = "ollama"

    def __init__(
        self,
        url: str,
        model: str,
        timeout: float,
        *,
        dimension: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.dimension = dimension  # the store's, once it has vectors of this model
        self.where = f"Ollama at {self.url}"
        self._connection = Connection(transport)

    def pieces(self, text: str) -> list[str]:
        return sentences(text)  # the server's own window is not known here (ADR 0038)

    def pieces_of(self, texts: list[str]) -> list[list[str]]:
        return [sentences(text) for text in texts]

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Matrix:
        if not texts:
            return validate.vectors(self.where, [], 0, self.dimension)
        # truncate: an over-long text is cut to the model's context rather than refused.
        payload = {"model": self.model, "input": texts, "truncate": True}
        try:
            reply = post_json(
                self._connection,
                f"{self.url}/api/embed",
                payload,
                where=self.where,
                timeout=timeout or self.timeout,
            )
        except EmbedError as exc:
            if " HTTP 404:" in str(exc):
                raise EmbedError(
                    f"{self.where} has no model {self.model!r} (run `ollama pull {self.model}`)"
                ) from None
            raise
        raw = reply.get("embeddings") if isinstance(reply, dict) else None
        return validate.vectors(self.where, raw, len(texts), self.dimension)
