"""Watching a store for writes from any process (`MemoryStore.watch`), on a thread of the
watch's own, so that whoever asked (the TUI) never waits on the store to learn it moved.

The store's generation moves with every write transaction; a watch calls `moved(g)` once
each time it finds the generation changed, however many writes that took, and `failed`
once when the store cannot be read, then `moved` again (even with the same generation)
once it can. `PollingWatch` reads the generation every `interval` seconds: LMDB's watch,
and the fallback of a backend that can be told of writes (PostgreSQL's LISTEN).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from graymatter_tui.core.errors import GraymatterError, StoreError

log = logging.getLogger(__name__)
WATCH_INTERVAL = 0.5  # seconds between two reads of the generation when polling

Moved = Callable[[int], None]
Failed = Callable[[GraymatterError], None]


def as_store_error(exc: Exception) -> GraymatterError:
    """`exc` as the one-line error a person is shown."""
    if isinstance(exc, GraymatterError):
        return exc
    return StoreError(f"cannot watch the store: {str(exc) or type(exc).__name__}")


class WatchThread(threading.Thread):
    """What every watch shares: the callbacks, said once per change or failure, and the
    stop. A subclass's `watch` runs until `stopping` is set, calling `saw` with every
    generation it reads and `lost` with every failure."""

    mode = "poll"  # how the store is watched now: "poll", or "listen" (told of writes)

    def __init__(self, moved: Moved, failed: Failed, *, since: int, interval: float) -> None:
        super().__init__(name=f"store-watch-{type(self).__name__}", daemon=True)
        self.interval = interval
        self.stopping = threading.Event()
        self._moved = moved
        self._failed = failed
        self._known = since
        self._failure: str | None = None  # the failure said last, until a read succeeds

    # ---- StoreWatch -------------------------------------------------------------------
    def stop(self) -> None:
        """No callback is begun after this returns; the thread ends within `interval`."""
        self.stopping.set()

    @property
    def alive(self) -> bool:
        return self.is_alive()

    # ---- for subclasses -----------------------------------------------------------------
    def saw(self, generation: int) -> None:
        """The generation as just read: `moved` if it changed, or if the last read failed."""
        if generation == self._known and self._failure is None:
            return
        self._known = generation
        self._failure = None
        if not self.stopping.is_set():
            try:
                self._moved(generation)
            except Exception:  # the listener's bug: said in the log, the watch goes on
                log.exception("a store watch's listener failed")

    def lost(self, error: GraymatterError) -> None:
        """The store could not be read: `failed`, unless this failure was just said."""
        message = str(error)
        if message == self._failure:
            return
        self._failure = message
        if not self.stopping.is_set():
            try:
                self._failed(error)
            except Exception:  # the listener's bug: said in the log, the watch goes on
                log.exception("a store watch's listener failed")

    def run(self) -> None:
        try:
            self.watch()
        except Exception as exc:  # never end silently: the listener hears why it stopped
            self.lost(as_store_error(exc))

    def watch(self) -> None:
        raise NotImplementedError


class PollingWatch(WatchThread):
    """Reads `generation()` at once, then every `interval` seconds."""

    def __init__(
        self,
        generation: Callable[[], int],
        moved: Moved,
        failed: Failed,
        *,
        since: int,
        interval: float = WATCH_INTERVAL,
    ) -> None:
        super().__init__(moved, failed, since=since, interval=interval)
        self._generation = generation

    def watch(self) -> None:
        while not self.stopping.is_set():
            try:
                found = self._generation()
            except Exception as exc:
                self.lost(as_store_error(exc))
            else:
                self.saw(found)
            self.stopping.wait(self.interval)
