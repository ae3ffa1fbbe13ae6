"""A loopback port that refuses connections for as long as the test holds it: bound but
never listening, so the kernel answers every connect with a refusal, and no other process
(another test, another worker) can take the port meanwhile, as it could a port found
free and released."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refusing_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])
