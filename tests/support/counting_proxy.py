"""A loopback proxy in front of the test cluster that counts round trips on the wire:
what a statement, a read or a write costs where every round trip is a network's delay."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.loopback_proxy import LoopbackProxy


class CountingProxy(LoopbackProxy):
    """A loopback proxy in front of the cluster that parses what clients send and counts
    round trips: every Sync (an extended-protocol statement, or several in a pipeline)
    and every simple Query waits for the server's answer. `statements` keeps each
    Parse's and Query's text (a prepared statement sends none), `trips` the texts of
    each round trip."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.round_trips = 0
        self.statements: list[str] = []
        self.trips: list[list[str]] = []
        self._pending: list[str] = []
        self._lock = threading.Lock()
        super().__init__(upstream)

    @contextmanager
    def counting(self) -> Iterator[list[int]]:
        """Round trips made inside the block: the list holds one number afterwards."""
        with self._lock:
            start, self.statements, self.trips = self.round_trips, [], []
        counted: list[int] = []
        yield counted
        with self._lock:
            counted.append(self.round_trips - start)

    def relay(self, client: socket.socket, server: socket.socket) -> None:
        buffer = b""
        started = False  # before the startup message, messages have no type byte
        while True:
            try:
                data = client.recv(65536)
                if not data:
                    return
            except OSError:
                return
            buffer += data
            while True:
                head = 4 if not started else 5
                if len(buffer) < head:
                    break
                if not started:
                    (length,) = struct.unpack("!I", buffer[:4])
                    kind, body = b"", buffer[4:length]
                    total = length
                else:
                    kind = buffer[:1]
                    (length,) = struct.unpack("!I", buffer[1:5])
                    body, total = buffer[5 : 1 + length], 1 + length
                if len(buffer) < total:
                    break
                buffer = buffer[total:]
                if not started:
                    code = struct.unpack("!I", body[:4])[0]
                    started = code >> 16 == 3  # a StartupMessage (not an SSL/GSS request)
                    continue
                self._saw(kind, body)
            # Counted before it is sent on: the answer cannot reach the client (and the
            # test read the count) before the round trip that asked for it is counted.
            try:
                server.sendall(data)
            except OSError:
                return

    def _saw(self, kind: bytes, body: bytes) -> None:
        with self._lock:
            text = None
            if kind == b"Q":
                text = body.rstrip(b"\x00").decode(errors="replace")
            elif kind == b"P":  # name \0 query \0 ...
                text = body.split(b"\x00")[1].decode(errors="replace")
            if text is not None:
                self.statements.append(text)
                self._pending.append(text)
            if kind in (b"S", b"Q"):
                self.round_trips += 1
                self.trips.append(self._pending)
                self._pending = []


@contextmanager
def counting_proxy(host: str, port: int) -> Iterator[CountingProxy]:
    proxy = CountingProxy((host, port))
    try:
        yield proxy
    finally:
        proxy.close()
