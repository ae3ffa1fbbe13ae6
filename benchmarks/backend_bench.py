"""LMDB against PostgreSQL, the same operations on the same data in one run (issue 13).

    python benchmarks/backend_bench.py [--facts 100000] [--samples 200] [--pg-url URL]

Without `--pg-url` the run starts a throwaway cluster (tests/support/postgres.py: a temp
dir, a free port, fsync off as in the tests, so commit cost is below a production
server's). Each backend gets one agent's `--facts` facts by `put_many` in chunks of 20k,
then: remember (`put`, one transaction each), recall (`rank` over the keyword index;
facts and queries are recall_bench.py's: a Zipf vocabulary of 2k words and rare ids),
touch of ten ids, the first page of the fact list with the agent summary (what the TUI
reads to paint), decay and selection over every fact, and one applied consolidation of
ten facts; last, the TUI's first paint: from opening the store (a new connection pool for
PostgreSQL) until the app has drawn a frame holding the newest page of facts, and until
the whole id list has arrived. Times are wall clock on this machine; the ratio column
is PostgreSQL / LMDB (the issue's goal: within 5x on each, and the TUI under 1 s to first
paint at 100k).

Then (unless `--no-vectors`) embedding vectors on both (ADR 0058): every live fact gets a
unit vector of `--dimension` components (default 384; drawn around 1,000 random centres,
the same vector for the same text on both backends), written by `store_vectors` in
batches of 2,000; hybrid recall (`rank` with the stored vector signal, each query's vector
given: no embedding server) p50/p99, once over the store's blocks (a one-shot `recall`)
and once over the per-process copy a long-running process keeps (ADR 0045), and that
copy's first query after a write (its refresh: one statement on PostgreSQL). Last, a
migration with the vectors, LMDB -> PostgreSQL -> LMDB (fresh targets), each hop timed,
with the vector rows compared byte for byte. numpy runs on one BLAS thread
(OPENBLAS_NUM_THREADS=1 unless set), as in recall_bench.py.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: one core each, no fight

from benchmarks._common import NOW, median, percentile
from benchmarks.recall_bench import build_items, build_queries
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.core.config import Settings
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.exchange.migration import migrate
from graymatter_tui.recall.ranking import RecallWeights, rank
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import ApplyRequest

AGENT = "bench"
CHUNK = 20_000


def _samples(n: int, fn: Callable[[int], object]) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - started)
    return out


def measure(store: Any, facts: int, samples: int) -> dict[str, float]:
    got: dict[str, float] = {}
    rng = random.Random(11)
    items, words, zipf, rare_ids = build_items(facts, rng)  # recall_bench's Zipf vocabulary
    queries = build_queries(samples, rng, words, zipf, rare_ids)
    started = time.perf_counter()
    for start in range(0, facts, CHUNK):
        store.put_many(items[start : start + CHUNK])
    got["bulk import (s)"] = time.perf_counter() - started
    remember = _samples(samples, lambda i: store.put(AGENT, f"remember {i} deploy port note"))
    got["remember p50 (ms)"] = median(remember) * 1000
    got["remember p99 (ms)"] = percentile(remember, 99) * 1000
    recall = _samples(samples, lambda i: rank(store, AGENT, queries[i], vectors=NO_VECTORS))
    got["recall p50 (ms)"] = median(recall) * 1000
    got["recall p99 (ms)"] = percentile(recall, 99) * 1000
    ids = store.fact_ids(AGENT, limit=1000)
    touch = _samples(samples, lambda i: store.touch(ids[i % 100 : i % 100 + 10]))
    got["touch 10 p50 (ms)"] = median(touch) * 1000
    page = _samples(20, lambda _i: (store.list_facts(AGENT, limit=100), store.agents()))
    got["first page + agents p50 (ms)"] = median(page) * 1000
    started = time.perf_counter()
    store.decay(AGENT, 24.0 * 30)
    got["decay, all facts (s)"] = time.perf_counter() - started
    started = time.perf_counter()
    chosen = store.selection(AGENT, 24.0 * 30, max_batch=10)
    got["selection, all facts (s)"] = time.perf_counter() - started
    batch = [fact for _weight, fact in chosen.batch]
    cycle_id = store.unused_id(store.now())
    request = ApplyRequest(
        cycle_id=cycle_id,
        agent_id=AGENT,
        summary="A summary of ten notes.",
        consume=[f.id for f in batch],
        snapshot={f.id: f.text for f in batch},
    )
    started = time.perf_counter()
    outcome = store.apply_consolidation(request, CycleRecord(cycle_id=cycle_id, agent_id=AGENT))
    got["apply 10 (ms)"] = (time.perf_counter() - started) * 1000
    assert outcome.applied, outcome.reason
    return got


class BenchVectors:
    """The same clustered unit vectors on both backends: one per distinct text, and a
    query vector near one of the centres per query."""

    CENTRES = 1_000

    def __init__(self, texts: list[str], queries: list[str], dimension: int) -> None:
        import numpy as np

        rng = np.random.default_rng(5)
        self.row = {text: i for i, text in enumerate(dict.fromkeys(texts))}
        centres = rng.standard_normal((self.CENTRES, dimension), dtype=np.float32)
        home = rng.integers(0, self.CENTRES, len(self.row))
        matrix = centres[home] + 0.6 * rng.standard_normal(
            (len(self.row), dimension), dtype=np.float32
        )
        self.matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        self.queries = {}
        for query in queries:
            vector = centres[rng.integers(0, self.CENTRES)] + 0.6 * rng.standard_normal(
                dimension, dtype=np.float32
            )
            self.queries[query] = vector / np.linalg.norm(vector)

    def of(self, texts: list[str]) -> Any:
        import numpy as np

        return np.stack([self.vector(t) for t in texts])

    def vector(self, text: str) -> Any:
        import numpy as np

        found = self.row.get(text)
        if found is not None:
            return self.matrix[found]
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        row = rng.standard_normal(self.matrix.shape[1], dtype=np.float32)
        return row / np.linalg.norm(row)


class StoredSignal:
    """Recall's vector signal over the store (`embedding.query.StoreQueryVectors` minus
    the embedding server): the store's blocks, or the per-process copy."""

    def __init__(self, store: Any, vectors: BenchVectors, *, cache: bool) -> None:
        from graymatter_tui.embedding.vector_cache import VectorCache

        self.store = store
        self.vectors = vectors
        self.cache = VectorCache(store) if cache else None
        self.seconds: list[float] = []

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        started = time.perf_counter()
        vector = self.vectors.queries.get(query)
        if vector is None:
            vector = self.vectors.vector(query)
        if self.cache is not None:
            found = self.cache.nearest(agent, "bench", vector, limit)
        else:
            found = self.store.nearest(agent, "bench", vector, limit)
        self.seconds.append(time.perf_counter() - started)
        return found


