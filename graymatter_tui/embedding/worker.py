"""The embedder: takes a batch of queued facts, calls the server outside any transaction,
and stores the vectors in one transaction only for facts still live with the same text.

A store whose model differs from the configured one is switched first (every live fact
re-queued, old vectors gone: two models are never compared). A batch whose vectors have
another dimension than the store's is refused; the worker then embeds one probe text, and
when the server now answers in that dimension every time, the model changed under the
same name: the store starts over in the new dimension."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from graymatter_tui.core.conflicts import SAME_MEANING
from graymatter_tui.core.progress import Report
from graymatter_tui.embedding.base import DimensionChanged, Embedder
from graymatter_tui.embedding.native_heap import give_back
from graymatter_tui.storage import MemoryStore
from graymatter_tui.storage.conflict_ops import CLOSEST_PER_FACT

PROBE_TEXT = "graymatter dimension probe"
# Rows of new vectors compared by meaning in one walk over an agent's vectors (16 of the
# default batches): at 100k facts one walk costs ~40 ms on LMDB, and on PostgreSQL it
# reads every block of the agent.
PAIR_CHECK_ROWS = 512


@dataclass
class DrainResult:
    stored: int = 0
    skipped: int = 0  # changed or retired while their embedding was in flight
    requeued: int = 0  # by a switch of model or dimension
    backlog: int = 0  # still waiting after the drain
    unreadable: int = 0  # of `stored`: nothing the model can read (only emoji…): no vector
    held: int = 0  # review items the check by meaning held


class Worker:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        batch: int = 32,
        agent: str | None = None,
        check_pairs: bool = True,
        cancelled: Callable[[], bool] = lambda: False,
        pause: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        # Called before it reads the queue and before it stores a batch (and the pair
        # check that may follow): a host's way to have its store work wait for a moment
        # it is not busy (the TUI: a pause in a person's keys, ADR 0084).
        self.pause = pause
        # Asked between the model's answer and the store write: a batch embedded after a
        # stop was asked for is not stored (it stays queued), so a stop waits for no write.
        self.cancelled = cancelled
        self.waiting_on_model = False  # in the model's call, where a stop drops the answer
        self.embedder = embedder
        self.batch = batch
        self.agent = agent
        self.unreadable = 0  # facts given no vector: nothing in them the model can read
        # Whether facts given vectors are compared by meaning with the agent's others.
        self.check_pairs = check_pairs
        self.held = 0  # review items held by that check
        # The store generations its own writes made when nothing else wrote between, and
        # what each changed: "vectors" (a batch stored) or "review" (pairs held by
        # meaning). The TUI reads again only the panes that show those (`own_writes`).
        self.own_write_log: deque[tuple[int, str]] = deque(maxlen=256)
        # Facts given vectors and not compared yet: checked PAIR_CHECK_ROWS rows at a
        # time, or when the queue is empty, so a long import walks the agent's vectors
        # once per PAIR_CHECK_ROWS, not once per batch.
        self._unchecked: list[tuple[list[tuple[str, str, str]], np.ndarray]] = []

    def ensure_model(self) -> int:
        """Switch the store to the configured model if it holds another (or none); the
        number of facts queued by the switch."""
        name, dimension = self.store.embed_model()
        if name != self.embedder.model:
            self.embedder.dimension = None
            return self.store.start_embedding(self.embedder.model)
        self.embedder.dimension = dimension
        return 0

    def step(self) -> tuple[int, int, int]:
        """Embed one batch: (stored, skipped, requeued), in facts. Every piece of every
        fact in the batch (the embedder's `pieces`: windows or sentences, ADR 0038, 0058)
        is embedded in one call; `batch` counts pieces, and a batch holds whole facts only
        (at least one). A fact with no piece the model can read is stored as one zero row,
        which the store takes as "done, no vector" (`unreadable` counts them). EmbedError
        when the embedder fails (nothing is stored; the batch stays queued)."""
        self.pause()
        waiting = self.store.embed_waiting(self.batch, self.agent)
        if not waiting:
            self.flush_pairs()
            return 0, 0, 0
        rows: list[tuple[str, str, str]] = []
        pieces: list[str | None] = []  # None: a zero row (a fact no longer live, or unreadable)
        unreadable = 0
        split = iter(self.embedder.pieces_of([text for _, _, text in waiting if text]))
        for index, (agent, fact_id, text) in enumerate(waiting):
            parts: list[str | None] = list(next(split)) if text else []
            if text and not parts:
                unreadable += 1
            if not parts:
                parts = [None]
            if index and len(pieces) + len(parts) > self.batch:
                break  # the next batch takes it whole
            rows.extend([(agent, fact_id, text)] * len(parts))
            pieces.extend(parts)
        live = [i for i, piece in enumerate(pieces) if piece is not None]
        self.waiting_on_model = True
        try:
            vectors = self.embedder.embed([pieces[i] or "" for i in live])
        except DimensionChanged as exc:
            if self.cancelled():
                return 0, 0, 0
            requeued = self._dimension_switch(exc)
            return 0, 0, requeued
        finally:
            self.waiting_on_model = False
        self.pause()
        if self.cancelled():
            return 0, 0, 0
        dimension = vectors.shape[1] if live else (self.embedder.dimension or 1)
        matrix = np.zeros((len(rows), dimension), dtype=np.float32)
        if live:
            matrix[live] = vectors
        before = self.store.generation()
        stored, skipped = self.store.store_vectors(self.embedder.model, rows, matrix)
        if stored or skipped:
            self._note_own_write(before, "vectors")
        if stored and self.embedder.dimension is None and live:
            self.embedder.dimension = dimension
        if stored:
            self.unreadable += unreadable
            if self.check_pairs and live:
                self._unchecked.append(([rows[i] for i in live], matrix[live]))
                if sum(len(r) for r, _ in self._unchecked) >= PAIR_CHECK_ROWS:
                    self.flush_pairs()
        return stored, skipped, 0

    @property
    def owes_pair_check(self) -> bool:
        """Whether facts were given vectors and not yet compared by meaning."""
        return bool(self._unchecked)

    def _note_own_write(self, before: int, kind: str) -> None:
        """After a write that began at store generation `before`: one more is exactly
        this write, with nothing else's between."""
        after = self.store.generation()
        if after == before + 1:
            self.own_write_log.append((after, kind))

    def own_writes(self, since: int, generation: int) -> frozenset[str] | None:
        """What this worker's writes changed ("vectors", "review") when every write after
        store generation `since` up to `generation` was one of them; None when any was
        not (another process's, or this process's own)."""
        if generation <= since or generation - since > len(self.own_write_log):
            return None
        mine = dict(self.own_write_log)
        kinds = [mine.get(g) for g in range(since + 1, generation + 1)]
        if None in kinds:
            return None
        return frozenset(kind for kind in kinds if kind is not None)

    def flush_pairs(self) -> int:
        """The pair check by meaning (ADR 0068) of the facts given vectors since the last:
        each against the agent's live facts the model finds alike (cosine at least
        SAME_MEANING), one walk over an agent's vectors for all of them; the items held."""
        if not self._unchecked:
            return 0
        rows = [row for part, _ in self._unchecked for row in part]
        matrix = np.concatenate([vectors for _, vectors in self._unchecked])
        self._unchecked = []
        held = self._check_meaning(rows, matrix)
        self.held += held
        return held

    def _check_meaning(self, rows: list[tuple[str, str, str]], matrix: np.ndarray) -> int:
        by_agent: dict[str, list[int]] = {}
        for index, (agent, _, _) in enumerate(rows):
            by_agent.setdefault(agent, []).append(index)
        held = 0
        for agent, indexes in by_agent.items():
            # The closest that `judge_close` judges, and one more: each fact finds itself.
            found = self.store.facts_close_to(
                agent, self.embedder.model, matrix[indexes], SAME_MEANING, CLOSEST_PER_FACT + 1
            )
            if not found:
                continue
            near: dict[str, dict[str, float]] = {}
            for index, close in zip(indexes, found, strict=True):
                fact_id = rows[index][1]
                merged = near.setdefault(fact_id, {})
                for other, cosine in close.items():
                    if other != fact_id and cosine > merged.get(other, -2.0):
                        merged[other] = cosine
            close_pairs = [(fact_id, others) for fact_id, others in near.items() if others]
            if not close_pairs:
                continue
            before = self.store.generation()
            raised = self.store.hold_close_pairs(agent, close_pairs)
            if raised:  # it wrote (with nothing held, it may not have: not noted)
                self._note_own_write(before, "review")
            held += len(raised)
        return held

    def _dimension_switch(self, exc: DimensionChanged) -> int:
        """Probe once with no dimension expected; a consistent new dimension is a switch."""
        expected, self.embedder.dimension = self.embedder.dimension, None
        try:
            probe = self.embedder.embed([PROBE_TEXT])
        finally:
            self.embedder.dimension = expected
        if probe.shape[1] != exc.found:
            raise exc
        requeued = self.store.start_embedding(self.embedder.model, exc.found)
        self.embedder.dimension = exc.found
        return requeued

    def drain(self, progress: Report | None = None) -> DrainResult:
        """Embed until nothing (of `agent`) waits. EmbedError stops it; what was stored
        before stays stored."""
        result = DrainResult(requeued=self.ensure_model())
        total = self.store.embed_backlog(self.agent)
        done = 0
        if progress is not None:
            progress("embedding", 0, total)
        while True:
            stored, skipped, requeued = self.step()
            if requeued:
                result.requeued += requeued
                total = self.store.embed_backlog(self.agent)
                done = 0
            elif stored + skipped == 0:
                break
            result.stored += stored
            result.skipped += skipped
            done += stored + skipped
            if stored:
                give_back()  # the runs' freed buffers (native_heap)
            if progress is not None:
                progress("embedding", min(done, total), total)
            if stored == 0 and skipped and not requeued and self._stuck():
                break
        self.flush_pairs()
        result.backlog = self.store.embed_backlog(self.agent)
        result.unreadable = self.unreadable
        result.held = self.held
        return result

    def _stuck(self) -> bool:
        """A batch that stored nothing leaves the queue unchanged only when another
        process switched the model meanwhile: adopt it and go on, or stop."""
        name, _ = self.store.embed_model()
        return name != self.embedder.model
