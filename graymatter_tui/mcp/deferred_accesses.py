"""Recording recall's accesses after the answer has gone.

A search marks what it returned as accessed (count and time), which is a write, and a
durable write costs a disk sync: on this machine ~8 ms, four times the search itself. An
agent waiting for memory should not wait for that bookkeeping. A long-running server
therefore hands the ids to this recorder, which writes them in the background, many
searches per transaction, and writes whatever is left when it closes.

What this gives up: if the server is killed (not stopped) within the gathering interval,
those searches' accesses are not counted. Accesses feed decay's staleness, a slow signal
over hours; they are never a fact's content. ADR 0033.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable

from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.storage import MemoryStore

GATHER_SECONDS = 0.05  # accesses within this long of the first share one transaction


class DeferredAccesses:
    def __init__(self, store: MemoryStore, *, gather_seconds: float = GATHER_SECONDS) -> None:
        self._store = store
        self._gather = gather_seconds
        self._pending: list[str] = []  # one id per access: a fact found twice counts twice
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self.written = 0  # transactions written, for tests and benchmarks
        self._thread = threading.Thread(target=self._run, name="accesses", daemon=True)
        self._thread.start()

    def record(self, fact_ids: Iterable[str]) -> None:
        with self._lock:
            self._pending.extend(fact_ids)
        self._wake.set()

    def close(self) -> None:
        """Write what is pending and stop; later `record` calls write at once."""
        self._closing = True
        self._wake.set()
        self._thread.join(timeout=30)
        self._flush()

    def _run(self) -> None:
        while not self._closing:
            self._wake.wait()
            if self._closing:
                return
            # Let a burst of searches gather, then write them together.
            threading.Event().wait(self._gather)
            self._wake.clear()
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            self._store.touch(batch)
            self.written += 1
        except GraymatterError as exc:  # bookkeeping: say so, never break a search
            print(f"graymatter-tui: could not record accesses: {exc}", file=sys.stderr)
