"""Embedding pipeline: vector storage at scale (numpy blocks in LMDB vs a usearch HNSW
index vs numpy in memory), embed throughput against the scripted server, and the extra cost
of a write in a store that embeds.

    python benchmarks/embed_bench.py [--facts 100000] [--dim 768] [--queries 100]
        [--skip-usearch] [--throughput 2000] [--write-cost 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import median, new_facts, percentile
from graymatter_tui.store import DATA_FILE, NewFact, Store

AGENT = "bench-agent"


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def _ms(samples: list[float]) -> str:
    return f"p50 {median(samples) * 1000:.2f} ms, p99 {percentile(samples, 99) * 1000:.2f} ms"


def storage(args: argparse.Namespace, root: Path) -> None:
    rng = np.random.default_rng(42)
    n, dim = args.facts, args.dim
    vectors = _unit(rng, n, dim)
    queries = _unit(rng, args.queries, dim)
    exact = [set(np.argsort(-(vectors @ q))[:10].tolist()) for q in queries]
    print(f"## vector storage: {n} facts x {dim} dims, {args.queries} queries, top 10\n")

    with Store.open(root / "blocks", map_size=8 << 30) as store:
        store.put_many(new_facts(AGENT, n))
        before = (root / "blocks" / DATA_FILE).stat().st_size
        store.start_embedding("bench")
        index = {}
        started = time.perf_counter()
        while rows := store.embed_waiting(1000):
            for r in rows:
                index.setdefault(r[1], len(index))
            store.store_vectors("bench", rows, vectors[[index[r[1]] for r in rows]])
        build = time.perf_counter() - started
        size = (root / "blocks" / DATA_FILE).stat().st_size - before
        ids = {fid: pos for fid, pos in index.items()}
        by_pos = {pos: fid for fid, pos in ids.items()}
        store.nearest(AGENT, "bench", queries[0], 10)  # warm the page cache
        times, hits = [], 0
        for q, want in zip(queries, exact, strict=True):
            t = time.perf_counter()
            found = store.nearest(AGENT, "bench", q, 10) or []
            times.append(time.perf_counter() - t)
            hits += len({ids[f] for f, _ in found} & want)
        print(
            f"numpy blocks in LMDB: build {build:.1f} s ({n / build:,.0f} vectors/s), "
            f"+{size / 1e6:.0f} MB on disk, query {_ms(times)}, "
            f"recall@10 {hits / len(exact) / 10:.3f}"
        )
        # One worker batch (32 new facts) after the build: what a write of vectors costs.
        costs = []
        for i in range(20):
            fresh = store.put_many(NewFact(AGENT, f"late fact {i} {j}") for j in range(32))
            rows = store.embed_waiting(64)
            t = time.perf_counter()
            store.store_vectors("bench", rows, _unit(rng, len(rows), dim))
            costs.append(time.perf_counter() - t)
            del fresh
        print(f"numpy blocks in LMDB: a batch of 32 vectors stored in {_ms(costs)}")
        del by_pos

    times = []
    for q in queries:
        t = time.perf_counter()
        scores = vectors @ q
        np.argpartition(-scores, 10)[:10]
        times.append(time.perf_counter() - t)
    print(
        f"numpy in memory (no store, floor): query {_ms(times)}, "
        f"{vectors.nbytes / 1e6:.0f} MB of RAM"
    )

    if args.skip_usearch:
        return
    from usearch.index import Index

    started = time.perf_counter()
    hnsw = Index(ndim=dim, metric="cos", dtype="f32")
    hnsw.add(np.arange(n), vectors)
    build = time.perf_counter() - started
    hnsw.save(str(root / "hnsw.usearch"))
    size = (root / "hnsw.usearch").stat().st_size
    times, hits = [], 0
    for q, want in zip(queries, exact, strict=True):
        t = time.perf_counter()
        found = hnsw.search(q, 10)
        times.append(time.perf_counter() - t)
        hits += len(set(found.keys.tolist()) & want)
    print(
        f"usearch HNSW (f32, cos): build {build:.1f} s ({n / build:,.0f} vectors/s), "
        f"{size / 1e6:.0f} MB on disk, query {_ms(times)}, "
        f"recall@10 {hits / len(exact) / 10:.3f}"
    )
    costs = []
    for i in range(20):
        batch = _unit(rng, 32, dim)
        t = time.perf_counter()
        hnsw.add(np.arange(n + i * 32, n + (i + 1) * 32), batch)
        hnsw.save(str(root / "hnsw.usearch"))  # durable, as the store's commit is
        costs.append(time.perf_counter() - t)
    print(f"usearch HNSW: a batch of 32 vectors added and saved in {_ms(costs)}")


def throughput(args: argparse.Namespace, root: Path) -> None:
    from graymatter_tui.embedding.ollama import OllamaEmbedder
    from graymatter_tui.embedding.worker import Worker
    from tests.support.embedding_fake import EmbeddingOverSocket

    print(
        f"\n## embed throughput: {args.throughput} facts, scripted server over loopback, 768 dims\n"
    )
    with EmbeddingOverSocket() as server, Store.open(root / "tp", map_size=4 << 30) as store:
        store.put_many(new_facts(AGENT, args.throughput))
        for batch in (16, 32, 64):
            store.start_embedding("nomic-embed-text")
            worker = Worker(
                store, OllamaEmbedder(server.url, "nomic-embed-text", 30.0), batch=batch
            )
            started = time.perf_counter()
            worker.drain()
            took = time.perf_counter() - started
            print(
                f"batch {batch}: {args.throughput / took:,.0f} facts/s "
                f"(index build and re-embed run this same loop)"
            )


def write_cost(args: argparse.Namespace, root: Path) -> None:
    print(f"\n## extra cost per write: single `put` over {args.write_cost} writes, 10k facts\n")
    # The two stores take turns, so load from other work falls on both alike.
    with (
        Store.open(root / "plain", map_size=2 << 30) as plain,
        Store.open(root / "queued", map_size=2 << 30) as queued,
    ):
        for store in (plain, queued):
            store.put_many(new_facts(AGENT, 10_000))
        queued.start_embedding("bench")
        times: dict[str, list[float]] = {"never embeds": [], "has a model (queues)": []}
        for i in range(args.write_cost):
            for label, store in (("never embeds", plain), ("has a model (queues)", queued)):
                t = time.perf_counter()
                store.put(AGENT, f"a new fact about deploys number {i}")
                times[label].append(time.perf_counter() - t)
        for label, samples in times.items():
            print(f"{label}: {_ms(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--skip-usearch", action="store_true")
    parser.add_argument("--skip-storage", action="store_true")
    parser.add_argument("--throughput", type=int, default=2000)
    parser.add_argument("--write-cost", type=int, default=300)
    args = parser.parse_args()
    os.environ.pop("GRAYMATTER_EMBED", None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not args.skip_storage:
            storage(args, root)
        if args.throughput:
            throughput(args, root)
        if args.write_cost:
            write_cost(args, root)


if __name__ == "__main__":
    main()
