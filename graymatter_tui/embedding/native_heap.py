"""Freed memory given back to the system while a backlog is embedded (ADR 0079).

onnxruntime allocates each run's buffers with malloc (its arena is off, `local.py`): a
few MB to ~100 MB a batch. glibc raises its mmap threshold each time such a buffer is
freed (up to 32 MB), so later ones come from the heap, and the freed space between live
blocks stays resident: a process embedding a backlog grew by ~3 KB a fact (+60 MB in
two minutes) and kept it. `malloc_trim(0)` returns those pages (~1.4 ms, 4 ms at worst,
in a process that only embeds).

It holds each heap's lock while it walks it, and a thread needing a block meanwhile
waits (in the TUI, with the interpreter's lock held). In the few runs compared,
trimming after every batch gave longer stalls (47-69 ms, against 40-47 without; the
bench is noisy). So a caller trims at most every `INTERVAL` seconds, and the TUI's
embedder only while no key or click came lately: 6 trims of 0.2-3.6 ms in the stall
bench's 20 s."""

from __future__ import annotations

import threading
import time

from graymatter_tui.core.c_heap import return_free_pages

INTERVAL = 2.0  # seconds between two trims of one process at the most

_lock = threading.Lock()
_last = [float("-inf")]


def give_back(*, at_most_every: float = INTERVAL) -> bool:
    """Return the C heap's free pages to the system, unless this process did within
    `at_most_every` seconds; whether it was done (never where the C library has no
    `malloc_trim`)."""
    with _lock:
        now = time.monotonic()
        if now - _last[0] < at_most_every:
            return False
        _last[0] = now
    return return_free_pages()
