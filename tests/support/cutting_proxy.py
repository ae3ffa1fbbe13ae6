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
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field


@dataclass
class CuttingProxy:
    upstream: tuple[str, int]
    listener: socket.socket = field(init=False)
    _marker: bytes | None = None
    _forward: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    cuts: int = 0
    _sockets: list[socket.socket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def cut_at(self, marker: bytes, *, forward: bool) -> None:
        with self._lock:
            self._marker, self._forward = marker, forward

    def close(self) -> None:
        for sock in [self.listener, *self._sockets]:
            with suppress(OSError):
                sock.close()

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
            self._sockets += [client, server]
            threading.Thread(target=self._pump_up, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump_down, args=(server, client), daemon=True).start()

    def _take_cut(self, data: bytes) -> bool | None:
        """None to pass `data` on; else whether to forward it before cutting."""
        with self._lock:
            if self._marker is None or self._marker not in data:
                return None
            self._marker = None
            self.cuts += 1
            return self._forward

    def _pump_up(self, client: socket.socket, server: socket.socket) -> None:
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                data = b""
            if not data:
                _shut(server)
                return
            cut = self._take_cut(data)
            try:
                if cut is None:
                    server.sendall(data)
                    continue
                if cut:
                    # The server gets the message and answers into the void: its side stays
                    # open (replies drained) so it acts on the message before seeing EOF.
                    server.sendall(data)
                    _shut(client)
                    return
            except OSError:  # the server side went away first
                _shut(client)
                return
            _shut(client)
            _shut(server)
            return

    def _pump_down(self, server: socket.socket, client: socket.socket) -> None:
        while True:
            try:
                data = server.recv(65536)
            except OSError:
                return
            if not data:
                _shut(client)
                return
            with suppress(OSError):
                client.sendall(data)


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


@contextmanager
def cutting_proxy(host: str, port: int) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy((host, port))
    try:
        yield proxy
    finally:
        proxy.close()