def embed(store: Any, vectors: BenchVectors) -> None:
    while rows := store.embed_waiting(2000):
        store.store_vectors("bench", rows, vectors.of([text for _, _, text in rows]))


def measure_vectors(store: Any, vectors: BenchVectors, samples: int) -> dict[str, float]:
    """Writing every live fact's vector, then hybrid recall over blocks and the copy."""
    got: dict[str, float] = {}
    started = time.perf_counter()
    store.start_embedding("bench")
    embed(store, vectors)
    got["store vectors, all facts (s)"] = time.perf_counter() - started
    weights = RecallWeights()
    queries = list(vectors.queries)[:samples]
    for label, cache in (("blocks", False), ("cached copy", True)):
        signal = StoredSignal(store, vectors, cache=cache)
        if signal.cache is not None:
            started = time.perf_counter()
            signal.nearest(AGENT, queries[0], 10)
            signal.cache.wait(AGENT)
            got["cached copy, built (s)"] = time.perf_counter() - started
        for query in queries[:3]:  # warm up
            rank(store, AGENT, query, weights=weights, vectors=signal)
        signal.seconds.clear()
        count = samples if cache else max(20, samples // 4)  # the block search is slow
        hybrid = _samples(
            count,
            lambda i, signal=signal: rank(
                store, AGENT, queries[i], weights=weights, vectors=signal
            ),
        )
        got[f"hybrid recall, {label} p50 (ms)"] = median(hybrid) * 1000
        got[f"hybrid recall, {label} p99 (ms)"] = percentile(hybrid, 99) * 1000
        got[f"nearest alone, {label} p50 (ms)"] = median(signal.seconds) * 1000
        if signal.cache is not None:
            refresh = []
            for i in range(20):  # a write, then the first query: the copy refreshes first
                fact = store.put(AGENT, f"a fact written between queries {i}")
                store.store_vectors("bench", [(AGENT, fact.id, fact.text)], vectors.of([fact.text]))
                started = time.perf_counter()
                signal.nearest(AGENT, queries[i], 50)
                refresh.append(time.perf_counter() - started)
            got["cached, first query after a write p50 (ms)"] = median(refresh) * 1000
    return got


def migrate_with_vectors(lmdb_path: Path, pg_url: str, back: Path) -> list[str]:
    """LMDB -> PostgreSQL -> LMDB with the vectors: the report's lines."""
    clock = lambda: NOW  # noqa: E731
    hops = []
    with (
        LmdbStore.open(lmdb_path, read_only=True, clock_fn=clock) as source,
        PgStore.open(pg_url, clock_fn=clock) as middle,
    ):
        started = time.perf_counter()
        there = migrate(source, middle)
        hops.append(("LMDB -> PostgreSQL", there, time.perf_counter() - started))
        original = source.snapshot().vectors
    with (
        PgStore.open(pg_url, read_only=True, clock_fn=clock) as middle,
        LmdbStore.open(back, clock_fn=clock) as last,
    ):
        started = time.perf_counter()
        home = migrate(middle, last)
        hops.append(("PostgreSQL -> LMDB", home, time.perf_counter() - started))
        same = last.snapshot().vectors == original
    vector_bytes = sum(len(value) for _key, value in original.rows)
    copied = there.vectors.copied if there.vectors else 0
    queued = there.vectors.queued if there.vectors else 0
    lines = [
        "",
        f"migrate with vectors: {there.facts} facts, {copied} with vectors "
        f"({vector_bytes / 1e6:.0f} MB of rows), {queued} queued to embed; "
        f"round trip byte-identical: {'yes' if same else 'NO'}",
        "",
        "| hop | total s | read | write | verify | mode |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, report, seconds in hops:
        parts = report.seconds
        mode = report.vectors.mode if report.vectors else "-"
        lines.append(
            f"| {name} | {seconds:.1f} | {parts['read']:.1f} | {parts['write']:.1f} "
            f"| {parts['verify']:.1f} | {mode} |"
        )
    return lines


def tui_paint(open_store: Callable[[], Any], settings: Any) -> dict[str, float]:
    """Seconds from opening the store to the TUI's first frame with facts, and to the
    whole list (the ids arrive from a worker after the first page)."""
    import asyncio

    from graymatter_tui.tui.app import GraymatterApp
    from graymatter_tui.tui.widgets.virtual_list import VirtualList

    async def run() -> dict[str, float]:
        started = time.perf_counter()
        store = open_store()
        app = GraymatterApp(store=store, settings=settings, agent=AGENT)
        out: dict[str, float] = {}
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            facts = app.query_one("#fact-list", VirtualList)
            assert len(facts.source) > 0
            app.screen._compositor.render_update(full=True)  # force a full frame
            out["TUI first paint (s)"] = time.perf_counter() - started
            pane = app.query_one("#facts-pane")
            deadline = time.monotonic() + 300
            while not pane._complete and time.monotonic() < deadline:  # type: ignore[attr-defined]
                await pilot.pause(0.05)
            out["TUI whole list (s)"] = time.perf_counter() - started
            # Another writer (its own connection pool on PostgreSQL, as another host would
            # have): how long until the list shows its fact. The app polls every 0.5 s.
            other = open_store()
            seen = []
            for i in range(5):
                count = len(facts.source)
                wrote = time.perf_counter()
                other.put(AGENT, f"written by another host {i}")
                while len(facts.source) == count and time.perf_counter() - wrote < 10:
                    await pilot.pause(0.01)
                seen.append(time.perf_counter() - wrote)
            out["TUI sees a write, p50 (s)"] = median(seen)
            if other is not store:
                other.close()
        store.close()
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--no-vectors", action="store_true")
    parser.add_argument("--no-tui", action="store_true")
    parser.add_argument("--pg-url", default=None, help="(with vectors: also --pg-migrate-url)")
    parser.add_argument("--pg-migrate-url", default=None)
    args = parser.parse_args()
    clock = lambda: NOW  # noqa: E731 - one fixed time for both backends
    vectors = None
    if not args.no_vectors:
        rng = random.Random(11)
        items, words, zipf, rare_ids = build_items(args.facts, rng)
        queries = build_queries(args.samples, rng, words, zipf, rare_ids)
        texts = [item.text for item in items]
        texts += [f"remember {i} deploy port note" for i in range(args.samples)]
        vectors = BenchVectors(texts, queries, args.dimension)
    with tempfile.TemporaryDirectory() as tmp, _pg_urls(args) as (url, migrate_url):
        path = Path(tmp) / "lmdb"
        with LmdbStore.open(path, clock_fn=clock) as lmdb_store:
            on_lmdb = measure(lmdb_store, args.facts, args.samples)
            if vectors is not None:
                on_lmdb.update(measure_vectors(lmdb_store, vectors, args.samples))
        if not args.no_tui:
            # Once untimed: the process's first app pays Textual's start-up, not the backend.
            settings = Settings.from_env(data_dir=path)
            tui_paint(lambda: LmdbStore.open(path, clock_fn=clock), settings)
            on_lmdb.update(tui_paint(lambda: LmdbStore.open(path, clock_fn=clock), settings))
        with PgStore.open(url, clock_fn=clock) as pg_store:
            on_pg = measure(pg_store, args.facts, args.samples)
            if vectors is not None:
                on_pg.update(measure_vectors(pg_store, vectors, args.samples))
        if not args.no_tui:
            on_pg.update(
                tui_paint(lambda: PgStore.open(url, clock_fn=clock), Settings.from_env(store=url))
            )
        moved = []
        if vectors is not None and migrate_url is not None:
            moved = migrate_with_vectors(path, migrate_url, Path(tmp) / "back")
    print(f"{args.facts} facts, {args.samples} samples, vectors of {args.dimension} dimensions")
    print(f"| {'operation':<42} | {'LMDB':>10} | {'PostgreSQL':>10} | ratio |")
    print(f"|{'-' * 44}|{'-' * 12}|{'-' * 12}|-------|")
    for name, lmdb_value in on_lmdb.items():
        pg_value = on_pg[name]
        ratio = pg_value / lmdb_value if lmdb_value else float("inf")
        print(f"| {name:<42} | {lmdb_value:>10.3f} | {pg_value:>10.3f} | {ratio:>5.1f} |")
    for line in moved:
        print(line)


@contextmanager
def _pg_urls(args: argparse.Namespace) -> Iterator[tuple[str, str | None]]:
    """The database to measure and a fresh one to migrate into: given, or two databases
    of one throwaway cluster (tests/support/postgres.py)."""
    if args.pg_url:
        yield args.pg_url, args.pg_migrate_url
        return
    from tests.support.postgres import throwaway_cluster

    with throwaway_cluster() as cluster:
        yield (
            cluster.url(cluster.new_database("bench")),
            cluster.url(cluster.new_database("bench_migrate")),
        )


if __name__ == "__main__":
    main()
