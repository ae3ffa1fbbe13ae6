"""A scripted Ollama for tests, served through ``httpx.MockTransport``.

Real httpx on both sides (request encoding, response decoding), no socket. The handler checks
each request as Ollama's own routes do (``/``, ``/api/version``, ``/api/tags``,
``/api/generate``; Go's JSON decoding and option types) and answers valid ``/api/generate``
calls from a script: the FIFO queue (:meth:`FakeOllama.script`), then the responder, then the
default. Replies that need a real connection (hang, drop, trickle, huge) are performed by
:class:`tests.support.ollama_socket.OllamaOverSocket`, which serves this same fake on 127.0.0.1.

    fake = FakeOllama()
    fake.script(Reply.proposal("merged", ["01J..."]))
    summariser = OllamaSummariser(fake.url, "llama3.2", 2.0, transport=fake.transport)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.scripted_http import (
    JSON,
    TEXT,
    Answer,
    RecordedRequest,
    ScriptedHttp,
    go_json,
)

__all__ = ["FakeOllama", "RecordedRequest", "Reply"]

NDJSON = "application/x-ndjson"
_ROUTES = {
    "/": ("GET", "HEAD"),
    "/api/version": ("GET", "HEAD"),
    "/api/tags": ("GET", "HEAD"),
    "/api/generate": ("POST",),
}
# Go types of the GenerateRequest fields we send; a value of another JSON type is a 400.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "prompt": (str,),
    "system": (str,),
    "stream": (bool,),
    "think": (bool, str),
    "format": (str, dict),
    "options": (dict,),
    "keep_alive": (str, int, float),
}
# Options Ollama types strictly (a wrong type is a 500); unknown keys are ignored.
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "num_ctx": (int,),
    "num_predict": (int,),
    "seed": (int,),
    "temperature": (int, float),
    "top_p": (int, float),
}
SOCKET_ONLY = frozenset({"hang", "drop", "drop_mid_body", "trickle", "huge"})


ReplyKind = Literal["success", "raw", "error", "hang", "drop", "drop_mid_body", "trickle", "huge"]


@dataclass(frozen=True)
class Reply:
    """What to do for one valid ``/api/generate`` request. Build with the classmethods."""

    kind: ReplyKind
    response: str = ""
    done_reason: str = "stop"
    status: int = 200
    body: bytes = b""
    content_type: str = JSON
    seconds: float = 0.0  # hang
    delay: float = 0.0  # trickle
    chunk: int = 1  # trickle
    reset: bool = False  # drop

    @classmethod
    def proposal(
        cls, summary: str, consumes: list[str], contradictions: list[str] | None = None
    ) -> Reply:
        """200 whose ``response`` is a consolidation proposal as JSON text."""
        body = {"summary": summary, "consumes": consumes, "contradictions": contradictions or []}
        return cls("success", response=json.dumps(body))

    @classmethod
    def text(cls, response: str, *, done_reason: str = "stop") -> Reply:
        """200 with any ``response`` string (prose, fenced or truncated JSON...)."""
        return cls("success", response=response, done_reason=done_reason)

    @classmethod
    def raw_body(cls, body: bytes, *, status: int = 200, content_type: str = JSON) -> Reply:
        """Exactly these bytes as the body (a malformed envelope, HTML from a proxy...)."""
        return cls("raw", body=body, status=status, content_type=content_type)

    @classmethod
    def error(cls, status: int, message: str) -> Reply:
        """``status`` with ``{"error": message}``, as Ollama reports failures."""
        return cls("raw", status=status, body=go_json({"error": message}))

    @classmethod
    def model_not_found(cls, model: str) -> Reply:
        return cls.error(404, f"model '{model}' not found")

    # The rest need a socket: OllamaOverSocket performs them.
    @classmethod
    def hang(cls, seconds: float) -> Reply:
        """Read the request, send nothing for ``seconds`` (or until stop), then close."""
        return cls("hang", seconds=seconds)

    @classmethod
    def drop(cls, *, reset: bool = False) -> Reply:
        """Close without a byte of response: FIN, or RST with ``reset=True``."""
        return cls("drop", reset=reset)

    @classmethod
    def drop_mid_body(cls) -> Reply:
        """Headers promising a whole envelope, half of it, then a close."""
        return cls("drop_mid_body", response=json.dumps({"summary": "cut off"}))

    @classmethod
    def trickle(cls, response: str, *, delay: float, chunk: int = 1) -> Reply:
        """A 200 envelope sent ``chunk`` bytes at a time, ``delay`` seconds apart."""
        return cls("trickle", response=response, delay=delay, chunk=max(1, chunk))

    @classmethod
    def huge(cls, n_bytes: int) -> Reply:
        """A 200 envelope whose ``response`` has ``n_bytes`` characters, streamed in pieces."""
        unit = "The quick brown fox jumps over the lazy dog. "
        return cls("huge", response=(unit * (n_bytes // len(unit) + 1))[:n_bytes])


def _tagged(name: str) -> str:
    """``llama3.2`` -> ``llama3.2:latest``, as Ollama names models."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _go_type(value: Any) -> str:
    names = ((bool, "bool"), (str, "string"), (list, "array"), (dict, "object"))
    return next((name for kind, name in names if isinstance(value, kind)), "number")


