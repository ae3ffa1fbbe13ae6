"""A loop-lag probe: a coroutine that sleeps a few milliseconds in a loop on the running
event loop and records how late each wake is. A late wake is a stall, time in which the
loop handled nothing else (no key, no frame, no timer): what a person feels as a frozen
terminal. `tests/tui/test_never_waits.py` and `benchmarks/tui_stall_bench.py` use it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

TICK = 0.005


@dataclass
class LagProbe:
    tick: float = TICK
    lags: list[float] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(self.tick)
            self.lags.append(max(time.perf_counter() - started - self.tick, 0.0))

    def take(self) -> list[float]:
        """The lags recorded since the last take."""
        taken, self.lags = self.lags, []
        return taken

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


def summary(lags: list[float]) -> dict[str, float]:
    """Wakes, the longest stall and the 99th percentile (ms), wakes 50 and 100 ms late."""
    if not lags:
        return {"wakes": 0, "max_ms": 0.0, "p99_ms": 0.0, "over_50ms": 0, "over_100ms": 0}
    ordered = sorted(lags)
    return {
        "wakes": len(lags),
        "max_ms": ordered[-1] * 1000,
        "p99_ms": ordered[max(int(len(ordered) * 0.99) - 1, 0)] * 1000,
        "over_50ms": sum(lag >= 0.05 for lag in lags),
        "over_100ms": sum(lag >= 0.1 for lag in lags),
    }
