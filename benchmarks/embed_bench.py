"""Embedding pipeline: vector storage at scale (numpy blocks in LMDB vs a usearch HNSW
index vs numpy in memory), embed throughput against the scripted server, and the extra cost
of a write in a store that embeds. `--search` compares, on the same vectors, the block
search, the per-process cache (ADR 0045) and usearch HNSW built in one batch, on uniform
and clustered vectors (run it with OPENBLAS_NUM_THREADS=1).

    python benchmarks/embed_bench.py [--facts 100000] [--dim 768] [--queries 100]
        [--skip-usearch] [--throughput 2000] [--write-cost 300]
    OPENBLAS_NUM_THREADS=1 python benchmarks/embed_bench.py --search [--hnsw-dtypes f16]
        --skip-storage --throughput 0 --write-cost 0

The embedded model (GRAYMATTER_EMBED=local, ADR 0058): import and load time and memory
(each in a fresh process), the sha256 check cold and cached, facts/s through the worker
for short and long facts, query-embedding latency, 1 against 2 intra-op threads, the cost
of a CLI write with the local model configured, and a bulk import of N facts followed by
the embedder draining the whole backlog:

    python benchmarks/embed_bench.py --local [--drain 100000] --skip-storage \
        --throughput 0 --write-cost 0
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

from benchmarks._common import NOW, fact_texts, median, new_facts, percentile
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.files import DATA_FILE
from graymatter_tui.storage import NewFact

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

    with LmdbStore.open(root / "blocks", map_size=8 << 30) as store:
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


def _clustered(rng: np.random.Generator, n: int, dim: int, centres: int) -> np.ndarray:
    """Unit vectors around `centres` random unit centroids (per-dimension noise 0.02, so
    a member's cosine to its centroid is about 0.87): closer to real embeddings, whose
    neighbours crowd together, than uniform vectors, where every pair is nearly orthogonal."""
    centroids = _unit(rng, centres, dim)
    rows = centroids[rng.integers(0, centres, n)]
    rows = rows + rng.standard_normal((n, dim), dtype=np.float32) * np.float32(0.02)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _timed(fn: object, queries: np.ndarray) -> tuple[list[float], list[float], list[object]]:
    walls, cpus, answers = [], [], []
    for q in queries:
        t, c = time.perf_counter(), time.thread_time()
        answers.append(fn(q))  # type: ignore[operator]
        cpus.append(time.thread_time() - c)
        walls.append(time.perf_counter() - t)
    return walls, cpus, answers


def _row(label: str, walls: list[float], cpus: list[float], recall: float, extra: str) -> None:
    print(
        f"| {label} | {median(walls) * 1000:.1f} / {percentile(walls, 99) * 1000:.1f} "
        f"| {median(cpus) * 1000:.1f} / {percentile(cpus, 99) * 1000:.1f} "
        f"| {recall:.3f} | {extra} |"
    )


def search(args: argparse.Namespace, root: Path) -> None:
    """Block search vs the per-process cache vs usearch HNSW, one vector set at a time."""
    from graymatter_tui.embedding.vector_cache import VectorCache

    n, dim, k = args.facts, args.dim, 10
    rng = np.random.default_rng(11)
    sets = {
        "uniform": _unit(rng, n, dim),
        f"clustered ({args.centres} centroids)": _clustered(rng, n, dim, args.centres),
    }
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"## vector search: {n} x {dim}, top {k}, OPENBLAS_NUM_THREADS={threads}\n")
    for number, (name, vectors) in enumerate(sets.items()):
        picked = rng.choice(n, args.queries, replace=False)
        noisy = vectors[picked] + rng.standard_normal((args.queries, dim), np.float32) * 0.01
        kinds = {
            "noisy copies": noisy / np.linalg.norm(noisy, axis=1, keepdims=True),
            "fresh random": _unit(rng, args.queries, dim),
        }
        print(f"### {name}\n")
        with LmdbStore.open(root / f"search-{number}", map_size=8 << 30) as store:
            facts = store.put_many(new_facts(AGENT, n))
            position = {fact.id: i for i, fact in enumerate(facts)}
            store.start_embedding("bench")
            while rows := store.embed_waiting(2000):
                store.store_vectors("bench", rows, vectors[[position[r[1]] for r in rows]])
            cache = VectorCache(store)
            t = time.perf_counter()
            cache.nearest(AGENT, "bench", kinds["noisy copies"][0], k)
            cache.wait(AGENT)
            cache_build = time.perf_counter() - t
            for kind, queries in kinds.items():
                exact = [set(np.argpartition(-(vectors @ q), k)[:k].tolist()) for q in queries]

                def recall(found: list[set[int]], exact: list[set[int]] = exact) -> float:
                    return (
                        sum(len(f & e) for f, e in zip(found, exact, strict=True)) / k / len(exact)
                    )

                def ids(answers: list[object], at: dict[str, int] = position) -> list[set[int]]:
                    return [{at[i] for i, _ in a or []} for a in answers]  # type: ignore[attr-defined]

                print(f"{kind} ({args.queries} queries)\n")
                print("| search | wall ms | CPU ms | recall@10 | notes |\n|---|---:|---:|---:|---|")
                store.nearest(AGENT, "bench", queries[0], k)  # warm the page cache
                w, c, a = _timed(lambda q: store.nearest(AGENT, "bench", q, k), queries)
                _row("(a) blocks in LMDB", w, c, recall(ids(a)), "store of record")
                w, c, a = _timed(lambda q, c=cache: c.nearest(AGENT, "bench", q, k), queries)
                _row(
                    "(b) cached f32 matrix",
                    w,
                    c,
                    recall(ids(a)),
                    f"built in {cache_build:.1f} s, {n * dim * 4 / 1e6:.0f} MB RAM",
                )
                w, c, _ = _timed(lambda q, m=vectors: np.argpartition(-(m @ q), k)[:k], queries)
                _row("numpy matvec alone (floor of b)", w, c, 1.0, "")
            # What keeping the cache current costs: the first query after a batch of 32.
            costs = []
            for i in range(10):
                late = store.put_many(NewFact(AGENT, f"late fact {i} {j}") for j in range(32))
                rows = store.embed_waiting(64)
                store.store_vectors("bench", rows, _unit(rng, len(rows), dim))
                t = time.perf_counter()
                cache.nearest(AGENT, "bench", kinds["noisy copies"][0], k)
                costs.append(time.perf_counter() - t)
                del late
            print(
                f"\n(b) first query after 32 vectors were stored (refresh + search): {_ms(costs)}\n"
            )
        if args.skip_usearch:
            continue
        from usearch.index import Index

        for dtype in args.hnsw_dtypes.split(","):
            t, c = time.perf_counter(), time.process_time()
            hnsw = Index(ndim=dim, metric="ip", dtype=dtype, connectivity=16, expansion_add=128)
            hnsw.add(np.arange(n), vectors, threads=2)
            build, build_cpu = time.perf_counter() - t, time.process_time() - c
            print(
                f"usearch {dtype}: one batched add of {n} (threads=2) in {build:.0f} s wall, "
                f"{build_cpu:.0f} s CPU ({n / build:,.0f} vectors/s), "
                f"{hnsw.memory_usage / 1e6:.0f} MB RAM\n"
            )
            print("| search | wall ms | CPU ms | recall@10 | notes |\n|---|---:|---:|---:|---|")
            for kind, queries in kinds.items():
                exact = [set(np.argpartition(-(vectors @ q), k)[:k].tolist()) for q in queries]
                for expansion in (64, 128, 256):
                    hnsw.expansion_search = expansion
                    w, c, a = _timed(lambda q, h=hnsw: h.search(q, k).keys.tolist(), queries)
                    found = [set(x) for x in a]  # type: ignore[call-overload]
                    hits = sum(len(f & e) for f, e in zip(found, exact, strict=True))
                    _row(
                        f"(c) HNSW {dtype} ef={expansion}, {kind}", w, c, hits / k / len(exact), ""
                    )
            print()
            del hnsw


def throughput(args: argparse.Namespace, root: Path) -> None:
    from graymatter_tui.embedding.ollama import OllamaEmbedder
    from graymatter_tui.embedding.worker import Worker
    from tests.support.embedding_fake import EmbeddingOverSocket

    print(
        f"\n## embed throughput: {args.throughput} facts, scripted server over loopback, 768 dims\n"
    )
    with EmbeddingOverSocket() as server, LmdbStore.open(root / "tp", map_size=4 << 30) as store:
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
        LmdbStore.open(root / "plain", map_size=2 << 30) as plain,
        LmdbStore.open(root / "queued", map_size=2 << 30) as queued,
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


LOCAL_SHORT = 400  # facts of each kind for throughput
LOCAL_QUERIES = 200


def _fresh(code: str, env: dict[str, str] | None = None) -> str:
    """Run `code` in a fresh interpreter (nothing imported or loaded yet); its stdout."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
        cwd=Path(__file__).resolve().parents[1],
    )
    return done.stdout.strip()


