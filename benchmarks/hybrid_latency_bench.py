"""Hybrid recall latency at 100k facts x 384 dimensions, the query's embedding included
(issue 22's goal: p50 <= 15 ms, p99 <= 40 ms), with a breakdown of where the time goes.

    python benchmarks/hybrid_latency_bench.py [--facts 100000] [--queries 200] [--k 8]
        [--seed 11] [--data ../shared/data/locomo] [--cache DIR] [--noise 0.02]
        [--keep-store DIR] [--json OUT] [--profile 50]

What is timed is the real pipeline of a long-running process (MCP server, TUI): the
bundled local model (all-MiniLM-L6-v2 int8, GRAYMATTER_EMBED=local, in this process on
the threads the MCP server gives it: two unless GRAYMATTER_EMBED_THREADS says, ADR 0075),
an LMDB store, and
`rank(store, agent, query, k=8, vectors=StoreQueryVectors(store, embedder, timeout,
cache=True))`, the per-process vector cache (ADR 0045) built and waited for before any
clock starts. Beside it the one-shot path (`cache=False`: each query searches the
store's vector blocks, as a CLI `recall` does). Per query set, p50 / p95 / p99 / mean of
wall and of this thread's CPU time (`time.thread_time`; the machine's other work does not
count in it, and neither does work of other threads, e.g. extra BLAS threads), for:
the query's embedding alone (`embedder.embed([q])`); the vector search alone, the query's
vector given (`VectorCache.nearest`, the cache's `AgentMatrix.nearest` without the
generation check, and the store's blocks, `store.nearest`); keyword-only `rank`
(`NO_VECTORS`); hybrid `rank`, cached (the goal's figure) and one-shot. Each row is its
own pass over the queries (a few other queries first, untimed), so no row profits from
another having just read the same postings or rows. The garbage collector stays on, as
in a real process, and the heap is frozen once set up, as the MCP server freezes its own
(`--no-freeze`: not); "GC ms (full)" is the time its pauses took inside a row's timed
calls, summed over the pass, and how many were full collections.

The store (one agent): facts are LoCoMo's conversation turns (`--data`, default
../shared/data/locomo beside the repository, read at run time and never copied; see its
README.md) repeated with variations until `--facts`: each copy after the first has its
speakers' names swapped for others and, sometimes, a short opener ("Update: "), so every
text is distinct and the keyword index holds real English at 100k facts. Without the data
a synthetic generator of templated English sentences stands in (said in the report). The
paraphrase set's 420 facts (benchmarks/paraphrases.json) are in the store too.

Vectors: embedding 100k texts takes ~18 minutes, so only the distinct source texts (the
turns, the paraphrase facts: ~6,300) are embedded with the real model, each cut into the
model's windows as the product's worker cuts them (`embedder.pieces`); embeddings are
kept in `--cache DIR` (default: a temporary directory; the same file and keys as
locomo_bench.py's cache, so the two can share one directory). A source text's first fact
takes its rows unchanged; every copy takes them plus gaussian noise of `--noise` per
component (0.02: a cosine of ~0.93 to the source), renormalised, so the set is clustered
as real data is. They are written through the store's own API, as the embedding worker
writes them (`start_embedding`, `embed_waiting`, `store_vectors`); the store then reports
the local model's name and 384 dimensions, and no backlog.

Queries: `--queries` distinct LoCoMo questions of 5-15 words (seeded sample), and the
paraphrase set's 70 queries (each shares no stemmed word with its target), reported
apart. Checked at run time (the run fails otherwise): the store holds `--facts` live facts
each with a vector and no backlog; every hybrid query used its vector signal; hybrid
finds more paraphrase targets in its top k than keyword-only; cached and one-shot agree.

`--keep-store DIR` builds the store once into DIR (with a manifest of how it was built)
and reuses it on later runs with the same parameters: build once, time many times.
`--profile N` also runs cProfile over N cached hybrid queries and prints the functions
with the most cumulative time. OPENBLAS_NUM_THREADS is used as the environment gives it
(printed; unset means OpenBLAS's default of one thread per core).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import os
import platform
import pstats
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ["GRAYMATTER_EMBED"] = "local"  # before the settings are read

import numpy as np  # noqa: E402

from benchmarks._common import NOW, percentile  # noqa: E402
from graymatter_tui.backends.lmdb import LmdbStore  # noqa: E402
from graymatter_tui.embedding import vector_cache  # noqa: E402
from graymatter_tui.embedding.factory import from_settings  # noqa: E402
from graymatter_tui.embedding.local import LocalEmbedder  # noqa: E402
from graymatter_tui.embedding.query import StoreQueryVectors  # noqa: E402
from graymatter_tui.embedding.settings import EmbedSettings, answer_queries  # noqa: E402
from graymatter_tui.recall import ranking  # noqa: E402
from graymatter_tui.recall.keyword_cache import KeywordCache  # noqa: E402
from graymatter_tui.recall.ranking import Hit, rank  # noqa: E402
from graymatter_tui.recall.vector_signal import NO_VECTORS  # noqa: E402
from graymatter_tui.storage import NewFact  # noqa: E402

if TYPE_CHECKING:
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

T = TypeVar("T")
AGENT = "bench"
DIMENSION = 384
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo"
PARAPHRASES = Path(__file__).resolve().parent / "paraphrases.json"
MANIFEST = "manifest.json"
CHUNK = 20_000  # facts per put_many
VECTOR_BATCH = 4_000  # facts per store_vectors
WARM = 5  # untimed queries before each pass
GOAL_P50_MS, GOAL_P99_MS = 15.0, 40.0
NAMES = (
    "Aaron Abby Adele Aiden Alma Amir Ana Anika Arjun Asha Ava Ben Bianca Bruno Carla Chen "
    "Chloe Clara Dana Daniel Diego Dina Eli Elena Emil Emma Eric Esme Ezra Fatima Felix Fiona "
    "Gabe Grace Hana Hugo Ian Ines Iris Isaac Ivy Jack Jade Jamal Jasmine Jonas Julia Kai "
    "Kara Kenji Kiara Leo Lena Liam Lila Lucas Luna Malik Maya Mei Mila Milo Mira Nadia Nia "
    "Nico Nina Noah Nora Omar Oscar Paula Priya Quinn Rafael Rania Ravi Rhea Rosa Ruby Sami "
    "Sara Selin Simon Sofia Tariq Tessa Theo Uma Vera Victor Wes Yara Yusuf Zara Zoe"
).split()
OPENERS = ("Update: ", "Note: ", "From the chat: ", "Reminder: ", "Later: ", "Follow-up: ")


# ---- the facts and the queries ----------------------------------------------------------


@dataclass
class Source:
    """The distinct texts facts are made from (each with the names a copy may swap, and a
    date), and the questions asked of them."""

    label: str
    texts: list[str]
    names: list[tuple[str, ...]]
    when: list[datetime]
    questions: list[str]


def _turn_text(turn: dict[str, Any]) -> str:
    """A LoCoMo turn as locomo_bench.py writes it (so their caches share keys)."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def load_locomo(data: Path) -> Source:
    texts: list[str] = []
    names: list[tuple[str, ...]] = []
    when: list[datetime] = []
    questions: list[str] = []
    seen: set[str] = set()
    for path in sorted(data.glob("*.json")):
        raw = json.loads(path.read_text())
        conversation = raw.get("conversation", raw)
        speakers = (conversation["speaker_a"], conversation["speaker_b"])
        for key, turns in conversation.items():
            match = re.fullmatch(r"session_(\d+)", key)
            if not match or not isinstance(turns, list):
                continue
            written = conversation[f"{key}_date_time"].strip()
            start = datetime.strptime(written, "%I:%M %p on %d %B, %Y").replace(tzinfo=NOW.tzinfo)
            for i, turn in enumerate(turns):
                text = _turn_text(turn)
                if text not in seen:
                    seen.add(text)
                    texts.append(text)
                    names.append(speakers)
                    when.append(start + timedelta(seconds=30 * i))
        for qa in raw.get("qa", []):
            question = " ".join(str(qa.get("question", "")).split())
            if 5 <= len(question.split()) <= 15 and question not in questions:
                questions.append(question)
    return Source(f"LoCoMo turns ({data})", texts, names, when, questions)


