"""Letting go of the pages of the store's memory map that a long read touched (Linux).

Reading every fact's text (the TUI's filter index) touches every page of the facts
table: about 1 GB at 1M facts, all counted in the process's resident size although they
are the kernel's page cache, shared and reclaimable. `madvise(MADV_DONTNEED)` on the
map drops them from this process only: the map is read-only and shared (LMDB without
`writemap`), so nothing is lost, and a later read faults the same bytes back in from
the page cache (ADR 0019).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

MADV_DONTNEED = 4  # Linux


def _madvise() -> Callable[[int, int, int], int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return cast(Callable[[int, int, int], int], function)


_MADVISE = _madvise() if sys.platform == "linux" else None


def release(data_file: Path) -> int:
    """Drop this process's resident pages of every shared, read-only mapping of
    `data_file`; the number of bytes of mappings advised (0 where not supported)."""
    if _MADVISE is None:
        return 0
    target = os.fsencode(os.path.realpath(data_file))
    try:
        with open("/proc/self/maps", "rb") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return 0
    advised = 0
    for line in lines:
        fields = line.split(maxsplit=5)
        # address range, permissions, offset, device, inode, path
        if len(fields) < 6 or fields[5] != target or fields[1][1:2] == b"w":
            continue
        if not fields[1].endswith(b"s"):  # only a shared map reads back what it dropped
            continue
        start, end = (int(part, 16) for part in fields[0].split(b"-"))
        if _MADVISE(start, end - start, MADV_DONTNEED) == 0:
            advised += end - start
    return advised
