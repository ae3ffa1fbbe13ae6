"""A store clock that moves only when a test says so (pass it as `clock_fn`)."""

from __future__ import annotations

from datetime import datetime, timedelta


class ManualClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, hours: float = 0.0, **delta: float) -> datetime:
        self.now += timedelta(hours=hours, **delta)
        return self.now
