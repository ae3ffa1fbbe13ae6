"""The app's heap: start-up objects kept out of the cycle collector's full passes, full
passes run when the event loop is quiet, and freed memory handed back to the system.

A full (generation 2) collection walks every object the process holds: with Textual's
widgets, styles and modules in memory that is 60–130 ms on the event loop, at random
moments (a tab switch, a key), which is the longest stall a person sees (ADR 0068).
`gc.freeze()` moves what exists once the app has mounted into a permanent generation that
those passes skip; what the app allocates later is still collected as before. Unfrozen when
the app ends, so a process that runs several apps (the tests) collects what each left.

What the app allocates later still needs full passes (Textual's style updates and rendered
lines make reference cycles), and Python starts one wherever an allocation crosses its
threshold: in the middle of a frame, or of a key's handling, the two stalls adding up.
`QuietCollector` turns those automatic passes off while the app runs and makes them itself,
as a callback of their own, at a moment the loop has just been idle (ADR 0077).

The pages of freed memory go back to the system through `core.c_heap`.
"""

from __future__ import annotations

import asyncio
import gc
import time


class StartupHeap:
    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        if not self.frozen:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False


class QuietCollector:
    """Full collections at quiet moments of the running event loop.

    Every `period` s it wakes; a wake less than `slack` s late means nothing else ran just
    before it (no frame, no key, no read applied), and a full pass then stalls only by its
    own length. It runs one when `due` young collections have happened since the last (the
    cadence at which Python itself would consider one), and once `overdue` have, quiet or
    not: a person typing for minutes without a pause still has cyclic garbage freed.
    Automatic full passes are off while it runs; `stop` gives back the thresholds found."""

    # A second's worth of young collections while a person types is 1-3 `due`s.
    NEVER = 1 << 30

    def __init__(
        self,
        *,
        period: float = 0.1,
        slack: float = 0.004,
        due: int = 10,
        overdue: int = 100,
    ) -> None:
        self.period = period
        self.slack = slack
        self.due = due
        self.overdue = overdue
        self.passes = 0  # full passes made (tests read it)
        self.overdue_passes = 0  # of those, made while the loop was busy
        self._thresholds: tuple[int, int, int] | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def hold(self) -> None:
        """Automatic full passes off (from the app's start: one over the heap before the
        freeze is the longest of all); `start` then makes them at quiet moments."""
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
            young, middle, _ = self._thresholds
            gc.set_threshold(young, middle, self.NEVER)

    def start(self) -> None:
        """On the running loop; a second start does nothing."""
        self.hold()
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None

    async def _run(self) -> None:
        while True:
            began = time.perf_counter()
            await asyncio.sleep(self.period)
            late = time.perf_counter() - began - self.period
            pending = gc.get_count()[2]  # young collections since the last full pass
            quiet = late < self.slack
            if pending >= self.overdue or (quiet and pending >= self.due):
                gc.collect(2)
                self.passes += 1
                self.overdue_passes += not quiet