def synthetic(rng: random.Random, count: int = 6_000) -> Source:
    """Templated English sentences and questions, when the LoCoMo data is absent."""
    verbs = [
        ("repaired", "repair"), ("painted", "paint"), ("sold", "sell"), ("booked", "book"),
        ("cooked", "cook"), ("found", "find"), ("adopted", "adopt"), ("planted", "plant"),
        ("visited", "visit"), ("borrowed", "borrow"), ("photographed", "photograph"),
        ("cleaned", "clean"), ("ordered", "order"), ("returned", "return"), ("built", "build"),
    ]  # fmt: skip
    things = (
        "the old bicycle|a blue kayak|the garden shed|a birthday cake|two concert tickets|"
        "the kitchen table|a stray puppy|tomato seedlings|the art museum|a mountain cabin|"
        "her grandmother's piano|the broken laptop|a vintage camera|the community pool|"
        "a pottery class|the marathon route|a family recipe|the guitar amplifier|a rescue cat"
    ).split("|")
    places = (
        "at the market|near the lake|in the city centre|at work|with friends|at home|"
        "downtown|by the beach|at the library|on the farm|in the studio"
    ).split("|")
    times = (
        "last weekend|yesterday|on Friday|this morning|two weeks ago|in March|after dinner|"
        "before the holidays|during the storm|on her day off"
    ).split("|")
    texts: list[str] = []
    seen: set[str] = set()
    names: list[tuple[str, ...]] = []
    when: list[datetime] = []
    start = datetime(2025, 1, 1, tzinfo=NOW.tzinfo)
    while len(texts) < count:
        who, verb, thing = rng.choice(NAMES), rng.choice(verbs)[0], rng.choice(things)
        text = f"{who}: I {verb} {thing} {rng.choice(places)} {rng.choice(times)}."
        if text not in seen:
            seen.add(text)
            texts.append(text)
            names.append((who,))
            when.append(start + timedelta(minutes=47 * len(texts)))
    questions = sorted(
        {
            f"When did {rng.choice(NAMES)} {rng.choice(verbs)[1]} {rng.choice(things)} "
            f"{rng.choice(places)}?"
            for _ in range(2_000)
        }
    )
    return Source("synthetic English (no LoCoMo data)", texts, names, when, questions)


