"""Running the HTTP app under uvicorn on sockets already listening, stopped by a signal as
a server should be: imported only when serving HTTP (uvicorn is that transport's alone).

uvicorn, once a signal has made it shut down, raises that signal again: SIGTERM would
then end the process before the accesses are written and the store closed, and SIGINT
would end as an interrupted command. Here the signal is only recorded and handed back.
A stream that our stop cut short (a client's open SSE stream) is no error either."""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.server import HANDLED_SIGNALS  # SIGINT and SIGTERM (and Windows' SIGBREAK)

# How long a stop waits for requests still running before it cancels them.
GRACEFUL_SECONDS = 5
CUT_SHORT = "ASGI callable returned without completing response."


class _Stoppable(uvicorn.Server):
    stopped_by: signal.Signals | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopped_by = self.stopped_by or signal.Signals(sig)
        super().handle_exit(sig, frame)

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        before = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


class _QuietStop(logging.Filter):
    def __init__(self, server: _Stoppable) -> None:
        super().__init__()
        self.server = server

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.server.stopped_by is not None and record.msg == CUT_SHORT)


def run(app: Any, listening: list[socket.socket]) -> signal.Signals | None:
    """Serve `app` on `listening` until a signal stops it; the signal (None if none did)."""
    config = uvicorn.Config(
        app,
        # An access log line holds the URL, and a client may have put its token there.
        access_log=False,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    server = _Stoppable(config)
    quiet = _QuietStop(server)
    errors = logging.getLogger("uvicorn.error")
    errors.addFilter(quiet)
    try:
        server.run(sockets=listening)
    finally:
        errors.removeFilter(quiet)
    return server.stopped_by
