"""A scripted, Ollama-compatible HTTP server for tests.

Real HTTP on 127.0.0.1 (ephemeral port), standard library only. Each ``POST /api/generate``
that passes Ollama's own request validation is answered by the next :class:`Reply`: first from
the FIFO queue filled by :meth:`ScriptedOllama.script`, then from the responder
(:meth:`ScriptedOllama.set_responder`), then from the default (:meth:`ScriptedOllama.set_default`).

The wire format follows a real Ollama server (Go ``net/http`` + gin): compact JSON with Go's
HTML escaping, ``application/json; charset=utf-8``, RFC 3339 nanosecond ``created_at`` in UTC,
chunked ``application/x-ndjson`` when the request does not send ``"stream": false``, and
``404 page not found`` for unknown paths.

Usage::

    with ScriptedOllama() as server:
        server.script(Reply.proposal("merged", ["01J..."]))
        client = httpx.Client(base_url=server.url, timeout=2.0)
        ...
        assert server.generate_requests[0].json["model"] == "llama3.2"
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, cast
from urllib.parse import urlsplit

__all__ = ["RecordedRequest", "Reply", "ScriptedOllama"]

Responder = Callable[["RecordedRequest"], "Reply"]

_JSON = "application/json; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"
_NDJSON = "application/x-ndjson"

# Routes and the methods each accepts; anything else on a known path is 405.
_ROUTES: dict[str, frozenset[str]] = {
    "/": frozenset({"GET", "HEAD"}),
    "/api/version": frozenset({"GET", "HEAD"}),
    "/api/tags": frozenset({"GET", "HEAD"}),
    "/api/generate": frozenset({"POST"}),
}

_STREAM_FRAGMENTS = 4  # how many pieces a streamed response is split into (at most)
# Python json error prefixes -> the phrase Go's encoding/json uses for the same situation.
_GO_DECODE_CONTEXT = (
    ("Expecting value", "looking for beginning of value"),
    ("Expecting property name", "looking for beginning of object key string"),
    ("Expecting ':' delimiter", "after object key"),
    ("Expecting ',' delimiter", "after object key:value pair"),
    ("Extra data", "after top-level value"),
    ("Invalid control character", "in string literal"),
    ("Invalid \\escape", "in string escape code"),
)
_STOP_GRACE = 1.5  # seconds stop() waits for handler threads to finish
_MAX_BODY = 64 * 1024 * 1024  # refuse absurd request bodies rather than read them into memory


@dataclass
class RecordedRequest:
    """One request as the server received it. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any | None  # parsed JSON body, or None when the body is empty or not JSON

    @property
    def route(self) -> str:
        """The path without any query string."""
        return urlsplit(self.path).path

    @property
    def prompt(self) -> str:
        """The ``prompt`` field of a JSON object body, or ``""``."""
        if isinstance(self.json, dict):
            value = self.json.get("prompt")
            if isinstance(value, str):
                return value
        return ""


ReplyKind = Literal[
    "success", "raw", "error", "model_not_found", "hang", "drop", "drop_mid_body", "trickle"
]