@dataclass
class Paraphrases:
    texts: list[str]
    queries: list[str]
    targets: list[str]  # the paraphrase id of each query's target
    ids: list[str]  # the paraphrase id of each text


def load_paraphrases() -> Paraphrases:
    data = json.loads(PARAPHRASES.read_text())
    return Paraphrases(
        [f["text"] for f in data["facts"]],
        [q["query"] for q in data["queries"]],
        [q["target"] for q in data["queries"]],
        [f["id"] for f in data["facts"]],
    )


@dataclass
class Planned:
    """The facts to write: text, created_at, the index of its source text in the list of
    embedded texts, and whether its vector gets noise."""

    texts: list[str] = field(default_factory=list)
    created: list[datetime] = field(default_factory=list)
    source: list[int] = field(default_factory=list)
    noisy: list[bool] = field(default_factory=list)


def plan_facts(
    source: Source, para: Paraphrases, n: int, rng: random.Random
) -> tuple[Planned, list[str]]:
    """`n` facts: the paraphrase facts, then every source text once, then copies with
    their names swapped (and sometimes an opener) until `n`; in a seeded random order.
    Also the distinct texts to embed (the paraphrase facts first, then the sources)."""
    embedded = list(para.texts) + list(source.texts)
    base = len(para.texts)
    planned = Planned()
    seen: set[str] = set()

    def add(text: str, when: datetime, index: int, noisy: bool) -> None:
        seen.add(text)
        planned.texts.append(text)
        planned.created.append(when)
        planned.source.append(index)
        planned.noisy.append(noisy)

    para_start = datetime(2025, 6, 1, tzinfo=NOW.tzinfo)
    for i, text in enumerate(para.texts):
        add(text, para_start + timedelta(hours=7 * i), i, False)
    order = list(range(len(source.texts)))
    rng.shuffle(order)
    copy = 0
    while len(planned.texts) < n:
        for i in order:
            if len(planned.texts) >= n:
                break
            text = source.texts[i]
            if copy:
                for name in source.names[i]:
                    text = re.sub(rf"\b{re.escape(name)}\b", rng.choice(NAMES), text)
                if rng.random() < 0.3:
                    text = rng.choice(OPENERS) + text
                if text in seen:  # a rare collision: tell it apart
                    text = f"{text} ({copy})"
                if text in seen:
                    continue
            elif text in seen:
                continue
            when = source.when[i] + timedelta(days=11 * copy, seconds=rng.randint(0, 3600))
            add(text, min(when, NOW - timedelta(days=1)), base + i, copy > 0)
        copy += 1
    shuffled = list(range(len(planned.texts)))
    rng.shuffle(shuffled)
    return (
        Planned(
            [planned.texts[i] for i in shuffled],
            [planned.created[i] for i in shuffled],
            [planned.source[i] for i in shuffled],
            [planned.noisy[i] for i in shuffled],
        ),
        embedded,
    )


# ---- embeddings of the source texts, kept on disk ---------------------------------------


