"""A per-process copy of each agent's vectors as one float32 matrix in RAM, derived from
the store's blocks (the store of record, ADR 0034) and searched exactly (ADR 0045).

One matrix product over a contiguous matrix is several times cheaper than walking the
blocks in the map. The copy is built in a background thread on an agent's first query and
brought up to date before every later query by re-reading only the blocks stamped after the
generation it holds; until it is built (or after a switch of model) the caller searches the
blocks instead, so an answer is never taken from a stale copy."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from graymatter_tui.embedding import int8_product
from graymatter_tui.storage import VectorBlocks, VectorBlockSource
from graymatter_tui.storage.vector_rank import best_per_fact, row_cosines

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


CHUNK_BLOCKS = 64  # blocks per chunk of the copy: 8,192 rows, 25 MB at 768 dims
# Whether the copy keeps an int8 twin for a first pass (ADR 0071); off, every query is one
# float32 product, as before (the tests run both).
QUANTISED = True
# Rows a fact scored exactly at first, to find the floor (widened when they hold fewer
# than the facts asked for): the floor is the same as from many more rows, and each row
# scored costs a gather.
FIRST_TAKE = 4
# What float32 arithmetic may move a cosine by, beyond the int8 rounding's own bound.
FLOAT_SLACK = 1e-4


def _bound(error: Vector, length: Vector, query_length: float, query_error: float) -> Vector:
    """How far each row's true cosine can be from its int8 one: for a row x, its int8
    copy x' and the query q, q', |x.q - x'.q'| <= |x - x'| |q| + |x'| |q - q'|."""
    import numpy as np

    return (error * query_length + length * query_error + FLOAT_SLACK).astype(np.float32)


