"""What the scripted HTTP fakes (Ollama, Anthropic) share: recorded requests, a script of
replies (queue, then responder, then default), and an ``httpx.MockTransport`` over a
subclass's :meth:`ScriptedHttp.route`, which checks a request as the real service would and
decides the :class:`Answer`. :mod:`tests.support.over_socket` serves the same ``route``
on 127.0.0.1 when a test needs a real connection."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

import httpx

JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


@dataclass
class RecordedRequest:
    """One request as the fake received it. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any | None  # the parsed body, or None when it is empty or not JSON
    scripted: bool = False  # passed the fake's checks and was answered from the script

    @property
    def route(self) -> str:
        return urlsplit(self.path).path

    @property
    def prompt(self) -> str:
        """Ollama's ``prompt`` field, or ``""``."""
        value = self.json.get("prompt") if isinstance(self.json, dict) else None
        return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class Answer:
    """A plain reply, or (``perform``) a connection-level one only a socket can act out."""

    status: int
    content_type: str
    body: bytes
    perform: Any = None  # the socket-only reply
    allow: str = ""  # the Allow header of a 405


R = TypeVar("R")


class ScriptedHttp(Generic[R]):
    """A scripted fake service: subclasses implement :meth:`route`."""

    url = "http://fake.test"
    #: The transport to hand a client: this fake, or None once it listens on a socket.
    transport: httpx.MockTransport | None

    def __init__(self, fallback: R) -> None:
        self.requests: list[RecordedRequest] = []
        #: Exceptions of responders, and socket-only replies asked of the MockTransport.
        self.errors: list[BaseException] = []
        self._queue: deque[R] = deque()
        self._default: R | Callable[[RecordedRequest], R] = fallback
        self._fallback = fallback
        self._responder: Callable[[RecordedRequest], R] | None = None
        self._lock = threading.Lock()
        self.transport = httpx.MockTransport(self._handle)

    def route(self, request: RecordedRequest) -> Answer:
        raise NotImplementedError

    # ------------------------------------------------------------------ scripting

    def script(self, *replies: R) -> None:
        """Queue replies for successive valid calls (FIFO)."""
        with self._lock:
            self._queue.extend(replies)

    def set_default(self, reply: R | Callable[[RecordedRequest], R]) -> None:
        """Used once the queue is empty and no responder is set."""
        self._default = reply

    def set_responder(self, fn: Callable[[RecordedRequest], R]) -> None:
        """Consulted after the queue, before the default."""
        self._responder = fn

    @property
    def pending(self) -> int:
        return len(self._queue)

    def next_reply(self, request: RecordedRequest) -> R:
        request.scripted = True
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        source = self._responder or self._default
        if not callable(source):
            return source
        try:
            return source(request)
        except Exception as exc:
            self.errors.append(exc)
            return self.responder_failed(exc)

    def responder_failed(self, exc: Exception) -> R:
        return self._fallback

    # ------------------------------------------------------------------ serving

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        """Record one request and decide its answer (the socket server calls this too)."""
        try:
            parsed: Any | None = json.loads(body) if body.strip() else None
        except ValueError:
            parsed = None
        request = RecordedRequest(method, path, headers, body, parsed)
        with self._lock:
            self.requests.append(request)
        return self.route(request)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        answer = self.answer(request.method, request.url.raw_path.decode(), headers, request.read())
        if answer.perform is not None:
            self.errors.append(AssertionError(f"{answer.perform!r} needs a socket (over_socket)"))
            return httpx.Response(500, content=b"socket-only reply", request=request)
        extra = {"allow": answer.allow} if answer.allow else {}
        return httpx.Response(
            answer.status,
            headers={"content-type": answer.content_type, **extra},
            content=b"" if request.method == "HEAD" else answer.body,
        )


def go_json(value: Any) -> bytes:
    """Like Go's ``json.Marshal``: compact UTF-8, with ``<``, ``>`` and ``&`` escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.encode("utf-8")