def _go_decode_error(body: bytes) -> str:
    """What Go's encoding/json says about a body Python could not parse either."""
    try:
        json.loads(body.decode("utf-8", "replace"))
    except json.JSONDecodeError as err:
        if err.pos >= len(err.doc):
            return "unexpected EOF"
        where = "object key string" if err.msg.startswith("Expecting property") else "value"
        return f"invalid character '{err.doc[err.pos]}' looking for beginning of {where}"
    return "invalid character '\ufffd' looking for beginning of value"


def _error(status: int, message: str) -> Answer:
    return Answer(status, JSON, go_json({"error": message}))


class FakeOllama(ScriptedHttp[Reply]):
    """Ollama's routes and request checks, answered from a script."""

    url = "http://ollama.test"

    def __init__(
        self, *, model: str = "llama3.2", version: str = "0.12.0", models: list[str] | None = None
    ) -> None:
        super().__init__(Reply.error(500, "no scripted reply"))
        self.model = model
        self.version = version
        self.models = list(models) if models is not None else [model]

    def responder_failed(self, exc: Exception) -> Reply:
        return Reply.error(500, f"scripted responder raised {type(exc).__name__}: {exc}")

    @property
    def generate_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if (r.method, r.route) == ("POST", "/api/generate")]

    def route(self, request: RecordedRequest) -> Answer:
        allowed = _ROUTES.get(request.route)
        if allowed is None:
            return Answer(404, TEXT, b"404 page not found")
        if request.method not in allowed:
            return Answer(405, TEXT, b"405 method not allowed", allow=", ".join(allowed))
        if request.route == "/":
            return Answer(200, TEXT, b"Ollama is running")
        if request.route == "/api/version":
            return Answer(200, JSON, go_json({"version": self.version}))
        if request.route == "/api/tags":
            return Answer(200, JSON, go_json({"models": [self._tag(n) for n in self.models]}))
        return self._generate(request)

    def _generate(self, request: RecordedRequest) -> Answer:
        data = request.json
        if not request.body.strip():
            return _error(400, "missing request body")
        if data is None and request.body.strip() != b"null":
            return _error(400, _go_decode_error(request.body))
        if not isinstance(data, dict | None):
            return _error(
                400,
                f"json: cannot unmarshal {_go_type(data)} into Go value of type "
                "api.GenerateRequest",
            )
        data = data or {}
        for name, types in _FIELD_TYPES.items():
            if name in data and data[name] is not None and not isinstance(data[name], types):
                return _error(
                    400,
                    f"json: cannot unmarshal {_go_type(data[name])} into Go struct field "
                    f"GenerateRequest.{name}",
                )
        if isinstance(data.get("format"), str) and data["format"] not in ("", "json"):
            return _error(
                500, f'invalid format: "{data["format"]}"; expected "json" or a valid JSON Schema'
            )
        for name, value in (data.get("options") or {}).items():
            types = _OPTION_TYPES.get(name)
            if types and (isinstance(value, bool) or not isinstance(value, types)):
                return _error(500, f'option "{name}" must be of type {types[0].__name__}')
        model = data.get("model") or ""
        if not model or _tagged(model) not in {_tagged(m) for m in self.models}:
            return _error(404, f"model '{model}' not found")
        reply = self.next_reply(request)
        if reply.kind in SOCKET_ONLY:
            return Answer(200, JSON, self.envelope(model, request, reply.response), perform=reply)
        if reply.kind == "raw":
            return Answer(reply.status, reply.content_type, reply.body)
        if data.get("stream", True) is False:
            return Answer(200, JSON, self.envelope(model, request, reply.response, reply))
        return Answer(200, NDJSON, self._stream(model, request, reply))

    def envelope(
        self, model: str, request: RecordedRequest, response: str, reply: Reply | None = None
    ) -> bytes:
        """The non-streamed ``/api/generate`` answer (Ollama's GenerateResponse)."""
        return go_json(
            {
                "model": model,
                "created_at": "2026-11-30T12:00:00.123456789Z",
                "response": response,
                "done": True,
                "done_reason": reply.done_reason if reply else "stop",
                "context": [1, 2, 3],
                "total_duration": 123456789,
                "load_duration": 1234567,
                "prompt_eval_count": len(request.prompt) // 4,
                "prompt_eval_duration": 1000000,
                "eval_count": 42,
                "eval_duration": 2000000,
            }
        )

    def _stream(self, model: str, request: RecordedRequest, reply: Reply) -> bytes:
        """NDJSON, as Ollama answers a request that did not say ``"stream": false``."""
        text = reply.response
        pieces = [text[i : i + 8] for i in range(0, len(text), 8)]
        stamp = "2026-11-30T12:00:00.123456789Z"
        lines = [
            go_json({"model": model, "created_at": stamp, "response": p, "done": False})
            for p in pieces
        ]
        lines.append(self.envelope(model, request, "", reply))
        return b"\n".join(lines) + b"\n"

    def _tag(self, name: str) -> dict[str, Any]:
        return {
            "name": _tagged(name),
            "model": _tagged(name),
            "modified_at": "2026-11-01T10:00:00.000000Z",
            "size": 2019393189,
            "digest": hashlib.sha256(_tagged(name).encode()).hexdigest(),
            "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B"},
        }