class AgentMatrix:
    """One agent's vectors of one model: row b * block_rows + r holds row r of block b.
    The rows live in fixed chunks, so growing never copies what is held (at 100k x 768 a
    copy of one matrix would be 307 MB on a query's path); a search is one product per
    chunk, which costs the same as one product over a single matrix."""

    def __init__(self, blocks: VectorBlocks) -> None:
        import numpy as np

        self.model = blocks.model
        self.dimension = blocks.dimension
        self.block_rows = blocks.block_rows
        self.chunk_rows = CHUNK_BLOCKS * blocks.block_rows
        self.generation = -1
        self.rows = 0
        self.chunks: list[Vector] = []
        self.taken = np.zeros(0, dtype=bool)
        self.ids: list[str] = []
        # fact id -> its rows (recall's candidates). Tuples of ints, not lists: the cycle
        # collector stops tracking them, where 100k lists would lengthen every full pass.
        self.rows_of: dict[str, tuple[int, ...]] = {}
        # The last query's scores over every row, for `similarities` right after `nearest`.
        self._last: tuple[bytes, Vector] | None = None
        # The int8 copy for the first pass (ADR 0071): the rows' int8 values as columns
        # of one [dimension, capacity] matrix (the layout onnxruntime's kernel reads fast,
        # in one call), and per row its int8 sum, its scale and its rounding's bounds
        # (`_bound`). Grown by a quarter at a time: a copy of a quarter of the float rows'
        # bytes. No product (onnxruntime cannot make it): float32 only.
        self.product = int8_product.product_for(self.dimension) if QUANTISED else None
        self.int8 = np.zeros((self.dimension, 0), dtype=np.int8)
        self.int8_sums = np.zeros(0, dtype=np.int32)
        self.scale = np.zeros(0, dtype=np.float32)
        self.error = np.zeros(0, dtype=np.float32)  # |row - its int8 copy|
        self.length = np.zeros(0, dtype=np.float32)  # |its int8 copy|
        self.apply(blocks)

    def apply(self, blocks: VectorBlocks) -> None:
        """Bring the copy to `blocks.generation`: write the changed blocks, free the rows of
        blocks the store no longer has."""
        import numpy as np

        size = (max(blocks.blocks) + 1) * self.block_rows if blocks.blocks else 0
        while len(self.chunks) * self.chunk_rows < size:
            self.chunks.append(np.zeros((self.chunk_rows, self.dimension), np.float32))
        room = len(self.chunks) * self.chunk_rows
        if room > len(self.taken):
            more = room - len(self.taken)
            self.taken = np.concatenate([self.taken, np.zeros(more, bool)])
            self.ids.extend([""] * (room - len(self.ids)))
        if self.product is not None and size > self.int8.shape[1]:
            self._grow_int8(size + size // 4)
        self._forget(size, len(self.ids))
        self.rows = size
        self.taken[size:] = False
        present = set(blocks.blocks)
        for block in range(size // self.block_rows):
            start = block * self.block_rows
            if block not in present:
                self._forget(start, start + self.block_rows)
                self.taken[start : start + self.block_rows] = False
                continue
            if block not in blocks.changed:
                continue
            matrix, ids = blocks.changed[block]
            count = len(ids)
            chunk, offset = divmod(start, self.chunk_rows)
            self._forget(start, start + self.block_rows)
            self.chunks[chunk][offset : offset + count] = matrix
            if self.product is not None:
                self._quantise(start, matrix)
            self.ids[start : start + count] = ids
            self.taken[start : start + count] = [bool(i) for i in ids]
            self.taken[start + count : start + self.block_rows] = False
            rows_of = self.rows_of
            for position, fact_id in enumerate(ids, start):
                if fact_id:
                    rows_of[fact_id] = (*rows_of.get(fact_id, ()), position)
        self.generation = blocks.generation
        self._last = None

    def _forget(self, start: int, end: int) -> None:
        """Drop rows start..end from `rows_of` (their ids stay until overwritten)."""
        for position in range(start, min(end, len(self.ids))):
            fact_id = self.ids[position]
            if not fact_id:
                continue
            self.ids[position] = ""
            held = self.rows_of.get(fact_id)
            if held is not None:
                left = tuple(p for p in held if p != position)
                if left:
                    self.rows_of[fact_id] = left
                else:
                    del self.rows_of[fact_id]

    def _grow_int8(self, capacity: int) -> None:
        import numpy as np

        held = self.int8.shape[1]
        grown = np.zeros((self.dimension, capacity), dtype=np.int8)
        grown[:, :held] = self.int8
        self.int8 = grown
        more = capacity - held
        self.int8_sums = np.concatenate([self.int8_sums, np.zeros(more, np.int32)])
        self.scale, self.error, self.length = (
            np.concatenate([a, np.zeros(more, np.float32)])
            for a in (self.scale, self.error, self.length)
        )

    def _quantise(self, start: int, matrix: Vector) -> None:
        """Rows `start`.. as int8: each row scaled so its largest component is 127, with
        what the rounding moved it by."""
        import numpy as np

        count = len(matrix)
        peak = np.abs(matrix).max(axis=1) if count else np.zeros(0, np.float32)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        values = np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8)
        rounded = values.astype(np.float32) * scale[:, None]
        end = start + self.block_rows
        self.int8[:, start : start + count] = values.T
        self.int8[:, start + count : end] = 0
        self.int8_sums[start : start + count] = values.sum(axis=1, dtype=np.int32)
        self.int8_sums[start + count : end] = 0
        self.scale[start : start + count] = scale
        self.error[start : start + count] = np.linalg.norm(matrix - rounded, axis=1)
        self.length[start : start + count] = np.linalg.norm(rounded, axis=1)

    def nearest(self, query: Vector, limit: int) -> list[tuple[str, float]] | None:
        """What `vector_ops.nearest` answers over the same vectors: (id, best cosine over
        the fact's rows) best first, ties by id; None when nothing is held."""
        import numpy as np

        taken = self.taken[: self.rows]
        if limit <= 0 or not taken.any() or query.shape[0] != self.dimension:
            return None
        vector = query.astype(np.float32)
        if self.product is not None:
            found = self._nearest_by_int8(vector, limit, taken)
            if found is not None:
                self._last = None
                return found or None
        scores = np.concatenate([row_cosines(chunk, vector) for chunk in self.chunks])[: self.rows]
        scores[~taken] = -np.inf
        self._last = (vector.tobytes(), scores)
        return best_per_fact(scores, self.ids.__getitem__, limit) or None

    def _nearest_by_int8(
        self, vector: Vector, limit: int, taken: npt.NDArray[np.bool_]
    ) -> list[tuple[str, float]] | None:
        """The same answer as the float32 product, found from the int8 copy (ADR 0071):
        the int8 product ranks every row, a row's true cosine lies within `_bound` of its
        int8 one, so after the best rows are scored exactly (their limit-th fact's score,
        `floor`) only rows whose int8 cosine plus bound reaches `floor` can be in the
        answer, and those are scored exactly too. None for a zero query (the caller takes
        the float32 product)."""
        import numpy as np

        assert self.product is not None
        rows = self.rows
        peak = float(np.abs(vector).max())
        if peak == 0.0:
            return None
        step = peak / 127.0
        values = np.clip(np.rint(vector / step), -127, 127).astype(np.int8)
        rounded = values.astype(np.float32) * step
        dots = self.product.scores(values, self.int8, self.int8_sums)
        approx = dots[:rows].astype(np.float32) * (self.scale[:rows] * step)
        approx[~taken] = -np.inf
        bound = _bound(
            self.error[:rows],
            self.length[:rows],
            float(np.linalg.norm(vector)),
            float(np.linalg.norm(vector - rounded)),
        )
        finite = int(taken.sum())
        take = min(finite, limit * FIRST_TAKE)
        while True:
            first = self._best_rows(approx, take)
            exact = self._exact(first, vector)
            found = self._best_facts(first, exact, limit)
            if len(found) >= limit or take >= finite:
                break
            take = min(finite, take * 4)  # facts with many rows: widen, as best_per_fact does
        if len(found) < limit:
            return found  # every row was scored exactly
        floor = found[-1][1]
        reach = np.flatnonzero(approx + bound >= floor)
        more = np.setdiff1d(reach, first, assume_unique=True)
        if not more.size:
            return found
        positions = np.concatenate([first, more])
        scores = np.concatenate([exact, self._exact(more, vector)])
        return self._best_facts(positions, scores, limit)

    def _best_rows(self, approx: Vector, take: int) -> npt.NDArray[np.intp]:
        """The `take` rows of best int8 cosine (free rows left out)."""
        import numpy as np

        rows = len(approx)
        best = np.argpartition(-approx, take - 1)[:take] if take < rows else np.arange(rows)
        kept: npt.NDArray[np.intp] = best[np.isfinite(approx[best])]
        return kept

    def _best_facts(
        self, positions: npt.NDArray[np.intp], scores: Vector, limit: int
    ) -> list[tuple[str, float]]:
        ids = self.ids
        return best_per_fact(scores, lambda j: ids[int(positions[j])], limit)

    def _exact(self, positions: npt.NDArray[np.intp], vector: Vector) -> Vector:
        """The float32 cosines of the rows at `positions`, as the full product gives them."""
        import numpy as np

        if not positions.size:
            return np.zeros(0, dtype=np.float32)
        chunk_of, offset = np.divmod(positions, self.chunk_rows)
        out = np.empty(positions.size, dtype=np.float32)
        for chunk in np.unique(chunk_of).tolist():
            here = chunk_of == chunk
            out[here] = row_cosines(self.chunks[chunk][offset[here]], vector)
        return out

    def similarities(self, query: Vector, fact_ids: Sequence[str]) -> dict[str, float]:
        """The best row's cosine of each of `fact_ids` held here (what `nearest` scores),
        from the last query's scores when it is the same vector."""
        import numpy as np

        if query.shape[0] != self.dimension:
            return {}
        vector = query.astype(np.float32)
        held = self.rows_of
        wanted = [(fact_id, held[fact_id]) for fact_id in fact_ids if fact_id in held]
        if not wanted:
            return {}
        last = self._last
        if last is not None and last[0] == vector.tobytes():
            scores = last[1]
        else:
            # A query naming a date asks for thousands: scored a chunk at a time.
            positions = np.unique(
                np.fromiter((p for _, rows in wanted for p in rows), dtype=np.int64)
            )
            scores = np.full(self.rows, -np.inf, dtype=np.float32)
            scores[positions] = self._exact(positions, vector)
        # One gather for the first rows (most facts have only one), then the rest.
        firsts = scores[[rows[0] for _, rows in wanted]].tolist()
        found: dict[str, float] = {}
        for (fact_id, rows), first in zip(wanted, firsts, strict=True):
            found[fact_id] = first if len(rows) == 1 else float(scores[list(rows)].max())
        return found


class VectorCache:
    """The matrices of the agents queried in this process, for a long-running process
    (TUI, MCP server); a one-shot command searches the blocks directly."""

    def __init__(
        self, store: VectorBlockSource, on_built: Callable[[], None] | None = None
    ) -> None:
        self.store = store
        # Called once each matrix is built (off the query's path): a server freezes its
        # heap then, so the collector's full passes skip the matrix's 100k ids (ADR 0072).
        self.on_built = on_built
        self._lock = threading.Lock()
        self._agents: dict[str, AgentMatrix] = {}
        self._building: dict[str, threading.Thread] = {}
        # A query that found a build under way: the model it asked for. A build that read
        # nothing (it started before the vectors were written) runs again for it.
        self._asked_again: dict[str, str] = {}

    def nearest(
        self, agent: str, model: str, query: Vector, limit: int
    ) -> list[tuple[str, float]] | None:
        """The exact nearest from the agent's matrix brought up to date, or from the
        store's blocks while the matrix is not built yet."""
        with self._lock:
            held = self._agents.get(agent)
            if held is not None and held.model != model:
                del self._agents[agent]  # another model: its vectors are gone from the store
                held = None
            if held is None:
                self._start_build(agent, model)
            else:
                generation = self.store.generation()
                if generation != held.generation:
                    blocks = self.store.vector_blocks_since(agent, model, held.generation)
                    if blocks is None or blocks.dimension != held.dimension:
                        del self._agents[agent]
                        held = None
                    else:
                        held.apply(blocks)
                if held is not None:
                    return held.nearest(query, limit)
        return self.store.nearest(agent, model, query, limit)

    def similarities(
        self, agent: str, model: str, query: Vector, fact_ids: Sequence[str]
    ) -> dict[str, float]:
        """`MemoryStore.similarities` from the agent's matrix when it is built and current,
        else from the store's blocks."""
        with self._lock:
            held = self._agents.get(agent)
            if (
                held is not None
                and held.model == model
                and held.generation == self.store.generation()
            ):
                return held.similarities(query, fact_ids)
        return self.store.similarities(agent, model, query, fact_ids)

    def ready(self, agent: str) -> bool:
        with self._lock:
            return agent in self._agents

    def wait(self, agent: str, timeout: float | None = None) -> bool:
        """Wait for the builds of `agent`'s matrix under way, and any they start again
        (tests, benchmarks); whether the matrix is built."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                thread = self._building.get(agent)
            left = None if deadline is None else deadline - time.monotonic()
            if thread is None or (left is not None and left <= 0):
                return self.ready(agent)
            thread.join(left)

    def _start_build(self, agent: str, model: str) -> None:
        if agent in self._building:
            self._asked_again[agent] = model
            return
        thread = threading.Thread(
            target=self._build, args=(agent, model), name=f"vector-cache-{agent}", daemon=True
        )
        self._building[agent] = thread
        thread.start()

    def _build(self, agent: str, model: str) -> None:
        try:
            blocks = self.store.vector_blocks_since(agent, model, -1)
            held = None if blocks is None else AgentMatrix(blocks)
        except Exception as exc:  # the blocks keep answering: a cache is never required
            log.debug("vector cache for %s not built: %s", agent, exc)
            held = None
        with self._lock:
            del self._building[agent]
            again = self._asked_again.pop(agent, None)
            if held is not None and held.model == (again or held.model):
                self._agents[agent] = held  # a later generation is applied at the next query
            elif again is not None:
                self._start_build(agent, again)
                held = None
        if held is not None and self.on_built is not None:
            try:
                self.on_built()
            except Exception as exc:  # a hook never costs the cache
                log.debug("after building the vector cache: %s", exc)
