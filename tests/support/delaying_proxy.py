"""A loopback TCP proxy that makes a real server far away: every chunk a client sends
reaches the server `delay` seconds after it was sent, so each round trip to the server
takes `delay` longer, as over a slow network. It is latency, not a bandwidth limit:
chunks sent close together arrive close together, in order.

The TUI's stall test and `benchmarks/tui_stall_bench.py` put it between the app and the
throwaway PostgreSQL cluster. Replies come back at once; only the way in is delayed.
`rewrite=(old, new)` also replaces bytes the client sends with as many others (a statement
the server should refuse, say), leaving the protocol's framing intact.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_CLOSED = b""


class DelayingProxy:
    def __init__(
        self,
        upstream: tuple[str, int],
        delay: float,
        *,
        rewrite: tuple[bytes, bytes] | None = None,
    ) -> None:
        if rewrite is not None and len(rewrite[0]) != len(rewrite[1]):
            raise ValueError("a rewrite keeps the length of what it replaces")
        self.upstream = upstream
        self.delay = delay
        self.rewrite = rewrite
        self.connections = 0  # accepted so far
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, name="delaying-proxy", daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def url_for(self, url: str) -> str:
        """`url` (a postgresql:// URL naming the upstream's port) through this proxy."""
        host, port = self.upstream
        return url.replace(f"@{host}:{port}/", f"@127.0.0.1:{self.port}/", 1)

    def close(self) -> None:
        with self._lock:
            sockets = [self.listener, *self._sockets]
        for sock in sockets:
            _shut(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                _shut(client)
                continue
            with self._lock:
                self.connections += 1
                self._sockets += [client, server]
            chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
            for target, args in (
                (self._read_up, (client, chunks)),
                (self._deliver_up, (chunks, server, client)),
                (self._pump_down, (server, client)),
            ):
                threading.Thread(target=target, args=args, daemon=True).start()

    def _read_up(
        self, client: socket.socket, chunks: queue.SimpleQueue[tuple[float, bytes]]
    ) -> None:
        """Each chunk from the client, stamped with the moment it may reach the server."""
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                data = _CLOSED
            if self.rewrite is not None:
                data = data.replace(*self.rewrite)
            chunks.put((time.monotonic() + self.delay, data))
            if not data:
                return

    def _deliver_up(
        self,
        chunks: queue.SimpleQueue[tuple[float, bytes]],
        server: socket.socket,
        client: socket.socket,
    ) -> None:
        while True:
            due, data = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                _shut(server)
                return
            try:
                server.sendall(data)
            except OSError:
                _shut(client)
                return

    def _pump_down(self, server: socket.socket, client: socket.socket) -> None:
        while True:
            try:
                data = server.recv(65536)
            except OSError:
                data = _CLOSED
            if not data:
                _shut(client)
                return
            try:
                client.sendall(data)
            except OSError:
                _shut(server)
                return


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


@contextmanager
def delaying_proxy(host: str, port: int, delay: float) -> Iterator[DelayingProxy]:
    proxy = DelayingProxy((host, port), delay)
    try:
        yield proxy
    finally:
        proxy.close()