@dataclass(frozen=True)
class Reply:
    """What to do for one ``/api/generate`` request. Build with the classmethods."""

    kind: ReplyKind
    response: str = ""
    done_reason: str = "stop"
    status: int = 200
    body: bytes = b""
    content_type: str = _JSON
    message: str = ""
    model: str = ""
    seconds: float = 0.0
    delay: float = 0.0
    chunk: int = 1
    reset: bool = False

    @classmethod
    def proposal(
        cls, summary: str, consumes: list[str], contradictions: list[str] | None = None
    ) -> Reply:
        """200 whose ``response`` is the JSON text of a consolidation proposal.

        ``contradictions=None`` is sent as an empty list; use :meth:`text` with your own
        ``json.dumps`` to omit the key or send other shapes.
        """
        proposal = {
            "summary": summary,
            "consumes": list(consumes),
            "contradictions": list(contradictions or []),
        }
        return cls(kind="success", response=json.dumps(proposal))

    @classmethod
    def text(cls, response: str, *, done_reason: str = "stop") -> Reply:
        """200 with an arbitrary ``response`` string (prose, fenced JSON, truncated JSON...)."""
        return cls(kind="success", response=response, done_reason=done_reason)

    @classmethod
    def raw_body(
        cls, body: bytes, *, status: int = 200, content_type: str = "application/json"
    ) -> Reply:
        """Exactly these bytes as the body (e.g. a non-JSON or malformed envelope)."""
        return cls(kind="raw", body=bytes(body), status=status, content_type=content_type)

    @classmethod
    def error(cls, status: int, message: str) -> Reply:
        """``status`` with ``{"error": message}``, as Ollama reports failures."""
        return cls(kind="error", status=status, message=message)

    @classmethod
    def model_not_found(cls, model: str) -> Reply:
        """404 ``model 'X' not found``; ``model=""`` means the model the request named."""
        return cls(kind="model_not_found", status=404, model=model)

    @classmethod
    def hang(cls, seconds: float) -> Reply:
        """Read the request, send nothing for ``seconds``, then close without a response.

        :meth:`ScriptedOllama.stop` cuts the wait short.
        """
        return cls(kind="hang", seconds=seconds)

    @classmethod
    def drop(cls, *, reset: bool = False) -> Reply:
        """Read the request, then close the connection without sending a byte.

        By default the close is orderly (FIN); ``reset=True`` aborts it with a TCP RST instead.
        """
        return cls(kind="drop", reset=reset)

    @classmethod
    def drop_mid_body(cls) -> Reply:
        """200 headers promising a full envelope, about half of it, then a close."""
        return cls(kind="drop_mid_body", response=json.dumps({"summary": "cut off"}))

    @classmethod
    def trickle(cls, response: str, *, delay: float, chunk: int = 1) -> Reply:
        """200 whose whole body is sent ``chunk`` bytes at a time, ``delay`` seconds apart."""
        if chunk < 1:
            raise ValueError("chunk must be at least 1 byte")
        return cls(kind="trickle", response=response, delay=delay, chunk=chunk)

    @classmethod
    def huge(cls, n_bytes: int) -> Reply:
        """200 with a valid envelope whose ``response`` string is ``n_bytes`` ASCII characters."""
        unit = "The quick brown fox jumps over the lazy dog. "
        text = (unit * (n_bytes // len(unit) + 1))[:n_bytes]
        return cls(kind="success", response=text)


def _go_json(value: Any) -> bytes:
    """Encode like Go's ``json.Marshal``: compact, UTF-8, with ``<``, ``>``, ``&`` escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # Outside strings JSON never contains these characters, so the replacements are safe.
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text.encode("utf-8")


def _created_at() -> str:
    """The current UTC time as Go's RFC3339Nano renders it (trailing zeros trimmed)."""
    ns = time.time_ns()
    seconds, fraction = divmod(ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    digits = f"{fraction:09d}".rstrip("0")
    return f"{stamp}.{digits}Z" if digits else f"{stamp}Z"


def _with_tag(name: str) -> str:
    """``llama3.2`` -> ``llama3.2:latest``; names that already carry a tag are unchanged."""
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def _go_decode_error(err: json.JSONDecodeError) -> str:
    """A Go ``encoding/json``-style message for a body Python could not parse."""
    if err.pos >= len(err.doc):
        return "unexpected EOF"
    char = err.doc[err.pos]
    context = "in JSON value"
    for python_message, go_context in _GO_DECODE_CONTEXT:
        if err.msg.startswith(python_message):
            context = go_context
            break
    quoted = "'\\''" if char == "'" else f"'{char}'"  # Go's quoteChar
    return f"invalid character {quoted} {context}"


def _json_type_name(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null"


def _split(text: str, parts: int) -> list[str]:
    """Split ``text`` into at most ``parts`` non-empty pieces of roughly equal length."""
    if not text:
        return []
    count = min(parts, len(text))
    size, extra = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, owner: ScriptedOllama) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away mid-reply is normal in these tests; anything else is kept
        # for inspection in ScriptedOllama.errors instead of being printed.
        exc = sys.exc_info()[1]
        if exc is not None and not isinstance(exc, ConnectionError | TimeoutError):
            self.owner._note_error(exc)


class _Abort(Exception):
    """Raised inside the handler to stop writing and close the connection."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    # ----------------------------------------------------------------- plumbing

    @property
    def _owner(self) -> ScriptedOllama:
        return cast(_Server, self.server).owner

    def setup(self) -> None:
        super().setup()
        # Like Go's net/http: no Nagle, else header/body writes stall ~40 ms on delayed ACKs.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._owner._track(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().finish()
        self._owner._untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        # Go's net/http sends Date but no Server header.
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_OPTIONS(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length", "0") or "0")
        if length < 0 or length > _MAX_BODY:
            raise _Abort
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        try:
            body = self._read_body()
        except (ValueError, _Abort):
            self._send_bytes(400, _TEXT, b"400 Bad Request")
            self.close_connection = True
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        parsed: Any | None = None
        if body.strip():
            try:
                parsed = json.loads(body)
            except (ValueError, UnicodeDecodeError):
                parsed = None
        request = RecordedRequest(
            method=self.command, path=self.path, headers=headers, body=body, json=parsed
        )
        self._owner._record(request)
        try:
            self._route(request)
        except _Abort:
            self.close_connection = True
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    # ----------------------------------------------------------------- routing

    def _route(self, request: RecordedRequest) -> None:
        owner = self._owner
        route = request.route
        allowed = _ROUTES.get(route)
        if allowed is None:
            self._send_bytes(404, _TEXT, b"404 page not found")
            return
        if request.method not in allowed:
            self._send_bytes(
                405, _TEXT, b"405 method not allowed", extra={"Allow": ", ".join(sorted(allowed))}
            )
            return
        if route == "/":
            self._send_bytes(200, _TEXT, b"Ollama is running")
        elif route == "/api/version":
            self._send_bytes(200, _JSON, _go_json({"version": owner.version}))
        elif route == "/api/tags":
            self._send_bytes(200, _JSON, _go_json({"models": owner._tags()}))
        else:
            self._generate(request)

    def _generate(self, request: RecordedRequest) -> None:
        owner = self._owner
        if not request.body.strip():
            self._send_error(400, "missing request body")
            return
        try:
            data = json.loads(request.body)
        except json.JSONDecodeError as err:
            self._send_error(400, _go_decode_error(err))
            return
        except (ValueError, UnicodeDecodeError):
            self._send_error(400, "invalid character '\ufffd' looking for beginning of value")
            return
        if not isinstance(data, dict):
            kind = _json_type_name(data)
            if kind != "null":
                self._send_error(
                    400, f"json: cannot unmarshal {kind} into Go value of type api.GenerateRequest"
                )
                return
            data = {}
        model = data.get("model")
        model_name = model if isinstance(model, str) else ""
        if not model_name or not owner._knows(model_name):
            self._send_error(404, f"model '{model_name}' not found")
            return
        reply = owner._next_reply(request)
        stream = data.get("stream", True) is not False
        self._perform(reply, request, model_name, stream)

    # ----------------------------------------------------------------- replies

    def _perform(self, reply: Reply, request: RecordedRequest, model: str, stream: bool) -> None:
        stop = self._owner._stop_event
        if reply.kind == "success":
            self._send_generation(model, request, reply.response, reply.done_reason, stream)
        elif reply.kind == "trickle":
            self._send_generation(
                model,
                request,
                reply.response,
                reply.done_reason,
                stream,
                trickle=(reply.chunk, reply.delay),
            )
        elif reply.kind == "raw":
            self._send_bytes(reply.status, reply.content_type, reply.body)
        elif reply.kind == "error":
            self._send_error(reply.status, reply.message)
        elif reply.kind == "model_not_found":
            self._send_error(404, f"model '{reply.model or model}' not found")
        elif reply.kind == "hang":
            stop.wait(reply.seconds)
            self._close_now(reset=False)
        elif reply.kind == "drop":
            self._close_now(reset=reply.reset)
        elif reply.kind == "drop_mid_body":
            body = _go_json(self._envelope(model, request, reply.response, "stop"))
            self.send_response(200)
            self.send_header("Content-Type", _JSON)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self._close_now(reset=False)
        else:  # pragma: no cover - exhaustive over ReplyKind
            raise AssertionError(f"unknown reply kind {reply.kind!r}")

    def _envelope(
        self, model: str, request: RecordedRequest, response: str, done_reason: str
    ) -> dict[str, Any]:
        return {
            "model": model,
            "created_at": _created_at(),
            "response": response,
            "done": True,
            "done_reason": done_reason,
            "context": [1, 2, 3],
            "total_duration": 123456789,
            "load_duration": 1234567,
            "prompt_eval_count": len(request.prompt) // 4,
            "prompt_eval_duration": 1000000,
            "eval_count": 42,
            "eval_duration": 2000000,
        }

    def _send_generation(
        self,
        model: str,
        request: RecordedRequest,
        response: str,
        done_reason: str,
        stream: bool,
        trickle: tuple[int, float] | None = None,
    ) -> None:
        if not stream:
            body = _go_json(self._envelope(model, request, response, done_reason))
            if trickle is None:
                self._send_bytes(200, _JSON, body)
            else:
                self._send_trickled(200, _JSON, body, *trickle, chunked=False)
            return
        lines = [
            _go_json(
                {"model": model, "created_at": _created_at(), "response": piece, "done": False}
            )
            + b"\n"
            for piece in _split(response, _STREAM_FRAGMENTS)
        ]
        lines.append(_go_json(self._envelope(model, request, "", done_reason)) + b"\n")
        if trickle is None:
            self._send_chunked(200, _NDJSON, lines)
        else:
            self._send_trickled(200, _NDJSON, b"".join(lines), *trickle, chunked=True)

    def _send_error(self, status: int, message: str) -> None:
        self._send_bytes(status, _JSON, _go_json({"error": message}))

    def _send_bytes(
        self, status: int, content_type: str, body: bytes, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def _send_chunked(self, status: int, content_type: str, pieces: Iterable[bytes]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in pieces:
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_trickled(
        self,
        status: int,
        content_type: str,
        body: bytes,
        chunk: int,
        delay: float,
        *,
        chunked: bool,
    ) -> None:
        stop = self._owner._stop_event
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        for start in range(0, len(body), chunk):
            if start and stop.wait(delay):
                self._close_now(reset=False)  # server stopping: give up mid-body
                return
            piece = body[start : start + chunk]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _close_now(self, *, reset: bool) -> None:
        """End the connection without (any more of) a response."""
        self.close_connection = True
        if reset:
            with contextlib.suppress(OSError):
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            # The socket's fd is only released once its makefile() reader is closed too.
            with contextlib.suppress(OSError, ValueError):
                self.rfile.close()
            with contextlib.suppress(OSError):
                self.connection.close()
        else:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)


@dataclass
class _State:
    queue: deque[Reply] = field(default_factory=deque)
    default: Reply | Responder = field(
        default_factory=lambda: Reply.error(500, "no scripted reply")
    )
    responder: Responder | None = None


class ScriptedOllama:
    """A real HTTP server on 127.0.0.1 that answers like Ollama, from a script."""

    def __init__(
        self, *, model: str = "llama3.2", version: str = "0.12.0", models: list[str] | None = None
    ) -> None:
        self.model = model
        self.version = version
        self.models: list[str] = list(models) if models is not None else [model]
        self.url = ""
        self.requests: list[RecordedRequest] = []
        #: Unexpected exceptions from handler threads (e.g. a responder that raised).
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._state = _State()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stop_event = threading.Event()
        self._connections: set[socket.socket] = set()
        self._idle = threading.Condition(self._lock)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> ScriptedOllama:
        if self._server is not None:
            raise RuntimeError("ScriptedOllama is already running")
        self._stop_event = threading.Event()
        server = _Server(self)
        host, port = server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"ScriptedOllama:{port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hanging handlers and close every open connection."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = None
        self._thread = None
        self._stop_event.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        # Handler threads are daemons, but wait (briefly) so none outlives stop().
        with self._idle:
            self._idle.wait_for(lambda: not self._connections, timeout=_STOP_GRACE)
        if thread is not None:
            thread.join(timeout=_STOP_GRACE)

    def __enter__(self) -> ScriptedOllama:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------- scripting

    def script(self, *replies: Reply) -> None:
        """Queue replies for successive valid ``/api/generate`` calls (FIFO)."""
        for reply in replies:
            if not isinstance(reply, Reply):
                raise TypeError(f"script() takes Reply objects, not {type(reply).__name__}")
        with self._lock:
            self._state.queue.extend(replies)

    def set_default(self, reply: Reply | Responder) -> None:
        """The reply (or reply factory) used once the queue is empty and no responder is set."""
        with self._lock:
            self._state.default = reply

    def set_responder(self, fn: Responder) -> None:
        """Answer dynamically; consulted after the queue, before the default."""
        with self._lock:
            self._state.responder = fn

    @property
    def open_connections(self) -> int:
        """Connections a handler thread is still serving (0 after a clean :meth:`stop`)."""
        with self._lock:
            return len(self._connections)

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._state.queue)

    @property
    def generate_requests(self) -> list[RecordedRequest]:
        """Only the ``POST /api/generate`` requests, in order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.route == "/api/generate"]

    # ----------------------------------------------------------------- handler hooks

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _note_error(self, exc: BaseException) -> None:
        with self._lock:
            self.errors.append(exc)

    def _track(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def _untrack(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)
            self._idle.notify_all()

    def _knows(self, model: str) -> bool:
        wanted = _with_tag(model)
        return any(_with_tag(name) == wanted for name in self.models)

    def _tags(self) -> list[dict[str, Any]]:
        return [
            {
                "name": _with_tag(name),
                "model": _with_tag(name),
                "modified_at": "2026-11-01T10:00:00.000000Z",
                "size": 2019393189,
                "digest": hashlib.sha256(_with_tag(name).encode("utf-8")).hexdigest(),
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "llama",
                    "families": ["llama"],
                    "parameter_size": "3.2B",
                    "quantization_level": "Q4_K_M",
                },
            }
            for name in self.models
        ]

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._state.queue:
                return self._state.queue.popleft()
            source: Reply | Responder = (
                self._state.responder if self._state.responder is not None else self._state.default
            )
        if isinstance(source, Reply):
            return source
        try:
            reply = source(request)
        except Exception as exc:
            self._note_error(exc)
            return Reply.error(500, f"scripted responder raised {type(exc).__name__}: {exc}")
        if not isinstance(reply, Reply):
            self._note_error(TypeError(f"responder returned {type(reply).__name__}"))
            return Reply.error(500, "scripted responder did not return a Reply")
        return reply
