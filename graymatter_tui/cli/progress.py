"""A progress bar on stderr for long imports and exports, and for the re-index of a
store upgraded on open: only when stderr is a terminal and the output is not `--json`,
and only once the job has taken a second (`GRAYMATTER_PROGRESS_DELAY` seconds). Nothing
ever goes to stdout."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from graymatter_tui.backends.opening import open_location
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.progress import Progress, Report
from graymatter_tui.storage import MemoryStore

WIDTH = 30


def _delay() -> float:
    raw = os.environ.get("GRAYMATTER_PROGRESS_DELAY", "").strip()
    if not raw:
        return 1.0
    try:
        return max(float(raw), 0.0)
    except ValueError:
        raise InvalidInput(f"GRAYMATTER_PROGRESS_DELAY must be seconds, got {raw!r}") from None


def _draw(phase: str, done: int, total: int) -> None:
    share = min(done / total, 1.0) if total else 1.0
    filled = round(share * WIDTH)
    bar = "█" * filled + "░" * (WIDTH - filled)
    line = f"\r{phase:<10} {bar} {share:4.0%}  {done:,}/{total:,}"
    sys.stderr.write(line + "\x1b[K")
    sys.stderr.flush()


@contextlib.contextmanager
def stderr_progress(as_json: bool) -> Iterator[Report | None]:
    """A reporter that draws the bar, or None when no bar may be shown; the bar's line
    is cleared at the end."""
    if as_json or not sys.stderr.isatty():
        yield None
        return
    progress = Progress(_draw, delay=_delay())
    try:
        yield progress
    finally:
        if progress.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def open_upgrading(
    settings: Settings, *, as_json: bool = False, read_only: bool = False
) -> MemoryStore:
    """Open the store; if this open upgrades an older store, its re-index draws the bar."""
    with stderr_progress(as_json) as bar:
        return open_location(settings.location, read_only=read_only, progress=bar)