def cache_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def embed_sources(
    embedder: LocalEmbedder, texts: dict[int, str], cache_dir: Path
) -> tuple[dict[int, Matrix], int, float]:
    """Each text's rows (one per window of the model, as the worker cuts it), from the
    cache in `cache_dir` or embedded now: (rows per text, pieces embedded now, seconds)."""
    path = cache_dir / f"product-{embedder.model}.npz"
    rows: dict[str, Matrix] = {}
    if path.exists():
        held = np.load(path, allow_pickle=False)
        for key, row in zip(held["keys"].tolist(), held["rows"], strict=True):
            rows[str(key)] = row.astype(np.float32)
    pieces = {i: embedder.pieces(text) for i, text in texts.items()}
    missing = list(
        dict.fromkeys(p for ps in pieces.values() for p in ps if cache_key(p) not in rows)
    )
    started = time.perf_counter()
    for offset in range(0, len(missing), 256):
        batch = missing[offset : offset + 256]
        for text, row in zip(batch, embedder.embed(batch, timeout=600.0), strict=True):
            rows[cache_key(text)] = row
        print(
            f"  embedded {offset + len(batch):,}/{len(missing):,} source pieces",
            file=sys.stderr,
            flush=True,
        )
    seconds = time.perf_counter() - started
    if missing:
        cache_dir.mkdir(parents=True, exist_ok=True)
        keys = list(rows)
        np.savez(path, keys=np.array(keys), rows=np.stack([rows[k] for k in keys]))
    out = {i: np.stack([rows[cache_key(p)] for p in ps]) for i, ps in pieces.items()}
    return out, len(missing), seconds


# ---- the store ---------------------------------------------------------------------------


def build_store(
    path: Path,
    planned: Planned,
    sources: dict[int, Matrix],
    model: str,
    noise: float,
    seed: int,
) -> tuple[LmdbStore, list[str], dict[str, float]]:
    """The store at `path` holding the planned facts and their vectors: (store, fact ids
    in planned order, seconds per step)."""
    store = LmdbStore.open(path, map_size=4 << 30, clock_fn=lambda: NOW)
    started = time.perf_counter()
    ids: list[str] = []
    for offset in range(0, len(planned.texts), CHUNK):
        items = [
            NewFact(AGENT, text, created_at=when, accessed_at=when)
            for text, when in zip(
                planned.texts[offset : offset + CHUNK],
                planned.created[offset : offset + CHUNK],
                strict=True,
            )
        ]
        ids += [fact.id for fact in store.put_many(items)]
    put = time.perf_counter() - started
    started = time.perf_counter()
    store.start_embedding(model)
    position = {fact_id: i for i, fact_id in enumerate(ids)}
    rng = np.random.default_rng(seed)
    while waiting := store.embed_waiting(VECTOR_BATCH, AGENT):
        rows: list[tuple[str, str, str]] = []
        blocks: list[Matrix] = []
        for agent, fact_id, text in waiting:
            i = position[fact_id]
            vectors = sources[planned.source[i]]
            if planned.noisy[i]:
                vectors = vectors + rng.normal(0.0, noise, vectors.shape).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows += [(agent, fact_id, text)] * len(vectors)
            blocks.append(vectors)
        stored, skipped = store.store_vectors(model, rows, np.vstack(blocks).astype(np.float32))
        if skipped or not stored:
            raise SystemExit(f"hybrid_latency_bench: the store skipped {skipped} facts' vectors")
    return store, ids, {"facts_put_s": put, "vectors_written_s": time.perf_counter() - started}


def check_store(store: LmdbStore, model: str, facts: int) -> dict[str, Any]:
    name, dimension = store.embed_model()
    state = store.embed_state(AGENT)
    live = store.read_index(lambda tx: tx.live_count(AGENT))
    assert (name, dimension) == (model, DIMENSION), f"store's model is {name}/{dimension}"
    assert live == facts, f"{live} live facts, not {facts}"
    assert state.backlog == 0, f"{state.backlog} facts wait for a vector"
    assert state.vectors == facts, f"{state.vectors} of {facts} facts hold a vector"
    return {"model": name, "dimension": dimension, "live": live, "with_vectors": state.vectors}


# ---- timing ------------------------------------------------------------------------------


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    gc_s: float = 0.0  # the garbage collector's pauses inside the timed calls
    gc_full: int = 0  # of them, full (generation 2) collections

    def summary(self) -> dict[str, dict[str, float]]:
        found = {
            kind: {
                "p50": percentile(values, 50) * 1000,
                "p95": percentile(values, 95) * 1000,
                "p99": percentile(values, 99) * 1000,
                "mean": statistics.fmean(values) * 1000,
            }
            for kind, values in (("wall", self.wall), ("cpu", self.cpu))
        }
        found["gc"] = {"total_ms": self.gc_s * 1000, "full": self.gc_full}
        return found


