"""The app's heap: start-up objects kept out of the cycle collector's full passes, and
freed memory handed back to the system.

A full (generation 2) collection walks every object the process holds: with Textual's
widgets, styles and modules in memory that is 60–130 ms on the event loop, at random
moments (a tab switch, a key), which is the longest stall a person sees (ADR 0068).
`gc.freeze()` moves what exists once the app has mounted into a permanent generation that
those passes skip; what the app allocates later is still collected as before. Unfrozen when
the app ends, so a process that runs several apps (the tests) collects what each left.

glibc keeps the pages of freed memory for reuse instead of returning them: clearing the
Facts filter at 1M facts freed its text index (~100 MB) and the process stayed that much
larger until it ended. `return_freed_memory` asks for them back (`malloc_trim`); where the
C library has no such call it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import sys
from collections.abc import Callable


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


def return_freed_memory() -> bool:
    """Hand the C heap's free pages back to the system; whether any were returned."""
    trim = _malloc_trim()
    return bool(trim is not None and trim(0))


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
    return trim
