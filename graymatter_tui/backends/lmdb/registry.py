"""The process registry: one open store per directory per process.

LMDB must not open the same files twice in one process (its locks are per process), so
a second `Store.open` of a directory returns the store already open there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar, cast

from graymatter_tui.core.errors import StoreError


class Registered(Protocol):
    @property
    def closed(self) -> bool: ...
    @property
    def pid(self) -> int: ...
    @property
    def absent(self) -> bool: ...


S = TypeVar("S", bound=Registered)

_open: dict[str, Registered] = {}
_lock = threading.Lock()


def open_once(directory: Path, opener: Callable[[], S]) -> S:
    """The store open at `directory` in this process, or a new one from `opener`
    (registered unless it is an empty view of a directory with no store)."""
    key = os.path.realpath(directory)
    with _lock:
        existing = _open.get(key)
        if existing is not None and not existing.closed:
            if existing.pid == os.getpid():
                return cast(S, existing)
            # LMDB environments cannot cross fork(), and py-lmdb refuses to open the
            # same files again in a process that inherited one.
            raise StoreError(
                f"the store at {directory} was opened before this process was forked; "
                "open it in a fresh process instead (multiprocessing 'spawn')"
            )
        opened = opener()
        if not opened.absent:
            _open[key] = opened
        return opened


def forget(directory: Path, opened: Registered) -> None:
    """Drop `opened` from the registry (it is being closed)."""
    with _lock:
        key = os.path.realpath(directory)
        if _open.get(key) is opened:
            del _open[key]