LOAD_PROBE = """
import time, json
t = time.perf_counter()
import onnxruntime, tokenizers
imported = time.perf_counter() - t
from graymatter_tui.embedding import local
from graymatter_tui.embedding.settings import EmbedSettings
e = local.from_settings(EmbedSettings.from_env("local"))
t = time.perf_counter()
e.runtime()
loaded = time.perf_counter() - t
t = time.perf_counter()
e.embed(["the first query of a process"])
first = time.perf_counter() - t
status = dict(l.split(":", 1) for l in open("/proc/self/status") if l.startswith("Vm"))
print(json.dumps({"import": imported, "load": loaded, "first": first,
    "rss": int(status["VmRSS"].split()[0]) / 1024, "hwm": int(status["VmHWM"].split()[0]) / 1024}))
"""


def local_model(args: argparse.Namespace, root: Path) -> None:
    import json

    from graymatter_tui.embedding import local
    from graymatter_tui.embedding.model_files import bundled, sha256_of, verify
    from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings
    from graymatter_tui.embedding.worker import Worker

    print("\n## the embedded model (minilm-l6-v2-int8@win256, 384 dims)\n")
    cache = {"XDG_CACHE_HOME": str(root / "cache")}
    os.environ.update(cache)
    runs = [json.loads(_fresh(LOAD_PROBE, cache)) for _ in range(3)]
    for key, label in (("import", "import onnxruntime+tokenizers"), ("load", "verify+load"),
                       ("first", "first query")):  # fmt: skip
        values = sorted(r[key] for r in runs)
        print(f"{label}: {values[1] * 1000:.0f} ms (median of 3 fresh processes)")
    print(
        f"RSS after load and one query: {sorted(r['rss'] for r in runs)[1]:.0f} MB "
        f"(peak {sorted(r['hwm'] for r in runs)[1]:.0f} MB)"
    )
    files = bundled()
    cold = []
    for _ in range(5):
        t = time.perf_counter()
        sha256_of(files.model)
        cold.append(time.perf_counter() - t)
    verify(files)
    cached = []
    for _ in range(20):
        t = time.perf_counter()
        verify(files)
        cached.append(time.perf_counter() - t)
    print(f"sha256 of model.onnx: {median(cold) * 1000:.1f} ms; cached verdict {_ms(cached)}")

    texts = fact_texts(LOCAL_SHORT, 11)
    long_texts = [" ".join(fact_texts(60, 100 + i)) for i in range(args.long)]
    for threads in (1, 2):
        embedder = local.from_settings(EmbedSettings(embedder=EmbedderName.LOCAL, threads=threads))
        embedder.embed(["warm up"])
        with LmdbStore.open(root / f"local-{threads}", map_size=4 << 30) as store:
            for label, batch in (("short", texts), ("long", long_texts)):
                store.put_many([NewFact(agent_id=AGENT, text=t, created_at=NOW) for t in batch])
                windows = sum(len(embedder.pieces(t)) for t in batch)
                worker = Worker(store, embedder)
                t = time.perf_counter()
                result = worker.drain()
                took = time.perf_counter() - t
                print(
                    f"{threads} thread(s), {len(batch)} {label} facts ({windows} windows): "
                    f"{result.stored / took:,.1f} facts/s, {windows / took:,.1f} windows/s"
                )
        latencies = []
        for i in range(LOCAL_QUERIES):
            t = time.perf_counter()
            embedder.embed([f"which service handles the deploy for team {i}?"])
            latencies.append(time.perf_counter() - t)
        print(f"{threads} thread(s), query embedding: {_ms(latencies)}")

    writes: dict[str, list[float]] = {"none": [], "local": []}
    data = root / "writes"
    for i in range(args.cli_writes):
        for name in writes:
            import subprocess

            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "graymatter_tui", "remember", AGENT, f"fact {i} {name}"],
                env={**os.environ, "GRAYMATTER_DIR": str(data), "GRAYMATTER_EMBED": name},
                capture_output=True,
                check=True,
            )
            writes[name].append(time.perf_counter() - t)
    for name, samples in writes.items():
        print(f"`remember` in a fresh process, GRAYMATTER_EMBED={name}: {_ms(samples)}")


