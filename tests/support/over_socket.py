"""The scripted fakes on a real socket (127.0.0.1, ephemeral port).

Only for what needs a connection: an Ollama reply that hangs, drops, trickles or is huge, and
a summariser the test cannot hand a transport (the CLI in a subprocess, the TUI building its
own from settings). Every request is checked and answered by the same fake's ``route``.

    with OllamaOverSocket() as server:
        server.script(Reply.hang(30))
        OllamaSummariser(server.url, "llama3.2", 1.0, transport=server.transport)  # None
"""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.support.anthropic_fake import FakeAnthropic
from tests.support.ollama_fake import FakeOllama, Reply
from tests.support.scripted_http import JSON, Answer, ScriptedHttp

__all__ = ["AnthropicOverSocket", "OllamaOverSocket"]

_STOP_GRACE = 1.5  # seconds stop() waits for handler threads
_PIECE = 64 * 1024  # a huge body is written in pieces this size


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, owner: SocketServing) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client leaving mid-reply is what these tests do; anything else is kept.
        exc = sys.exc_info()[1]
        if exc is not None and not isinstance(exc, ConnectionError | TimeoutError):
            self.owner.errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Like Go's net/http: no Nagle, or header and body writes wait on delayed ACKs.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().finish()
        self.server.owner._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle_one_request(self) -> None:
        # One method for every verb: the fake decides what a route accepts.
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline or not self.parse_request():
            self.close_connection = True
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        answer = self.server.owner.answer(self.command, self.path, headers, body)
        try:
            if answer.perform is None:
                self._send(answer)
            else:
                self._perform(answer, answer.perform)
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def _headers(self, status: int, content_type: str, length: int, allow: str = "") -> None:
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        if allow:
            self.send_header("Allow", allow)
        self.end_headers()

    def _send(self, answer: Answer) -> None:
        self._headers(answer.status, answer.content_type, len(answer.body), answer.allow)
        if self.command != "HEAD":
            self.wfile.write(answer.body)
        self.wfile.flush()

    def _perform(self, answer: Answer, reply: Reply) -> None:
        stop = self.server.owner.stopping
        if reply.kind == "hang":
            stop.wait(reply.seconds)
        elif reply.kind == "drop_mid_body":
            self._headers(200, JSON, len(answer.body))
            self.wfile.write(answer.body[: len(answer.body) // 2])
        elif reply.kind in ("trickle", "huge"):
            step, delay = (reply.chunk, reply.delay) if reply.kind == "trickle" else (_PIECE, 0)
            self._headers(200, JSON, len(answer.body))
            for start in range(0, len(answer.body), step):
                if start and delay and stop.wait(delay):
                    break  # stopping: give up mid-body
                self.wfile.write(answer.body[start : start + step])
                self.wfile.flush()
            else:
                return
        self._close(reset=reply.reset)

    def _close(self, *, reset: bool) -> None:
        """End the connection without (the rest of) a response: FIN, or RST."""
        self.close_connection = True
        with contextlib.suppress(OSError, ValueError):
            self.wfile.flush()
            if reset:
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.rfile.close()  # the fd is released only when its reader closes too
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)


class SocketServing(ScriptedHttp[Any]):
    """Mixed in before a fake: it also listens on 127.0.0.1 while entered."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = ""
        self.transport = None  # clients go through the socket
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._idle = threading.Condition()
        self._server: _Server | None = None

    def __enter__(self) -> Self:
        self._server = _Server(self)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening, release hanging replies, close every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.shutdown()
        server.server_close()
        with self._idle:
            for connection in list(self._connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self._idle.wait_for(lambda: not self._connections, timeout=_STOP_GRACE)

    @property
    def open_connections(self) -> int:
        with self._idle:
            return len(self._connections)

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._idle:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)
                self._idle.notify_all()


class OllamaOverSocket(SocketServing, FakeOllama):
    pass


class AnthropicOverSocket(SocketServing, FakeAnthropic):
    pass
