"""Progress of long jobs (import, export), for any face to show: the CLI draws a bar on
stderr; a screen could draw a widget. Work reports (phase, done, total) as it goes; a
`Progress` passes that on only once the job has run for `delay` seconds, so a quick job
shows nothing, and then at most every `interval` seconds."""

from __future__ import annotations

import time
from collections.abc import Callable

# (phase, done, total): "reading" 20000 of 100000
Report = Callable[[str, int, int], None]


class Progress:
    def __init__(
        self,
        show: Report,
        *,
        delay: float = 1.0,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._show = show
        self._delay = delay
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last = float("-inf")
        self.shown = False  # whether anything was shown (a face may need to clear it)

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = self._clock()
        if now - self._started < self._delay:
            return
        if now - self._last < self._interval and done < total:
            return
        self._last = now
        self.shown = True
        self._show(phase, done, total)
