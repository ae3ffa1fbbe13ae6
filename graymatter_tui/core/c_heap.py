"""The C heap's free pages handed back to the system (glibc's `malloc_trim`).

glibc keeps the pages of freed memory for reuse instead of returning them: a process
stays as large as its largest moment. The TUI asks after dropping its filter's text
index (ADR 0019), and the embedder while it works through a backlog (ADR 0079). Where
the C library has no such call, nothing is done."""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable


def return_free_pages() -> bool:
    """Hand the free pages back; whether the C library was asked (False: no
    `malloc_trim` here)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc; musl has it too, as a no-op
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    found: Callable[[int], int] = trim
    return found
