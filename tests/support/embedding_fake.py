"""A scripted embedding server for tests: Ollama's ``/api/embed`` and the OpenAI-compatible
``/v1/embeddings`` on one fake, over ``httpx.MockTransport`` or (``EmbeddingOverSocket``)
real HTTP on 127.0.0.1.

Its vectors come from the fixed concept table (:mod:`tests.support.concepts`), so a test
of paraphrase recall checks what the table says and nothing more. Faults are scripted per
call (FIFO) with :meth:`FakeEmbedding.script`:

    with EmbeddingOverSocket() as server:
        server.script(Fault.status(500))
        OllamaEmbedder(server.url, "nomic-embed-text", 2.0)

``models`` maps each model the server has to its dimension (another model is a 404);
``hold``, when set to an unset ``threading.Event``, keeps every answer until it is set
(to act out a fact revised while its embedding is in flight)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.concepts import concept_vector
from tests.support.over_socket import SocketServing
from tests.support.scripted_http import JSON, Answer, RecordedRequest, ScriptedHttp

__all__ = ["EmbeddingOverSocket", "FakeEmbedding", "Fault"]

FaultKind = Literal[
    "ok", "status", "hang", "drop", "wrong_dim", "nan", "inf", "empty", "fewer", "not_json"
]


@dataclass(frozen=True)
class Fault:
    """What to do for one valid embedding request (``ok``: answer truly)."""

    kind: FaultKind = "ok"
    status_code: int = 200
    seconds: float = 0.0  # hang (socket only)
    reset: bool = False  # drop (socket only)
    chunk: int = 1
    delay: float = 0.0

    @classmethod
    def status(cls, code: int) -> Fault:
        return cls("status", status_code=code)

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        return cls("hang", seconds=seconds)


class FakeEmbedding(ScriptedHttp[Fault]):
    def __init__(self, models: dict[str, int] | None = None) -> None:
        super().__init__(fallback=Fault())
        self.models = dict(models or {"nomic-embed-text": 768, "text-embedding-3-small": 768})
        self.hold: threading.Event | None = None
        self.texts: list[str] = []  # every text embedded, in order

    def embed_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.route in ("/api/embed", "/v1/embeddings")]

    def route(self, request: RecordedRequest) -> Answer:
        openai = request.route == "/v1/embeddings"
        if request.route not in ("/api/embed", "/v1/embeddings"):
            return Answer(404, "text/plain", b"404 page not found")
        if request.method != "POST":
            return Answer(405, "text/plain", b"405 method not allowed", allow="POST")
        body = request.json if isinstance(request.json, dict) else None
        texts = body.get("input") if body else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return self._error(openai, 400, "invalid input type")
        model = body.get("model") if body else None
        if model not in self.models:
            return self._error(openai, 404, f'model "{model}" not found, try pulling it first')
        fault = self.next_reply(request)
        if self.hold is not None:
            self.hold.wait(30)
        self.texts.extend(texts)
        dimension = self.models[model]
        rows: list[Any] = [concept_vector(t, dimension) for t in texts]
        kind = fault.kind
        if kind == "status":
            return self._error(openai, fault.status_code, "internal error (scripted)")
        if kind in ("hang", "drop"):
            return Answer(200, JSON, b"", perform=fault)
        if kind == "not_json":
            return Answer(200, JSON, b"<html>proxy error</html>")
        if kind == "wrong_dim":
            rows = [r[: dimension // 2] for r in rows]
        elif kind == "empty":
            rows[0] = []
        elif kind == "fewer":
            rows = rows[:-1]
        text = json.dumps(self._envelope(openai, model, rows), separators=(",", ":"))
        if kind in ("nan", "inf"):
            # JSON has no NaN or infinity; a broken server writes them anyway.
            first = json.dumps(rows[0][0])
            text = text.replace(f"[{first}", "[NaN" if kind == "nan" else "[1e999", 1)
        return Answer(200, JSON, text.encode())

    @staticmethod
    def _envelope(openai: bool, model: str, rows: list[Any]) -> dict[str, Any]:
        if openai:
            return {
                "object": "list",
                "model": model,
                # Reversed on purpose: clients must order by index.
                "data": [
                    {"object": "embedding", "index": i, "embedding": row}
                    for i, row in reversed(list(enumerate(rows)))
                ],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        return {"model": model, "embeddings": rows, "total_duration": 1000, "prompt_eval_count": 1}

    @staticmethod
    def _error(openai: bool, status: int, message: str) -> Answer:
        error: Any = {"message": message, "type": "invalid_request_error"} if openai else message
        return Answer(status, JSON, json.dumps({"error": error}).encode())


class EmbeddingOverSocket(SocketServing, FakeEmbedding):
    pass
