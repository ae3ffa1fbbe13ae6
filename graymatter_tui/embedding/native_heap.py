"""Freed memory given back to the system while a backlog is embedded (ADR 0079).

onnxruntime allocates each run's buffers with malloc (its arena is off, `local.py`): a
few MB to ~100 MB a batch. glibc raises its mmap threshold each time such a buffer is
freed (up to 32 MB), so later ones come from the heap, and the freed space between live
blocks stays resident: a process embedding a backlog grew by ~3 KB a fact (+60 MB in
two minutes) and kept it. `malloc_trim(0)` returns those pages (~1.4 ms, 4 ms at worst,
in a process that only embeds).

It holds each heap's lock while it walks it, and a thread needing a block meanwhile
waits, in the TUI with the interpreter's lock held: trimming after every batch made the
longest stall 56-69 ms instead of 40-47. So a caller trims at most every
`INTERVAL` seconds, and the TUI's embedder only while no key or click came lately.
Fixing the mmap threshold at 1 MiB instead (every large block its own mapping) kept
memory as low, but its mappings and unmappings lengthened stalls too (45-71 ms)."""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections.abc import Callable
from functools import cache

INTERVAL = 2.0  # seconds between two trims of one process at the most

_lock = threading.Lock()
_last = [float("-inf")]


def give_back(*, at_most_every: float = INTERVAL) -> bool:
    """Return the C heap's free pages to the system, unless this process did within
    `at_most_every` seconds; whether it was done (never where the C library has no
    `malloc_trim`: not glibc)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    with _lock:
        now = time.monotonic()
        if now - _last[0] < at_most_every:
            return False
        _last[0] = now
    trim(0)
    return True


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc's; musl has none
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    found: Callable[[int], int] = trim
    return found