class GcPauses:
    """The garbage collector's pauses while `on` (gc.callbacks), added to `samples`."""

    def __init__(self) -> None:
        self.samples: Samples | None = None
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if self.samples is None:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.samples.gc_s += time.perf_counter() - self._started
            self.samples.gc_full += info["generation"] == 2


GC = GcPauses()


def timed_pass(
    queries: Sequence[str], warm: Sequence[str], fn: Callable[[str], T]
) -> tuple[Samples, list[Kept]]:
    """`fn` over the `warm` queries untimed, then over `queries`, each timed alone; what
    each answered, kept as strings (`kept`, after its clock stops): a server keeps no
    answer, and thousands of kept hits would make the collector's full passes, timed
    here, longer and more frequent than a server's."""
    for query in warm:
        fn(query)
    samples = Samples()
    out: list[Kept] = []
    for query in queries:
        wall, cpu = time.perf_counter(), time.thread_time()
        GC.samples = samples
        found = fn(query)
        GC.samples = None
        cpu_end, wall_end = time.thread_time(), time.perf_counter()
        samples.wall.append(wall_end - wall)
        samples.cpu.append(cpu_end - cpu)
        out.append(kept(found))
    return samples, out


@dataclass(frozen=True)
class Kept:
    """An answer as strings and a count: the ids in order, how many came through the
    vector signal, and a digest of every field (hits: the explain fields too)."""

    ids: tuple[str, ...]
    from_vectors: int
    digest: str


def kept(found: object) -> Kept:
    if not isinstance(found, list) or not found:  # a query's vector, or no answer
        return Kept((), 0, "")
    if isinstance(found[0], Hit):
        fields = [(h.fact.id, *(v for n, v in vars(h).items() if n != "fact")) for h in found]
        ids = tuple(h.fact.id for h in found)
        from_vectors = sum(h.vector_rank is not None for h in found)
    else:  # (id, cosine) pairs of a vector search
        fields, ids, from_vectors = found, tuple(i for i, _ in found), len(found)
    digest = hashlib.sha256(repr(fields).encode()).hexdigest()
    return Kept(ids, from_vectors, digest)


@dataclass
class SetResult:
    name: str
    rows: dict[str, Samples]
    checks: dict[str, Any]


STEPS = {
    "embed": "1. query embedding alone (`embedder.embed([q])`)",
    "search_cache": "2a. vector search, cache (`VectorCache.nearest`)",
    "search_matrix": "2b. vector search, matrix alone (`AgentMatrix.nearest`)",
    "search_float": "2b'. the same, float32 product only (no int8 first pass)",
    "search_blocks": "2c. vector search, blocks (`store.nearest`)",
    "keyword": "3. keyword-only rank (`NO_VECTORS`), the store's index",
    "keyword_copy": "3'. the same from a copy of the postings (`KeywordCache`), empty at first",
    "hybrid_cached": "4. **hybrid rank, cached**, as the MCP server (the goal's figure)",
    "hybrid_no_copy": "4'. the same, keyword scores from the store's index (no copy)",
    "hybrid_serial": "4''. the same as 4, the keyword signal read after the vector signal",
    "hybrid_oneshot": "5. hybrid rank, one-shot (blocks)",
}


