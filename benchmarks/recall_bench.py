"""Recall latency: `rank` over the inverted index against a full scan, in one run.

    python benchmarks/recall_bench.py [--facts 100000] [--queries 200] [--seed 11]
        [--stem-language english] [--no-baselines] [--write-cost] [--migration]
        [--hybrid [--dimension 768]]

Builds one agent's store (bulk `put_many` in chunks of 20k, index on) from a vocabulary
of ~2k common words drawn Zipf-like (so posting lists range from a handful of facts to
most of the store) plus rare identifiers (one to three facts each). Then times `rank` for
queries of 1-4 terms drawn from that vocabulary, and beside it a full-scan baseline for
the same queries: decode every live fact (`store.list_facts(agent, "live")`, once per
query) and score it with the same formula in plain Python; and the baseline a competent
engineer would write without a store: every live fact tokenised once and held in memory
with a term -> facts dictionary (its build time is reported apart). All must return the
same top k; the run reports how many queries agreed.

The store stems in `--stem-language` (default english; `none` is keyword-only, as every
store before schema 4), and the baselines tokenise the same way. `--write-cost` times
single `put`s and the tokenising of one fact with and without stemming; `--migration`
times the schema-4 upgrade of a store of `--facts` facts (its one-transaction re-index).

`--hybrid` (needs numpy) also times `rank` with a vector signal: an in-process,
brute-force `QueryVectors` over random normalised vectors of `--dimension` components
held in one numpy matrix (facts drawn around 1,000 random centres, each query near one
centre, so its 50 nearest are all above recall's similarity floor and all fused). It is
NOT the stored embedding pipeline (no LMDB reads of vectors, no embedding server): it
measures what fusion itself costs (re-reading the neighbours as live facts, the
three-signal RRF): once with the matrix product inside `nearest`, and once with each
query's neighbours computed in advance, so the second row is fusion alone. numpy runs on
one BLAS thread (OPENBLAS_NUM_THREADS=1 unless set): on a shared 2-core machine more
threads only fight over the cores. Then the same vectors are written into the store and
`rank` runs over the stored pipeline's search, minus the embedding server's round trip
(each query's vector is given): the store's blocks (what a one-shot `recall` does) and the
per-process cache of a long-running process (`embedding.vector_cache`, ADR 0045).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import Fact
from graymatter_tui.core.tokens import Analyzer, tokens
from graymatter_tui.recall import ranking as recall
from graymatter_tui.recall.ranking import RecallWeights, rank
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.transaction import epoch_ms

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
AGENT = "bench"
CHUNK = 20_000
COMMON_WORDS = 2_000
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]  # 80 syllables


def vocabulary(rng: random.Random) -> list[str]:
    """~2k distinct pronounceable words of 2-4 syllables (none a stop-word)."""
    words: set[str] = set()
    while len(words) < COMMON_WORDS:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if tokens(word) == [word]:
            words.add(word)
    return sorted(words)


def build_items(
    n: int, rng: random.Random
) -> tuple[list[NewFact], list[str], list[float], list[str]]:
    words = vocabulary(rng)
    rng.shuffle(words)
    zipf = [1.0 / (rank_ + 1) for rank_ in range(len(words))]  # word i has weight 1/(i+1)
    rare_ids: list[str] = []
    items: list[NewFact] = []
    for i in range(n):
        body = rng.choices(words, weights=zipf, k=rng.randint(6, 14))
        if rng.random() < 0.4:  # 40% of facts carry a rare identifier
            if rare_ids and rng.random() < 0.3:
                ident = rng.choice(rare_ids[-500:])  # a few ids recur in 2-3 facts
            else:
                ident = f"ref{rng.getrandbits(40):010x}"
                rare_ids.append(ident)
            body.insert(rng.randrange(len(body) + 1), ident)
        created = NOW - timedelta(seconds=(n - i) * 60)  # oldest first, one a minute
        items.append(NewFact(AGENT, " ".join(body).capitalize() + ".", created_at=created))
    return items, words, zipf, rare_ids


def build_queries(
    count: int, rng: random.Random, words: list[str], zipf: list[float], rare_ids: list[str]
) -> list[str]:
    queries = []
    for _ in range(count):
        terms = []
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.4:
                terms.append(rng.choices(words, weights=zipf)[0])  # common, Zipf-weighted
            elif roll < 0.7:
                terms.append(rng.choice(words))  # any vocabulary word, mostly mid/rare
            else:
                terms.append(rng.choice(rare_ids))  # a rare identifier
        queries.append(" ".join(terms))
    return queries


# ---- the full-scan baseline: recall's documented formula in plain Python ------------------


def _fuse(
    per_fact: list[tuple[Fact, dict[str, int], int]],
    df: dict[str, int],
    terms: list[str],
    n: int,
    k: int,
    weights: RecallWeights,
    span: tuple[int, int],
) -> list[str]:
    """Recall's documented formula (no vectors: kw / kw_max + R·rec) over candidate facts
    that share a query term; `span`: created_at (ms) of the first and last live fact."""
    present = [t for t in terms if df.get(t)]
    informative = [t for t in present if df[t] <= 0.5 * n] or present
    idfs = {t: math.log((n + 1) / (df[t] + 1)) + 1.0 for t in informative}
    total = sum(idfs.values())
    scores: dict[str, float] = {}
    by_id: dict[str, Fact] = {}
    for fact, counts, length in per_fact:
        score = matched = 0.0
        found = False
        for term in informative:
            count = counts.get(term)
            if count:
                found = True
                score += (1.0 + math.log(count)) * idfs[term] / (1.0 + math.log(max(length, 1)))
                matched += idfs[term]
        if found:
            scores[fact.id] = score * matched / total
            by_id[fact.id] = fact
    best = max(scores.values(), default=0.0)
    oldest, newest = span

    def rec(fact: Fact) -> float:
        if newest <= oldest:
            return 0.0
        return min(max((epoch_ms(fact.created_at) - oldest) / (newest - oldest), 0.0), 1.0)

    fused = {
        i: (s / best if weights.keyword > 0 else 0.0)
        + (weights.recency * rec(by_id[i]) if weights.recency else 0.0)
        for i, s in scores.items()
    }
    out: list[str] = []
    seen: set[str] = set()
    for fact_id in sorted(fused, key=lambda i: (-fused[i], by_id[i].created_at, i)):
        if by_id[fact_id].text not in seen:
            seen.add(by_id[fact_id].text)
            out.append(fact_id)
            if len(out) == k:
                break
    return out


ANALYZER = Analyzer("english")  # main() sets the store's language


def scan_rank(live: list[Fact], query: str, k: int, weights: RecallWeights) -> list[str]:
    """The naive baseline: tokenise every live fact for every query."""
    term_counts = ANALYZER.term_counts
    terms = list(dict.fromkeys(ANALYZER.terms(query)))
    if not live or not terms:
        return []
    wanted = set(terms)
    per_fact: list[tuple[Fact, dict[str, int], int]] = []
    df = dict.fromkeys(terms, 0)
    for fact in live:
        counts = term_counts(fact.text)
        hit = wanted.intersection(counts)
        if hit:
            per_fact.append((fact, counts, min(sum(counts.values()), 65535)))
            for term in hit:
                df[term] += 1
    return _fuse(per_fact, df, terms, len(live), k, weights, _span(live))


def _span(live: list[Fact]) -> tuple[int, int]:
    if not live:
        return 0, 0
    first, last = min(live, key=lambda f: f.id), max(live, key=lambda f: f.id)
    return epoch_ms(first.created_at), epoch_ms(last.created_at)


class MemoryIndex:
    """The baseline a competent engineer would write without a store: every live fact
    tokenised once, held in memory with a term -> facts dictionary."""

    def __init__(self, live: list[Fact]) -> None:
        self.size = len(live)
        self.span = _span(live)
        self.rows: list[tuple[Fact, dict[str, int], int]] = []
        self.postings: dict[str, list[int]] = {}
        term_counts = ANALYZER.term_counts
        for position, fact in enumerate(live):
            counts = term_counts(fact.text)
            self.rows.append((fact, counts, min(sum(counts.values()), 65535)))
            for term in counts:
                self.postings.setdefault(term, []).append(position)

    def rank(self, query: str, k: int, weights: RecallWeights) -> list[str]:
        terms = list(dict.fromkeys(ANALYZER.terms(query)))
        if not self.size or not terms:
            return []
        df = {t: len(self.postings.get(t, ())) for t in terms}
        positions = {p for t in terms for p in self.postings.get(t, ())}
        per_fact = [self.rows[p] for p in positions]
        return _fuse(per_fact, df, terms, self.size, k, weights, self.span)


class RandomVectors:
    """A brute-force `QueryVectors` over random normalised vectors in one numpy matrix
    (see the module docstring): `seconds` collects the time spent inside `nearest`."""

    CENTRES = 1_000

    def __init__(self, fact_ids: list[str], queries: list[str], dimension: int, seed: int):
        import numpy as np

        self._np = np
        rng = np.random.default_rng(seed)
        centres = rng.standard_normal((self.CENTRES, dimension), dtype=np.float32)
        home = rng.integers(0, self.CENTRES, len(fact_ids))
        matrix = centres[home] + 0.6 * rng.standard_normal(
            (len(fact_ids), dimension), dtype=np.float32
        )
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = matrix
        self.ids = fact_ids
        self.query_vectors = {}
        for query in queries:
            vector = centres[rng.integers(0, self.CENTRES)] + 0.6 * rng.standard_normal(
                dimension, dtype=np.float32
            )
            self.query_vectors[query] = vector / np.linalg.norm(vector)
        self.seconds: list[float] = []

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        started = time.perf_counter()
        np = self._np
        similarity = self.matrix @ self.query_vectors[query]
        top = np.argpartition(-similarity, limit)[:limit]
        top = top[np.argsort(-similarity[top], kind="stable")]
        found = [(self.ids[i], float(similarity[i])) for i in top]
        self.seconds.append(time.perf_counter() - started)
        return found


class PrecomputedVectors:
    """Each query's neighbours from `RandomVectors`, computed before timing starts."""

    def __init__(self, answers: dict[str, list[tuple[str, float]] | None]) -> None:
        self.answers = answers

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        return self.answers[query]


