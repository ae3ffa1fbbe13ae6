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
from contextlib import contextmanager

from tests.support.loopback_proxy import LoopbackProxy, shut

_CLOSED = b""


class DelayingProxy(LoopbackProxy):
    def __init__(
        self,
        upstream: tuple[str, int],
        delay: float,
        *,
        rewrite: tuple[bytes, bytes] | None = None,
    ) -> None:
        if rewrite is not None and len(rewrite[0]) != len(rewrite[1]):
            raise ValueError("a rewrite keeps the length of what it replaces")
        self.delay = delay
        self.rewrite = rewrite
        super().__init__(upstream)

    def relay(self, client: socket.socket, server: socket.socket) -> None:
        chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
        threading.Thread(
            target=self._deliver_up, args=(chunks, server, client), daemon=True
        ).start()
        self._read_up(client, chunks)

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
                shut(server)
                return
            try:
                server.sendall(data)
            except OSError:
                shut(client)
                return


@contextmanager
def delaying_proxy(host: str, port: int, delay: float) -> Iterator[DelayingProxy]:
    proxy = DelayingProxy((host, port), delay)
    try:
        yield proxy
    finally:
        proxy.close()
