"""The embedder on a daemon thread of a long-running process (the TUI, the MCP server):
writes never wait for it. It takes a batch whenever facts wait, sleeps when none do, and
backs off (1 s, 2 s, 4 s … 60 s) while the server fails, leaving the backlog queued; the
last error is kept for whoever asks, and nothing is shown or raised (ADR 0035). A host
that says when it is quiet (the TUI: no key for a moment) has the embedder's store work
wait for those moments, a bounded time each (ADR 0084)."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.embedding.native_heap import give_back
from graymatter_tui.embedding.settings import EmbedSettings
from graymatter_tui.storage import MemoryStore

if TYPE_CHECKING:  # numpy and httpx load only when embeddings are configured
    from graymatter_tui.embedding.base import Embedder
    from graymatter_tui.embedding.worker import Worker

log = logging.getLogger(__name__)
IDLE_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 60.0
SETTLE_POLL_SECONDS = 0.02
STOP_SECONDS = 5.0  # how long a host's end waits for the embedder's write and pair check
QUIET_WITHIN_SECONDS = 10.0  # the longest the first batch waits for a quiet host
QUIET_POLL_SECONDS = 0.05
PAUSE_WITHIN_SECONDS = 2.0  # the longest each later store step waits for it


class BackgroundEmbedder:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        batch: int = 32,
        idle: float = IDLE_SECONDS,
        max_backoff: float = MAX_BACKOFF_SECONDS,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        # Built on the embedder's own thread: the worker imports numpy (0.1 s), which a
        # TUI's first frame would otherwise wait for.
        self._worker: Worker | None = None
        self.idle = idle
        self.max_backoff = max_backoff
        self.stored = 0
        self.failures = 0  # in a row; 0 once a batch goes through
        self.last_error = ""
        self.busy = False  # the last round found facts waiting
        self.running = False  # past the start delay
        self._rounds: deque[tuple[float, int]] = deque(maxlen=64)  # (when, facts) per batch
        self._delay = 0.0
        self._quiet: Callable[[], bool] | None = None
        self._quiet_within = QUIET_WITHIN_SECONDS
        self._pause_within = PAUSE_WITHIN_SECONDS
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="graymatter-embedder", daemon=True)

    @property
    def worker(self) -> Worker:
        """The worker that takes the batches (built on first use)."""
        if self._worker is None:
            from graymatter_tui.embedding.worker import Worker

            self._worker = Worker(
                self.store,
                self.embedder,
                batch=self.batch,
                cancelled=self._stop.is_set,
                pause=self._pause,
            )
        return self._worker

    @property
    def model(self) -> str:
        """The model it embeds with, as the store will record it (or why it cannot)."""
        try:
            return self.embedder.model
        except GraymatterError as exc:
            return f"{self.embedder.where} (not available: {exc})"

    def own_writes(self, since: int, generation: int) -> frozenset[str] | None:
        """What this embedder's writes changed when every store write after generation
        `since` up to `generation` was one of them (`Worker.own_writes`); None otherwise,
        and before its worker exists (it wrote none)."""
        worker = self._worker
        return None if worker is None else worker.own_writes(since, generation)

    def start(self) -> None:
        self._thread.start()

    def nudge(self) -> None:
        """Look at the queue now rather than after the idle wait."""
        self._wake.set()

    def request_stop(self) -> None:
        """Ask the thread to end, without waiting for it. A batch being embedded is not
        stored (it stays queued); a batch being stored is, and the facts given vectors
        since the last pair check are checked before the thread ends."""
        self._stop.set()
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> bool:
        """`request_stop`, then wait up to `timeout` s; whether the thread has ended (the
        thread is a daemon, so exit never waits for it)."""
        self.request_stop()
        return self.wait(timeout)

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` s for a stopped thread to end; whether it has."""
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def settle(self, timeout: float) -> bool:
        """Wait up to `timeout` s, after `request_stop`, until the thread owes the store
        nothing (`owes_the_store`); whether it does."""
        deadline = time.monotonic() + timeout
        while self.owes_the_store():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._thread.join(min(SETTLE_POLL_SECONDS, left))
        return True

    def owes_the_store(self) -> bool:
        """Whether a stopped thread would still read or write the store: all but one
        state. Waiting for the model's answer with no pair check owed, it touches the
        store no more (the answer is dropped; its batch stays queued), so the store may
        close and the process end under it."""
        if not self._thread.is_alive():
            return False
        worker = self._worker
        if worker is None or not self._stop.is_set():
            return True
        return not (worker.waiting_on_model and not worker.owes_pair_check)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start_later(
        self,
        seconds: float,
        *,
        quiet: Callable[[], bool] | None = None,
        quiet_within: float = QUIET_WITHIN_SECONDS,
        pause_within: float = PAUSE_WITHIN_SECONDS,
    ) -> None:
        """Start, but take the first batch only after `seconds` (the TUI's first paint
        comes before the local model's import and load) and, given `quiet`, once it says
        the host is quiet (or `quiet_within` s later at most): the model's import holds
        the interpreter's lock for about 20 ms, which a key's frame would wait for.
        After that, given `quiet`, each read of the queue and each store of a batch
        waits for it too, `pause_within` s at most, so a host that is never quiet still
        gets its facts embedded, only more slowly."""
        self._delay = seconds
        self._quiet = quiet
        self._quiet_within = quiet_within
        self._pause_within = pause_within
        self._thread.start()

    def _pause(self) -> None:
        """The worker's pause before it reads the queue and before it stores a batch:
        that store work (and the pair check after a write) holds the interpreter's lock
        for a few ms at a time, which a frame drawn meanwhile waits for (ADR 0084)."""
        self._wait_for_quiet(self._pause_within)

    def _wait_for_quiet(self, within: float) -> None:
        """Given `quiet`, wait until it says the host is quiet, `within` s at most, or
        until a stop is asked for."""
        if self._quiet is None:
            return
        deadline = time.monotonic() + within
        while not self._quiet() and time.monotonic() < deadline:
            if self._stop.wait(QUIET_POLL_SECONDS):
                return

    def _run(self) -> None:
        if self._delay and self._stop.wait(self._delay):
            return
        self._wait_for_quiet(self._quiet_within)
        if self._stop.is_set():
            return
        self.running = True
        while not self._stop.is_set():
            wait = self._one_round()
            if self._wake.wait(wait):
                self._wake.clear()
        try:  # the facts embedded since the last pair check, before the process goes
            self.worker.flush_pairs()
        except GraymatterError as exc:  # the store went (closed, unreachable): not checked
            log.info("pair check by meaning not done: %s", exc)
        except Exception:  # never take the host process down
            log.exception("pair check by meaning failed")

    def _one_round(self) -> float:
        """One batch; how long to wait before the next."""
        try:
            self.worker.ensure_model()  # the first round builds the worker, here
            stored, skipped, requeued = self.worker.step()
        except GraymatterError as exc:  # the server failed, or the store refused
            return self._failed(str(exc))
        except Exception as exc:  # never take the host process down
            log.exception("embedder failed")
            return self._failed(f"{type(exc).__name__}: {exc}")
        self.failures = 0
        self.last_error = ""
        self.stored += stored
        self.busy = bool(stored + skipped + requeued)
        if stored:
            self._rounds.append((time.monotonic(), stored))
            if self._quiet is None or self._quiet():  # not while a person types
                give_back()
        return 0.0 if self.busy else self.idle

    def rate(self, window: float = 30.0) -> float:
        """Facts embedded per second over the last `window` seconds (0 when idle)."""
        now = time.monotonic()
        recent = [(at, n) for at, n in self._rounds if now - at <= window]
        if len(recent) < 2:
            return 0.0
        span = recent[-1][0] - recent[0][0]
        return sum(n for _, n in recent[1:]) / span if span > 0 else 0.0

    def describe(self) -> str:
        """What it is doing, on one line (the TUI's Status tab)."""
        done = f"{self.stored:,} embedded since start"
        if self.last_error:
            return f"NOT embedding ({self.failures} failures in a row, retrying): {self.last_error}"
        if not self.running:
            return "starting…"
        if self.busy:
            rate = self.rate()
            return f"embedding · {done}" + (f" · {rate:,.0f} facts/s" if rate else "")
        return f"idle · {done}"

    def _failed(self, message: str) -> float:
        self.failures += 1
        self.last_error = message
        log.info("embedding deferred: %s", message)
        return float(min(self.max_backoff, 2 ** (self.failures - 1)))


def from_env(store: MemoryStore, *, model_process: bool = False) -> BackgroundEmbedder | None:
    """The background embedder GRAYMATTER_EMBED configures for `store`, not started; None
    when embeddings are off or the store cannot be written. A bad setting raises.
    `model_process`: a local model runs in a process of its own (ADR 0083)."""
    from graymatter_tui.embedding.factory import from_settings

    settings = EmbedSettings.from_env()
    embedder = from_settings(settings, model_process=model_process)
    if embedder is None or store.read_only_reason is not None:
        return None
    return BackgroundEmbedder(store, embedder, batch=settings.batch)


@contextmanager
def running(store: MemoryStore) -> Iterator[BackgroundEmbedder | None]:
    """The configured background embedder, running for the duration of the block; at
    its end, the store may be closed (the embedder has settled, or 5 s have passed)."""
    embedder = from_env(store)
    if embedder is not None:
        embedder.start()
    try:
        yield embedder
    finally:
        if embedder is not None:  # what the store is owed, not an answer it would drop
            embedder.request_stop()
            embedder.settle(STOP_SECONDS)
