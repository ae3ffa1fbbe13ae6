"""What every test proxy in front of the throwaway cluster shares: a listener on a free
loopback port, a connection to the server for each client it accepts, the sockets kept so
`close()` cuts them all, and a way back that passes the server's bytes through unchanged.

A proxy says what happens on the way in by defining `relay(client, server)`, which runs in
its own thread for each connection (the delaying, cutting and counting proxies differ only
there).
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class LoopbackProxy:
    # Whether the server's answers are still read once the client has gone, so the server
    # never sees its side closed before it has acted on what it was sent.
    drain_after_client_gone = False

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.connections = 0  # accepted so far
        self._sockets: list[socket.socket] = []
        self._sockets_lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        name = f"{type(self).__name__}-accept"
        threading.Thread(target=self._accept, name=name, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def url_for(self, url: str) -> str:
        """`url` (a postgresql:// URL naming the upstream's port) through this proxy."""
        host, port = self.upstream
        return url.replace(f"@{host}:{port}/", f"@127.0.0.1:{self.port}/", 1)

    def close(self) -> None:
        with self._sockets_lock:
            sockets = [self.listener, *self._sockets]
        for sock in sockets:
            shut(sock)

    def relay(self, client: socket.socket, server: socket.socket) -> None:
        """Carry what the client sends to the server, until either side closes."""
        raise NotImplementedError

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                shut(client)
                continue
            with self._sockets_lock:
                self.connections += 1
                self._sockets += [client, server]
            threading.Thread(target=self.relay, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pass_down, args=(server, client), daemon=True).start()

    def _pass_down(self, server: socket.socket, client: socket.socket) -> None:
        """The server's answers, to the client as they come; the server closing closes the
        client, and the client closing closes the server (unless it is drained)."""
        while True:
            try:
                data = server.recv(65536)
            except OSError:
                data = b""
            if not data:
                shut(client)
                return
            try:
                client.sendall(data)
            except OSError:
                if not self.drain_after_client_gone:
                    shut(server)
                    return


def shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()