class StoredVectors:
    """`QueryVectors` over the store's own search, each query's vector given (no server):
    the blocks in LMDB, or the per-process cache when `cache` is set."""

    def __init__(self, store: LmdbStore, query_vectors: dict[str, object], cache: bool) -> None:
        from graymatter_tui.embedding.vector_cache import VectorCache

        self.store = store
        self.query_vectors = query_vectors
        self.cache = VectorCache(store) if cache else None
        self.seconds: list[float] = []

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        started = time.perf_counter()
        vector = self.query_vectors[query]
        if self.cache is not None:
            found = self.cache.nearest(agent, "bench", vector, limit)  # type: ignore[arg-type]
        else:
            found = self.store.nearest(agent, "bench", vector, limit)  # type: ignore[arg-type]
        self.seconds.append(time.perf_counter() - started)
        return found


def stored(store: LmdbStore, vectors: RandomVectors, queries: list[str], k: int) -> list[str]:
    """`rank` over the stored pipeline's search (blocks, then the cache): the report's
    lines, wall and this thread's CPU time."""
    store.start_embedding("bench")
    position = {fact_id: i for i, fact_id in enumerate(vectors.ids)}
    started = time.perf_counter()
    while rows := store.embed_waiting(2000):
        store.store_vectors("bench", rows, vectors.matrix[[position[r[1]] for r in rows]])
    written = time.perf_counter() - started
    weights = RecallWeights()
    lines = [
        "",
        f"stored pipeline: the same vectors written into the store in {written:.1f} s; "
        "each query's vector given (no embedding server round trip)",
        "",
        "| recall | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, cache in (("blocks in LMDB (one-shot CLI)", False), ("cached matrix", True)):
        signal = StoredVectors(store, vectors.query_vectors, cache)
        if signal.cache is not None:
            started = time.perf_counter()
            signal.nearest(AGENT, queries[0], 10)
            signal.cache.wait(AGENT)
            label += f" (built in {time.perf_counter() - started:.1f} s, long-running process)"
        for query in queries[:5]:  # warm up
            rank(store, AGENT, query, k=k, weights=weights, vectors=signal)
        signal.seconds.clear()
        wall: list[float] = []
        cpu: list[float] = []
        for query in queries:
            started, started_cpu = time.perf_counter(), time.thread_time()
            rank(store, AGENT, query, k=k, weights=weights, vectors=signal)
            cpu.append(time.thread_time() - started_cpu)
            wall.append(time.perf_counter() - started)
        for name, samples in (
            (f"hybrid, {label}", wall),
            (f"hybrid, {label}, CPU time", cpu),
            (f"`nearest` alone, {label}", signal.seconds),
        ):
            lines.append(
                f"| {name} | {pct(samples, 50) * 1000:.2f} | {pct(samples, 95) * 1000:.2f} "
                f"| {pct(samples, 99) * 1000:.2f} | {statistics.fmean(samples) * 1000:.2f} |"
            )
    return lines


def hybrid(store: LmdbStore, queries: list[str], args: argparse.Namespace) -> list[str]:
    """`rank` with and without the vector signal, for the same queries, in one run: the
    report's lines."""
    fact_ids = [fact.id for fact in store.list_facts(AGENT, "live")]
    started = time.perf_counter()
    vectors = RandomVectors(fact_ids, queries, args.dimension, args.seed)
    built = time.perf_counter() - started
    weights = RecallWeights()
    for query in queries[:5]:  # warm up
        rank(store, AGENT, query, k=args.k, weights=weights, vectors=vectors)
    vectors.seconds.clear()
    limit = max(50, 4 * args.k)  # what rank asks for
    precomputed = PrecomputedVectors({q: vectors.nearest(AGENT, q, limit) for q in queries})
    vectors.seconds.clear()
    keyword: list[float] = []
    total: list[float] = []
    fusion: list[float] = []
    keyword_cpu: list[float] = []
    fusion_cpu: list[float] = []
    agree = 0
    from_vectors = 0
    for query in queries:
        started, started_cpu = time.perf_counter(), time.thread_time()
        rank(store, AGENT, query, k=args.k, weights=weights, vectors=NO_VECTORS)
        keyword.append(time.perf_counter() - started)
        keyword_cpu.append(time.thread_time() - started_cpu)
        started = time.perf_counter()
        hits = rank(store, AGENT, query, k=args.k, weights=weights, vectors=vectors)
        total.append(time.perf_counter() - started)
        started, started_cpu = time.perf_counter(), time.thread_time()
        again = rank(store, AGENT, query, k=args.k, weights=weights, vectors=precomputed)
        fusion.append(time.perf_counter() - started)
        fusion_cpu.append(time.thread_time() - started_cpu)
        agree += again == hits
        from_vectors += sum(1 for h in hits if h.vector_rank is not None)
    # What the vector signal adds to the same query, paired (CPU time: the machine's load
    # does not count).
    added_cpu = [f - k for f, k in zip(fusion_cpu, keyword_cpu, strict=True)]
    lines = [
        "",
        f"hybrid: {len(fact_ids):,} random normalised vectors of {args.dimension} "
        f"components (float32, {vectors.matrix.nbytes / 1e6:.0f} MB, built in {built:.1f} s), "
        f"brute force in process (not the stored pipeline); {from_vectors / len(queries):.1f} "
        f"of each top {args.k} came through the vector signal on average; precomputed "
        f"neighbours gave the same hits for {agree}/{len(queries)} queries",
        "",
        "| recall | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, samples in (
        ("keyword + recency (no vectors)", keyword),
        ("hybrid, brute-force `nearest` inside", total),
        ("brute-force `nearest` alone", vectors.seconds),
        ("hybrid, neighbours precomputed (recall's own cost)", fusion),
        ("keyword + recency, CPU time", keyword_cpu),
        ("hybrid, neighbours precomputed, CPU time", fusion_cpu),
        ("added by the vector signal, same query, CPU time", added_cpu),
    ):
        lines.append(
            f"| {name} | {pct(samples, 50) * 1000:.2f} | {pct(samples, 95) * 1000:.2f} "
            f"| {pct(samples, 99) * 1000:.2f} | {statistics.fmean(samples) * 1000:.2f} |"
        )
    return lines + stored(store, vectors, queries, args.k)


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(round(p / 100 * (len(ordered) - 1)), len(ordered) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--stem-language", default="english")
    parser.add_argument("--no-baselines", action="store_true", help="time `rank` only")
    parser.add_argument("--write-cost", action="store_true")
    parser.add_argument("--migration", action="store_true")
    parser.add_argument(
        "--cap", type=int, default=None, help="postings read per common term (ADR 0044)"
    )
    parser.add_argument("--hybrid", action="store_true", help="also time rank with vectors")
    parser.add_argument("--dimension", type=int, default=768)
    args = parser.parse_args()
    if args.hybrid:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported
    global ANALYZER
    ANALYZER = Analyzer(args.stem_language)
    if args.cap is not None:
        recall.POSTINGS_PER_TERM = args.cap

    rng = random.Random(args.seed)
    items, words, zipf, rare_ids = build_items(args.facts, rng)
    queries = build_queries(args.queries, rng, words, zipf, rare_ids)
    weights = RecallWeights()

    with tempfile.TemporaryDirectory() as directory:
        store = LmdbStore.open(
            Path(directory) / "store",
            map_size=(6 << 30) if args.hybrid else (1 << 31),  # room for the vectors
            clock_fn=lambda: NOW,
            stem_language=args.stem_language,
        )
        try:
            started = time.perf_counter()
            for offset in range(0, len(items), CHUNK):
                store.put_many(items[offset : offset + CHUNK])
            load = time.perf_counter() - started
            stats = store.read(
                lambda tx: (
                    tx.txn.stat(tx.dbs.terms)["entries"],
                    tx.txn.stat(tx.dbs.postings)["entries"],
                )
            )

            for query in queries[:5]:  # warm the page cache and the code paths
                rank(store, AGENT, query, k=args.k, weights=weights, vectors=NO_VECTORS)

            indexed: list[float] = []
            cpu: list[float] = []  # this thread's CPU time: what a busy machine hides
            results: list[list[str]] = []
            candidates: list[int] = []
            for query in queries:
                started, started_cpu = time.perf_counter(), time.thread_time()
                hits = rank(store, AGENT, query, k=args.k, weights=weights, vectors=NO_VECTORS)
                indexed.append(time.perf_counter() - started)
                cpu.append(time.thread_time() - started_cpu)
                results.append([h.fact.id for h in hits])
                terms = set(ANALYZER.terms(query))
                candidates.append(
                    store.read(
                        lambda tx, terms=terms: sum(tx.document_frequency(AGENT, t) for t in terms)
                    )
                )

            # The same queries with every posting read (no per-term cap, ADR 0044): its
            # cost, and how often the capped answer differs from the exact one.
            capped_at = recall.POSTINGS_PER_TERM
            recall.POSTINGS_PER_TERM = 1 << 62
            exact_cpu: list[float] = []
            same_as_exact = overlap = exact_total = rare_lost = 0
            try:
                for query, got in zip(queries, results, strict=True):
                    started_cpu = time.thread_time()
                    hits = rank(store, AGENT, query, k=args.k, weights=weights, vectors=NO_VECTORS)
                    exact_cpu.append(time.thread_time() - started_cpu)
                    exact = [h.fact.id for h in hits]
                    same_as_exact += exact == got
                    overlap += len(set(exact) & set(got))
                    exact_total += len(exact)
                    # A fact holding a query term read whole (not capped) must never be
                    # lost to the cap: only facts found through common terms alone may be.
                    rare = store.read(
                        lambda tx, q=query: {
                            t for t in tx.terms(q) if tx.document_frequency(AGENT, t) <= capped_at
                        }
                    )
                    rare_lost += any(
                        h.fact.id not in got and rare & set(ANALYZER.terms(h.fact.text))
                        for h in hits
                    )
            finally:
                recall.POSTINGS_PER_TERM = capped_at

            scanned: list[float] = []
            agree = 0
            in_memory: list[float] = []
            memory_agree = 0
            memory_build = 0.0
            if args.no_baselines:
                queries_for_baselines: list[str] = []
            else:
                queries_for_baselines = queries
            for query, expected in zip(queries_for_baselines, results, strict=False):
                started = time.perf_counter()
                live = store.list_facts(AGENT, "live")
                got = scan_rank(live, query, args.k, weights)
                scanned.append(time.perf_counter() - started)
                agree += got == expected

            if queries_for_baselines:
                started = time.perf_counter()
                memory = MemoryIndex(store.list_facts(AGENT, "live"))
                memory_build = time.perf_counter() - started
            for query, expected in zip(queries_for_baselines, results, strict=False):
                started = time.perf_counter()
                got = memory.rank(query, args.k, weights)
                in_memory.append(time.perf_counter() - started)
                memory_agree += got == expected
            hybrid_lines = hybrid(store, queries, args) if args.hybrid else []
        finally:
            store.close()

    print(
        f"recall_bench: {args.facts} facts of one agent, {len(words)} common words "
        f"(Zipf), {len(rare_ids)} rare identifiers, {args.queries} queries of 1-4 terms, "
        f"k={args.k}, weights {weights.keyword},{weights.recency}, seed {args.seed}, "
        f"stemming {args.stem_language}, Python {sys.version.split()[0]}"
    )
    print(
        f"bulk load (put_many, {CHUNK // 1000}k per transaction, index on): {load:.2f} s "
        f"({args.facts / load:,.0f} facts/s); index: {stats[0]:,} terms, "
        f"{stats[1]:,} postings"
    )
    print(
        f"postings held by the query terms (sum of their df): median "
        f"{statistics.median(candidates):,.0f}, max {max(candidates):,}"
    )
    print(
        f"per-term cap {capped_at:,} postings (ADR 0044): top-{args.k} identical to the "
        f"uncapped ranking for {same_as_exact}/{len(queries)} queries, "
        f"{overlap / max(exact_total, 1):.1%} of the uncapped answers' facts kept; "
        f"queries that lost a fact "
        f"holding an uncapped query term: {rare_lost}; uncapped CPU p50 "
        f"{pct(exact_cpu, 50) * 1000:.2f} ms, p99 {pct(exact_cpu, 99) * 1000:.2f} ms"
    )
    if args.no_baselines:
        print()
        print("| method | p50 ms | p95 ms | p99 ms | mean ms |")
        print("|---|---:|---:|---:|---:|")
        for name, samples in (("wall", indexed), ("CPU", cpu)):
            print(
                f"| rank ({args.stem_language}), {name} time | {pct(samples, 50) * 1000:.2f} "
                f"| {pct(samples, 95) * 1000:.2f} | {pct(samples, 99) * 1000:.2f} "
                f"| {statistics.fmean(samples) * 1000:.2f} |"
            )
        _extras(args, items, hybrid_lines)
        return
    print(
        f"top-{args.k} identical to the full scan for {agree}/{len(queries)} queries, "
        f"to the in-memory index for {memory_agree}/{len(queries)}"
    )
    print(
        f"in-memory baseline: built in {memory_build:.2f} s (every live fact read and "
        f"tokenised once, held in a term -> facts dict)"
    )
    print()
    print("| method | p50 ms | p95 ms | p99 ms | mean ms |")
    print("|---|---:|---:|---:|---:|")
    for name, samples in (
        ("rank (store's inverted index)", indexed),
        ("in-memory index baseline (pre-tokenised)", in_memory),
        ("full scan baseline (tokenise per query)", scanned),
    ):
        print(
            f"| {name} | {pct(samples, 50) * 1000:.2f} | {pct(samples, 95) * 1000:.2f} "
            f"| {pct(samples, 99) * 1000:.2f} | {statistics.fmean(samples) * 1000:.2f} |"
        )
    print(
        f"| ratio (in-memory / store) | {pct(in_memory, 50) / pct(indexed, 50):.2f}× "
        f"| {pct(in_memory, 95) / pct(indexed, 95):.2f}× "
        f"| {pct(in_memory, 99) / pct(indexed, 99):.2f}× "
        f"| {statistics.fmean(in_memory) / statistics.fmean(indexed):.2f}× |"
    )
    print(
        f"| ratio (scan / store) | {pct(scanned, 50) / pct(indexed, 50):.1f}× "
        f"| {pct(scanned, 95) / pct(indexed, 95):.1f}× "
        f"| {pct(scanned, 99) / pct(indexed, 99):.1f}× "
        f"| {statistics.fmean(scanned) / statistics.fmean(indexed):.1f}× |"
    )
    _extras(args, items, hybrid_lines)


def _extras(args: argparse.Namespace, items: list[NewFact], hybrid_lines: list[str]) -> None:
    for line in hybrid_lines:
        print(line)
    if args.write_cost:
        write_cost(items)
    if args.migration:
        migration(items)


def write_cost(items: list[NewFact], n: int = 300) -> None:
    """A single `put` (one transaction, synced) and the tokenising of one fact, with and
    without stemming: what stemming adds to every write."""
    texts = [item.text for item in items[:10_000]]
    print()
    print("| stemming | tokenise one fact (µs) | one `put` (ms, synced) |")
    print("|---|---:|---:|")
    for language in ("none", "english"):
        analyzer = Analyzer(language)
        started = time.process_time()
        for text in texts:
            analyzer.term_counts(text)
        per_text = (time.process_time() - started) / len(texts)
        with tempfile.TemporaryDirectory() as directory:
            store = LmdbStore.open(Path(directory) / "s", stem_language=language)
            try:
                store.put(AGENT, texts[0])
                started = time.perf_counter()
                for text in texts[1 : n + 1]:
                    store.put(AGENT, text)
                per_put = (time.perf_counter() - started) / n
            finally:
                store.close()
        print(f"| {language} | {per_text * 1e6:.1f} | {per_put * 1000:.2f} |")
    print("(tokenising: CPU time per fact over 10k facts; `put`: wall time, fsync included)")


def migration(items: list[NewFact]) -> None:
    """The schema-4 upgrade of a store of these facts written unstemmed at schema 3: the
    re-index of every live fact in the upgrade's one write transaction."""
    import lmdb

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s"
        store = LmdbStore.open(path, map_size=1 << 31, stem_language="none")
        try:
            for offset in range(0, len(items), CHUNK):
                store.put_many(items[offset : offset + CHUNK])
        finally:
            store.close()
        env = lmdb.open(str(path), max_dbs=32, map_size=1 << 31)
        with env.begin(write=True) as txn:
            meta = env.open_db(b"meta", txn=txn)
            txn.put(b"schema_version", b"3", db=meta)
            txn.delete(b"stem_language", db=meta)
        env.close()
        before = (path / "data.mdb").stat().st_size
        started, started_cpu = time.perf_counter(), time.process_time()
        store = LmdbStore.open(path)  # the default map: the upgrade grows it as it needs
        took, took_cpu = time.perf_counter() - started, time.process_time() - started_cpu
        try:
            language = store.info().stem_language
        finally:
            store.close()
        after = (path / "data.mdb").stat().st_size
    print()
    print(
        f"schema-4 upgrade of {len(items):,} facts (re-index to {language}, one "
        f"transaction): {took:.2f} s wall, {took_cpu:.2f} s CPU "
        f"({len(items) / took:,.0f} facts/s); data.mdb "
        f"{before / 1e6:.0f} MB -> {after / 1e6:.0f} MB"
    )


if __name__ == "__main__":
    main()
