"""Scheduled probe runs performed by a process that is running anyway.

`probe schedule --every 6h` keeps the interval in the store; nothing runs by itself.
A due run is made by whichever comes first: `probe run --due` (cron), or a long-running
process of this program (the MCP server, the TUI) that holds a `DueProbeRuns`, which
asks the store once a minute on a thread of its own. The store hands a due run to one
asker only (`claim_probe_run`), so several servers and a TUI on one store run it once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.recall.probes import run_due
from graymatter_tui.storage import MemoryStore

CHECK_SECONDS = 60.0


class DueProbeRuns:
    """Asks `store` every `check_every` seconds (the first time at once) whether a
    scheduled probe run is due, and runs it. `ran(records)` hears of each run made,
    `failed(error)` of a store error (the next check tries again); both are called on
    this object's thread."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        check_every: float = CHECK_SECONDS,
        ran: Callable[[list[CycleRecord]], None] | None = None,
        failed: Callable[[GraymatterError], None] | None = None,
    ) -> None:
        self._store = store
        self._every = check_every
        self._ran = ran
        self._failed = failed
        self._stop = threading.Event()
        self.checks = 0  # checks made, for tests
        self._thread = threading.Thread(target=self._run, name="probe-schedule", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop checking; a run under way finishes first."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.check()
            self._stop.wait(self._every)

    def check(self) -> list[CycleRecord] | None:
        """One check: the run made, or None (nothing due, or the store failed)."""
        self.checks += 1
        try:
            records = run_due(self._store)
        except GraymatterError as exc:
            if self._failed is not None:
                self._failed(exc)
            return None
        if records is not None and self._ran is not None:
            self._ran(records)
        return records
