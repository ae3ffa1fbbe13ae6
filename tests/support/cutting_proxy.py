"""A loopback TCP proxy in front of the test cluster that can cut one connection at the
moment a client sends a given message: the way to lose a real connection exactly while
COMMIT is on the wire, which no server-side kill can time.

`cut_at(marker, forward=...)` arms the proxy once: the next client message holding
`marker` is either forwarded to the server before the client's side is cut (the server
acts on it, the client never hears back: a lost acknowledgement) or dropped with both
sides cut (the server never sees it). Every other byte passes through unchanged.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.loopback_proxy import LoopbackProxy, shut


class CuttingProxy(LoopbackProxy):
    # A forwarded message's answer goes into the void: the server's side stays open
    # (replies drained) so it acts on the message before seeing EOF.
    drain_after_client_gone = True

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._marker: bytes | None = None
        self._forward = False
        self._lock = threading.Lock()
        self.cuts = 0
        super().__init__(upstream)

    def cut_at(self, marker: bytes, *, forward: bool) -> None:
        with self._lock:
            self._marker, self._forward = marker, forward

    def _take_cut(self, data: bytes) -> bool | None:
        """None to pass `data` on; else whether to forward it before cutting."""
        with self._lock:
            if self._marker is None or self._marker not in data:
                return None
            self._marker = None
            self.cuts += 1
            return self._forward

    def relay(self, client: socket.socket, server: socket.socket) -> None:
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                data = b""
            if not data:
                shut(server)
                return
            cut = self._take_cut(data)
            try:
                if cut is None:
                    server.sendall(data)
                    continue
                if cut:
                    server.sendall(data)  # the server acts on it; the client never hears
                    shut(client)
                    return
            except OSError:  # the server side went away first
                shut(client)
                return
            shut(client)
            shut(server)
            return


@contextmanager
def cutting_proxy(host: str, port: int) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy((host, port))
    try:
        yield proxy
    finally:
        proxy.close()
