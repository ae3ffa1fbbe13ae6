"""Any OpenAI-compatible POST /v1/embeddings (OpenAI, llama.cpp, LM Studio, vLLM): `data`
items carry an `index`, and are put back in input order before they are checked. The API
key travels only in a header and is redacted from every message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from graymatter_tui.embedding import validate
from graymatter_tui.embedding.base import EmbedError
from graymatter_tui.embedding.http import Connection, post_json, redact
from graymatter_tui.embedding.sentences import sentences

if TYPE_CHECKING:
    from graymatter_tui.embedding.base import Matrix


def endpoint(base: str) -> str:
    """The embeddings URL for a base given with or without its /v1."""
    base = base.rstrip("/")
    return f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"


def _ordered(where: str, data: Any, count: int) -> Any:
    """The vectors of `data` in input order (the items may come in any order)."""
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise EmbedError(f"{where} sent no list of embeddings")
    if len(data) != count:
        return [item.get("embedding") for item in data]  # validate names the shortfall
    indices = [item.get("index", position) for position, item in enumerate(data)]
    if sorted(i for i in indices if isinstance(i, int)) != list(range(count)):
        raise EmbedError(f"{where} sent embeddings whose indices are not 0…{count - 1}")
    by_index = dict(zip(indices, data, strict=True))
    return [by_index[i].get("embedding") for i in range(count)]


class OpenAIEmbedder:
    name = "openai"

    def __init__(
        self,
        url: str,
        model: str,
        timeout: float,
        api_key: str = "",
        *,
        dimension: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = endpoint(url)
        self.model = model
        self.timeout = timeout
        self.dimension = dimension
        self.where = f"the embeddings server at {self.url}"
        self._key = api_key
        self._connection = Connection(transport)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, url={self.url!r})"

    def pieces(self, text: str) -> list[str]:
        return sentences(text)  # the server's own window is not known here (ADR 0038)

    def pieces_of(self, texts: list[str]) -> list[list[str]]:
        return [sentences(text) for text in texts]

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Matrix:
        if not texts:
            return validate.vectors(self.where, [], 0, self.dimension)
        if not self._key and "api.openai.com" in self.url:
            raise EmbedError("OPENAI_API_KEY is not set; the OpenAI API needs it")
        headers = {"authorization": f"Bearer {self._key}"} if self._key else {}
        payload = {"model": self.model, "input": texts, "encoding_format": "float"}
        try:
            reply = post_json(
                self._connection,
                self.url,
                payload,
                where=self.where,
                timeout=timeout or self.timeout,
                headers=headers,
            )
        except EmbedError as exc:
            raise EmbedError(redact(str(exc), self._key)) from None
        data = reply.get("data") if isinstance(reply, dict) else None
        raw = _ordered(self.where, data, len(texts))
        return validate.vectors(self.where, raw, len(texts), self.dimension)