def measure_set(
    name: str,
    queries: list[str],
    warm: list[str],
    store: LmdbStore,
    embedder: LocalEmbedder,
    cached: StoreQueryVectors,
    oneshot: StoreQueryVectors,
    k: int,
) -> tuple[SetResult, list[Kept], list[Kept], list[Kept]]:
    """Every row for one query set, each its own pass; the keyword, cached and one-shot
    hits for the checks."""
    model = embedder.model
    limit = max(ranking.MIN_VECTOR_CANDIDATES, ranking.VECTOR_CANDIDATES_PER_HIT * k)
    assert cached.cache is not None
    cache = cached.cache
    matrix = cache._agents[AGENT]  # built and waited for by the caller
    vectors: dict[str, Matrix] = {}

    def embed(query: str) -> Matrix:
        vector: Matrix = embedder.embed([query], timeout=cached.timeout)[0]
        vectors[query] = vector
        return vector

    rows: dict[str, Samples] = {}
    rows["embed"], _ = timed_pass(queries, warm, embed)
    rows["search_cache"], by_cache = timed_pass(
        queries, warm, lambda q: cache.nearest(AGENT, model, vectors[q], limit)
    )
    rows["search_matrix"], by_matrix = timed_pass(
        queries, warm, lambda q: matrix.nearest(vectors[q], limit)
    )
    # The same rows without the int8 first pass (ADR 0071), in the same run.
    quantised, vector_cache.QUANTISED = vector_cache.QUANTISED, False
    try:
        blocks = store.vector_blocks_since(AGENT, model, -1)
        assert blocks is not None
        plain = [vector_cache.AgentMatrix(blocks)]
    finally:
        vector_cache.QUANTISED = quantised
    rows["search_float"], by_float = timed_pass(
        queries, warm, lambda q: plain[0].nearest(vectors[q], limit)
    )
    plain.clear()  # a second copy no server holds: out of the later passes' heap
    blocks = None
    assert by_matrix == by_float, "the int8 first pass answered otherwise than float32"
    rows["search_blocks"], by_blocks = timed_pass(
        queries, warm, lambda q: store.nearest(AGENT, model, vectors[q], limit)
    )
    rows["keyword"], keyword = timed_pass(
        queries, warm, lambda q: rank(store, AGENT, q, k=k, vectors=NO_VECTORS)
    )
    # A server's copy of the postings (ADR 0074): this pass fills it, as a server's first
    # queries do; the hybrid rows then read it as a server that has been serving does.
    copy = KeywordCache()
    rows["keyword_copy"], by_copy = timed_pass(
        queries, warm, lambda q: rank(store, AGENT, q, k=k, vectors=NO_VECTORS, keywords=copy)
    )
    assert by_copy == keyword, "the copy of the postings answered otherwise than the store"
    unused: list[str] = []

    def hybrid(
        signal: StoreQueryVectors, keywords: KeywordCache | None = copy
    ) -> Callable[[str], list[Hit]]:
        def run(query: str) -> list[Hit]:
            hits = rank(store, AGENT, query, k=k, vectors=signal, keywords=keywords)
            use = signal.last_use()
            if not use.used:
                unused.append(f"{query!r}: {use.reason}")
            return hits

        return run

    rows["hybrid_cached"], by_cached = timed_pass(queries, warm, hybrid(cached))
    rows["hybrid_no_copy"], by_no_copy = timed_pass(queries, warm, hybrid(cached, None))
    assert by_no_copy == by_cached, "the copy of the postings changed a hybrid answer"
    # The same, the keyword signal read after the vector signal on one thread (ADR 0072).
    ranking.BESIDE = False
    try:
        rows["hybrid_serial"], by_serial = timed_pass(queries, warm, hybrid(cached))
    finally:
        ranking.BESIDE = True
    assert by_serial == by_cached, "reading the signals side by side changed an answer"
    rows["hybrid_oneshot"], by_oneshot = timed_pass(queries, warm, hybrid(oneshot, None))
    assert not unused, f"queries ranked without their vector signal: {unused[:3]}"

    checks = {
        "queries": len(queries),
        "search_cache_equals_blocks": sum(
            a.ids == b.ids for a, b in zip(by_cache, by_blocks, strict=True)
        ),
        "hybrid_cached_equals_oneshot": sum(
            a.ids == b.ids for a, b in zip(by_cached, by_oneshot, strict=True)
        ),
        "mean_hits_from_vectors": statistics.fmean(answer.from_vectors for answer in by_cached),
        "mean_hits_keyword": statistics.fmean(len(answer.ids) for answer in keyword),
    }
    return SetResult(name, rows, checks), keyword, by_cached, by_oneshot