def drain(args: argparse.Namespace, root: Path) -> None:
    from graymatter_tui.embedding import local
    from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings

    n = args.drain
    print(f"\n## {n:,} facts imported, then the backlog drained by the local model\n")
    with LmdbStore.open(root / "drain", map_size=16 << 30) as store:
        embedder = local.from_settings(EmbedSettings(embedder=EmbedderName.LOCAL))
        store.start_embedding(embedder.model)  # a store that embeds: the import queues
        facts = new_facts(AGENT, n)
        t = time.perf_counter()
        for start in range(0, n, 10_000):
            store.put_many(facts[start : start + 10_000])
        imported = time.perf_counter() - t
        print(
            f"import: {imported:.1f} s ({n / imported:,.0f} facts/s); "
            f"backlog {store.embed_backlog():,}"
        )
        # The TUI's and the MCP server's background embedder, on its own thread; the
        # backlog is read every minute as `status` would show it.
        from graymatter_tui.embedding.background import BackgroundEmbedder

        background = BackgroundEmbedder(store, embedder)
        started = time.perf_counter()
        background.start()
        while (left := store.embed_backlog()) > 0:
            print(f"  {time.perf_counter() - started:7.0f} s: backlog {left:,}", flush=True)
            time.sleep(60 if left > 1000 else 1)
        took = time.perf_counter() - started
        background.stop()
        print(
            f"drained {background.stored:,} facts in {took:.0f} s "
            f"({background.stored / took:,.1f} facts/s); "
            f"vectors {store.embed_state().vectors:,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--skip-usearch", action="store_true")
    parser.add_argument("--search", action="store_true")
    parser.add_argument("--centres", type=int, default=2000)
    parser.add_argument("--hnsw-dtypes", default="f16")
    parser.add_argument("--skip-storage", action="store_true")
    parser.add_argument("--throughput", type=int, default=2000)
    parser.add_argument("--write-cost", type=int, default=300)
    parser.add_argument("--local", action="store_true", help="the embedded model")
    parser.add_argument("--long", type=int, default=40, help="--local: long facts")
    parser.add_argument("--cli-writes", type=int, default=20, help="--local: CLI writes each")
    parser.add_argument("--drain", type=int, default=0, help="facts to import, then embed")
    args = parser.parse_args()
    os.environ.pop("GRAYMATTER_EMBED", None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not args.skip_storage:
            storage(args, root)
        if args.search:
            search(args, root)
        if args.throughput:
            throughput(args, root)
        if args.write_cost:
            write_cost(args, root)
        if args.local:
            local_model(args, root)
        if args.drain:
            drain(args, root)


if __name__ == "__main__":
    main()