def profile(
    store: LmdbStore, signal: StoreQueryVectors, queries: list[str], k: int, top: int = 30
) -> str:
    """cProfile over `queries` ranked hybrid through `signal`: the top functions by
    cumulative time, then by their own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        rank(store, AGENT, query, k=k, vectors=signal)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top // 2)
    return out.getvalue()


# ---- the report --------------------------------------------------------------------------


def table(result: SetResult) -> list[str]:
    lines = [
        f"### {result.name} ({result.checks['queries']} queries)",
        "",
        "| step | p50 ms | p95 ms | p99 ms | mean ms | CPU p50 | CPU p95 | CPU p99 | CPU mean "
        "| GC ms (full) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, label in STEPS.items():
        s = result.rows[key].summary()
        cells = [s[kind][m] for kind in ("wall", "cpu") for m in ("p50", "p95", "p99", "mean")]
        gc_cell = f"{s['gc']['total_ms']:.1f} ({s['gc']['full']:.0f})"
        lines.append(f"| {label} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {gc_cell} |")
    return lines


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200, help="LoCoMo (or synthetic) ones")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's directory")
    parser.add_argument("--cache", type=Path, default=None, help="keep embeddings here")
    parser.add_argument("--noise", type=float, default=0.02, help="per component, copies")
    parser.add_argument("--keep-store", type=Path, default=None, help="build once, reuse")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--profile", type=int, default=0, help="cProfile N hybrid queries")
    parser.add_argument(
        "--no-freeze", action="store_true", help="leave the heap unfrozen (not as a server)"
    )
    args = parser.parse_args()
    load_start = load_average()
    began = time.perf_counter()

    rng = random.Random(args.seed)
    if args.data.is_dir() and any(args.data.glob("*.json")):
        source = load_locomo(args.data)
        source_key = "locomo"
    else:
        print(f"no LoCoMo data at {args.data}: synthetic sentences instead", file=sys.stderr)
        source = synthetic(rng)
        source_key = "synthetic"
    para = load_paraphrases()
    if args.facts < len(para.texts) + 1:
        raise SystemExit(f"--facts must be more than the {len(para.texts)} paraphrase facts")
    planned, embedded = plan_facts(source, para, args.facts, rng)
    pool = source.questions[:]
    rng.shuffle(pool)
    questions, warm = pool[: args.queries], pool[args.queries : args.queries + WARM]

    answer_queries()  # the model's threads as the MCP server runs it (ADR 0075)
    settings = EmbedSettings.from_env()
    embedder = from_settings(settings)
    assert isinstance(embedder, LocalEmbedder), "GRAYMATTER_EMBED=local gives the local model"
    model = embedder.model
    config = {
        "facts": args.facts,
        "seed": args.seed,
        "source": source_key,
        "noise": args.noise,
        "model": model,
        "texts_sha256": hashlib.sha256("\n".join(planned.texts).encode()).hexdigest(),
    }

    started = time.perf_counter()
    embedder.runtime()  # the model loads once per process, before any clock
    load_model_s = time.perf_counter() - started
    gc.callbacks.append(GC)

    with tempfile.TemporaryDirectory(prefix="hybrid-bench-") as tmp:
        root = args.keep_store or Path(tmp)
        path, manifest_path = root / "store", root / MANIFEST
        build: dict[str, Any]
        if path.exists():
            if not manifest_path.exists():
                raise SystemExit(f"{path} exists without {MANIFEST}: remove it or name another")
            manifest = json.loads(manifest_path.read_text())
            if manifest["config"] != config:
                raise SystemExit(
                    f"the store in {root} was built with {manifest['config']}, not {config}: "
                    "remove it or name another --keep-store"
                )
            store = LmdbStore.open(path, map_size=4 << 30, clock_fn=lambda: NOW)
            ids = manifest["ids"]
            build = {**manifest["build"], "reused": True}
        else:
            started = time.perf_counter()
            used = {i: embedded[i] for i in sorted(set(planned.source))}
            sources, fresh, embed_s = embed_sources(embedder, used, args.cache or Path(tmp))
            build = {
                "source_texts": len(used),
                "source_pieces_embedded": fresh,
                "source_embedding_s": embed_s,
            }
            store, ids, steps = build_store(path, planned, sources, model, args.noise, args.seed)
            build.update(steps, total_s=time.perf_counter() - started, reused=False)
            root.mkdir(parents=True, exist_ok=True)
            manifest_path.write_text(json.dumps({"config": config, "build": build, "ids": ids}))
        try:
            store_check = check_store(store, model, args.facts)
            # The paraphrase facts' ids, by their text (the planned order is shuffled).
            position = {text: i for i, text in enumerate(planned.texts)}
            para_ids = {
                pid: ids[position[text]] for pid, text in zip(para.ids, para.texts, strict=True)
            }
            # What this script built the store from is not what a server holds: drop it, so
            # the collector's full passes while timing walk the product's objects only
            # (with the script's 100k-entry lists kept, a full pass took 26 ms, not 6).
            label, distinct = source.label, len(set(planned.source))
            del source, planned, embedded, ids, position, pool
            manifest = {}
            gc.collect()

            cached = StoreQueryVectors(store, embedder, settings.query_timeout, cache=True)
            oneshot = StoreQueryVectors(store, embedder, settings.query_timeout, cache=False)
            assert cached.cache is not None
            started = time.perf_counter()
            cached.nearest(AGENT, warm[0], 8)  # starts the cache's build
            assert cached.cache.wait(AGENT, timeout=600), "the vector cache was not built"
            cache_s = time.perf_counter() - started

            # What the MCP server does once it is serving, and again once each agent's
            # vector copy is built (cli/mcp.py; the TUI does the same at mount, ADR
            # 0068): its long-lived objects leave the collector's full passes.
            if not args.no_freeze:
                gc.collect()
                gc.freeze()
            results: list[SetResult] = []
            result, _, _, _ = measure_set(
                f"{'LoCoMo' if source_key == 'locomo' else 'synthetic'} questions",
                questions,
                warm,
                store,
                embedder,
                cached,
                oneshot,
                args.k,
            )
            results.append(result)
            result, keyword, by_cached, _ = measure_set(
                "paraphrase queries", para.queries, warm, store, embedder, cached, oneshot, args.k
            )
            targets = [para_ids[t] for t in para.targets]
            found_hybrid = sum(
                t in answer.ids for t, answer in zip(targets, by_cached, strict=True)
            )
            found_keyword = sum(t in answer.ids for t, answer in zip(targets, keyword, strict=True))
            result.checks.update(
                target_in_top_k_hybrid=found_hybrid, target_in_top_k_keyword=found_keyword
            )
            results.append(result)
            profiled = (
                profile(store, cached, questions[: args.profile], args.k) if args.profile else ""
            )
        finally:
            store.close()

    load_end = load_average()
    for r in results:
        same = r.checks["hybrid_cached_equals_oneshot"]
        assert same >= 0.95 * r.checks["queries"], f"{r.name}: cached and one-shot agree on {same}"
    assert found_hybrid > found_keyword, (
        f"hybrid found {found_hybrid} paraphrase targets, keyword-only {found_keyword}"
    )
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset (OpenBLAS default: one per core)")
    print(
        f"hybrid_latency_bench: {args.facts:,} facts of one agent ({label}; "
        f"{distinct:,} distinct source texts, noise {args.noise}), model {model} "
        f"({DIMENSION}-d, {settings.threads} onnxruntime thread(s)), k={args.k}, seed "
        f"{args.seed}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"OPENBLAS_NUM_THREADS={blas}, {os.cpu_count()} CPUs"
    )
    print(f"load average (1, 5, 15 min): start {load_start}, end {load_end}")
    frozen = "left unfrozen (--no-freeze)" if args.no_freeze else "frozen once set up, as a server"
    print(f"heap: {frozen}")
    if build["reused"]:
        print(f"store reused from {args.keep_store} (built earlier in {build['total_s']:.0f} s)")
    else:
        print(
            f"store built in {build['total_s']:.1f} s: {build['source_pieces_embedded']:,} source "
            f"pieces embedded in {build['source_embedding_s']:.1f} s (the rest from the cache), "
            f"facts put in {build['facts_put_s']:.1f} s, vectors written in "
            f"{build['vectors_written_s']:.1f} s"
        )
    print(
        f"store: {store_check['live']:,} live facts, {store_check['with_vectors']:,} with a "
        f"vector, model {store_check['model']}/{store_check['dimension']}, backlog 0; model "
        f"loaded in {load_model_s:.2f} s; vector cache built in {cache_s:.2f} s"
    )
    for r in results:
        print()
        print("\n".join(table(r)))
        c = r.checks
        print()
        print(
            f"checks: `nearest` cache == blocks for "
            f"{c['search_cache_equals_blocks']}/{c['queries']}, "
            f"hybrid cached == one-shot for {c['hybrid_cached_equals_oneshot']}/{c['queries']}; "
            f"{c['mean_hits_from_vectors']:.1f} of each top {args.k} came through the vector signal"
            + (
                f"; paraphrase target in the top {args.k}: hybrid {c['target_in_top_k_hybrid']}, "
                f"keyword-only {c['target_in_top_k_keyword']}"
                if "target_in_top_k_hybrid" in c
                else ""
            )
        )
    goal = results[0].rows["hybrid_cached"].summary()["wall"]
    met = goal["p50"] <= GOAL_P50_MS and goal["p99"] <= GOAL_P99_MS
    print()
    print(
        f"goal (issue 22) hybrid cached p50 <= {GOAL_P50_MS:g} ms, p99 <= {GOAL_P99_MS:g} ms: "
        f"p50 {goal['p50']:.1f} ms, p99 {goal['p99']:.1f} ms: {'met' if met else 'NOT met'}"
    )
    print(f"run took {time.perf_counter() - began:.0f} s")
    if profiled:
        print()
        print(f"cProfile, {min(args.profile, len(questions))} cached hybrid queries:")
        print(profiled)
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "config": {**config, "k": args.k, "queries": len(questions)},
                    "environment": {
                        "heap_frozen": not args.no_freeze,
                        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
                        "onnxruntime_threads": settings.threads,
                        "python": platform.python_version(),
                        "numpy": np.__version__,
                        "load_average_start": load_start,
                        "load_average_end": load_end,
                    },
                    "build": build,
                    "store": store_check,
                    "model_load_s": load_model_s,
                    "cache_build_s": cache_s,
                    "sets": {
                        r.name: {
                            "checks": r.checks,
                            "ms": {key: s.summary() for key, s in r.rows.items()},
                        }
                        for r in results
                    },
                    "goal_met": met,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
