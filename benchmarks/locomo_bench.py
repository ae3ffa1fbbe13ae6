"""Retrieval quality of recall's signals and of their fusion, in one run, on real stores.

    python benchmarks/locomo_bench.py [--data ../shared/data/locomo]
        [--embedder-module PATH] [--cache DIR] [--json OUT] [--threads 1] [--quick]
        [--forms none,month-year,date,written] [--date-weights 0,0.05,0.2]

Data sets (each memory an agent of one LMDB store, facts written with `put_many`):
- LoCoMo (Maharana et al., ACL 2024), read from `--data` (default ../shared/data/locomo,
  beside the repository; never part of it: its licence allows measurement only). Ten
  conversations; one fact per session ("session" level) or per turn ("turn" level), each
  written with its session's date as `created_at`, as an agent's memory would hold it.
  The questions of categories 1-4 whose evidence names turns of the conversation; a
  question is answered at k when any (`any@k`) or all (`all@k`) of its evidence sessions
  or turns are in the top k.
- The paraphrase set (benchmarks/paraphrases.json, ours): 420 facts, 70 queries that share
  no stemmed word with their target (or only an identifier); recall@k of the target.

Methods, all through `recall.rank` except BM25:
- keyword: `rank(..., vectors=NO_VECTORS)` (the keyword signal alone, default weights);
- vector: `rank` with weights V=1, K=0 (the vector signal's order);
- hybrid: `rank` with the default weights (V 0.7, K 0.3, R 0; ADR 0061);
- bm25: a real BM25 baseline (the `bm25s` package, Lucene variant, k1 1.2, b 0.75) over
  the same index terms (the store's Analyzer: stems, stop-words), per agent.

Date terms: the LoCoMo stores are also built with the fact's date as keyword terms ahead
of its text (the vectors stay those of the text): `month-year` ("May 2023"), `date`
("May 8, 2023") and `written` (LoCoMo's own "1:56 pm on 8 May, 2023"), to decide whether
the keyword index should hold a fact's `created_at` (ADR 0061). `--forms none` builds the
plain stores only (each form embeds its texts again). `--date-weights` adds hybrid rows
with other weights of recall's date prior (ADR 0069; every `rank` method has the default).

The embedder: the product's local model when `graymatter_tui.embedding` has one
(GRAYMATTER_EMBED=local), its vectors written by the product's own embedding worker; else
`--embedder-module`, a Python file defining `Embedder(threads=...)` with `embed(texts)`
(unit rows) and `windows(text)` (the pieces of a fact that get a vector each), whose
vectors are written through `store_vectors`. `--cache` keeps every embedding on disk
(keyed by model and text), so a second run embeds nothing.

Without the LoCoMo data the benchmark says so and exits 1; nothing else is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo"
PARAPHRASES = Path(__file__).resolve().parent / "paraphrases.json"
MODEL = "bench-embedder"
EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
NOW = datetime(2027, 1, 1, tzinfo=UTC)
DATE_FORMS = ("none", "month-year", "date", "written")
KS = (5, 10)
PARA_KS = (5, 8, 10)
GOALS = {
    ("session", "any@5"): 0.92,
    ("session", "all@5"): 0.80,
    ("turn", "any@5"): 0.65,
    ("para", "r@8"): 0.90,
}


@dataclass
class Query:
    text: str
    evidence: set[int]  # positions of facts in the memory


@dataclass
class Memory:
    """One agent's facts (text, created_at, LoCoMo's written date) and its questions."""

    agent: str
    texts: list[str]
    created: list[datetime]
    written: list[str]
    queries: list[Query] = field(default_factory=list)


def _when(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def load_locomo(data: Path) -> tuple[list[Memory], list[Memory], int]:
    """(session memories, turn memories, questions dropped for unusable evidence)."""
    sessions: list[Memory] = []
    turns: list[Memory] = []
    dropped = 0
    for path in sorted(data.glob("*.json")):
        raw = json.loads(path.read_text())
        conversation = raw.get("conversation", raw)
        numbers = sorted(
            int(m.group(1))
            for key, value in conversation.items()
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(value, list) and value
        )
        session = Memory(f"locomo-{path.stem}", [], [], [])
        turn = Memory(f"locomo-{path.stem}", [], [], [])
        at_session: dict[int, int] = {}
        at_turn: dict[str, int] = {}
        for n in numbers:
            written = conversation[f"session_{n}_date_time"]
            when = _when(written)
            at_session[n] = len(session.texts)
            session.texts.append("\n".join(_turn_text(t) for t in conversation[f"session_{n}"]))
            session.created.append(when)
            session.written.append(written)
            for i, t in enumerate(conversation[f"session_{n}"]):
                at_turn[t["dia_id"]] = len(turn.texts)
                turn.texts.append(_turn_text(t))
                turn.created.append(when + timedelta(seconds=i))
                turn.written.append(written)
        for qa in raw["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            cited = EVIDENCE.findall(" ".join(qa.get("evidence", [])))
            found = [(int(a), f"D{a}:{b}") for a, b in cited if f"D{a}:{b}" in at_turn]
            if not found:
                dropped += 1
                continue
            session.queries.append(Query(qa["question"], {at_session[a] for a, _ in found}))
            turn.queries.append(Query(qa["question"], {at_turn[d] for _, d in found}))
        sessions.append(session)
        turns.append(turn)
    return sessions, turns, dropped


def load_paraphrases() -> Memory:
    data = json.loads(PARAPHRASES.read_text())
    rng = random.Random(5)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    position = {fact["id"]: i for i, fact in enumerate(data["facts"])}
    texts = [fact["text"] for fact in data["facts"]]
    # created_at unrelated to the role of a fact: recency carries no information here.
    created = [base + timedelta(minutes=rng.randint(0, 300 * 24 * 60)) for _ in texts]
    memory = Memory("paraphrases", texts, created, [""] * len(texts))
    memory.queries = [Query(q["query"], {position[q["target"]]}) for q in data["queries"]]
    return memory


def dated(memory: Memory, form: str, index: int) -> str:
    """Fact `index`'s text with its date as terms ahead of it, in `form`."""
    text = memory.texts[index]
    when = memory.created[index]
    if form == "none":
        return text
    if form == "month-year":
        return f"{when:%B %Y}\n{text}"
    if form == "date":
        return f"{when:%B} {when.day}, {when.year}\n{text}"
    return f"{memory.written[index]}\n{text}"


# ---- embedders --------------------------------------------------------------------------


class DiskCache:
    """text -> unit vector for one model, kept in `directory` between runs."""

    def __init__(self, directory: Path | None, model: str) -> None:
        import numpy as np

        self.np = np
        self.path = None if directory is None else directory / f"{model}.npz"
        self.rows: dict[str, Any] = {}
        if self.path is not None and self.path.exists():
            held = np.load(self.path, allow_pickle=False)
            for key, row in zip(held["keys"].tolist(), held["rows"], strict=True):
                self.rows[key] = row
        self.added = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def save(self) -> None:
        if self.path is None or not self.added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.rows)
        rows = self.np.stack([self.rows[k] for k in keys]).astype(self.np.float32)
        self.np.savez(self.path, keys=self.np.array(keys), rows=rows)
        self.added = 0


class Cached:
    """An `Embedder` (embedding.base) over a function embedding texts, every vector kept
    in a `DiskCache`: the product's embedding worker and query signal call it as they
    would any embedding client."""

    name = "bench"

    def __init__(
        self,
        model: str,
        embed: Callable[[list[str]], Any],
        cache: DiskCache,
        pieces: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.model = model
        self._pieces = pieces
        self.where = "the benchmark's embedder"
        self.dimension: int | None = None
        self._embed = embed
        self.cache = cache
        self.calls = 0

    def pieces(self, text: str) -> list[str]:
        """The pieces the wrapped embedder would give a vector each (the whole text when it
        names none)."""
        return self._pieces(text) if self._pieces is not None else [text]

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Any:
        np = self.cache.np
        keys = [DiskCache.key(t) for t in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.cache.rows)
        )
        if missing:
            self.calls += 1
            for text, row in zip(missing, self._embed(missing), strict=True):
                self.cache.rows[DiskCache.key(text)] = np.asarray(row, dtype=np.float32)
                self.cache.added += 1
        return np.stack([self.cache.rows[k] for k in keys]) if texts else np.zeros((0, 1))


@dataclass
class Embedding:
    """How facts get vectors: `client` (an embedding.base.Embedder) and `pieces`, or None
    when the product's worker cuts facts itself."""

    client: Cached
    pieces: Callable[[str], list[str]] | None
    label: str


def product_embedder(cache_dir: Path | None) -> Embedding | None:
    """The product's local model, when `graymatter_tui.embedding` has one."""
    from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings

    if "local" not in {name.value for name in EmbedderName}:
        return None
    os.environ["GRAYMATTER_EMBED"] = "local"
    from graymatter_tui.embedding.factory import from_settings

    inner = from_settings(EmbedSettings.from_env())
    if inner is None:
        return None
    cache = DiskCache(cache_dir, f"product-{inner.model}")
    client = Cached(
        inner.model, lambda texts: inner.embed(texts, timeout=600.0), cache, inner.pieces
    )
    return Embedding(client, None, f"product embedder {inner.name}/{inner.model}")


def module_embedder(path: Path, threads: int, cache_dir: Path | None) -> Embedding:
    """`Embedder` of the Python file at `path` (onnxruntime loads before anything else
    that may bring its own C++ runtime)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as the product has it (ADR 0080)
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    spec = importlib.util.spec_from_file_location("bench_embedder", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"locomo_bench: cannot load an embedder from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inner = module.Embedder(threads=threads)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    cache = DiskCache(cache_dir, f"module-{digest}")
    client = Cached(f"{MODEL}-{digest}", lambda texts: inner.embed(texts, batch=16), cache)
    return Embedding(client, inner.windows, f"{path.name} (windows of its own)")


# ---- stores ----------------------------------------------------------------------------


def build_store(
    directory: Path, memories: list[Memory], form: str, embedding: Embedding | None
) -> tuple[Any, dict[str, list[str]]]:
    """An LMDB store holding every memory (an agent each), with vectors when `embedding`
    is given; the fact ids of each agent in memory order."""
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.embedding.worker import Worker
    from graymatter_tui.storage import NewFact

    store = LmdbStore.open(directory, map_size=4 << 30, clock_fn=lambda: NOW)
    ids: dict[str, list[str]] = {}
    for memory in memories:
        items = [
            NewFact(memory.agent, dated(memory, form, i), created_at=when, accessed_at=when)
            for i, when in enumerate(memory.created)
        ]
        ids[memory.agent] = [fact.id for fact in store.put_many(items)]
    if embedding is None:
        return store, ids
    store.start_embedding(embedding.client.model)
    if embedding.pieces is None:
        Worker(store, embedding.client, batch=64).drain()  # the product cuts facts itself
        return store, ids
    plain = {
        fact_id: memory.texts[i]
        for memory in memories
        for i, fact_id in enumerate(ids[memory.agent])
    }
    np = embedding.client.cache.np
    while waiting := store.embed_waiting(512):
        rows: list[tuple[str, str, str]] = []
        texts: list[str] = []
        for agent, fact_id, text in waiting:
            parts = embedding.pieces(plain[fact_id])  # vectors of the text, not its date
            rows += [(agent, fact_id, text)] * len(parts)
            texts += parts
        stored, _ = store.store_vectors(
            embedding.client.model, rows, np.asarray(embedding.client.embed(texts))
        )
        if not stored:
            raise SystemExit("locomo_bench: the store refused the vectors")
    return store, ids


# ---- methods and measures ---------------------------------------------------------------


def bm25_lists(memory: Memory, form: str, analyzer: Any, k: int) -> list[list[int]]:
    import bm25s

    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    corpus = [analyzer.terms(dated(memory, form, i)) or ["\x00"] for i in range(len(memory.texts))]
    retriever.index(corpus, show_progress=False)
    vocabulary = retriever.vocab_dict
    out = []
    for query in memory.queries:
        terms = [t for t in analyzer.terms(query.text) if t in vocabulary]
        if not terms:
            out.append([])
            continue
        scores = retriever.get_scores(terms)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        out.append([i for i in order[:k] if scores[i] > 0])
    return out


def rank_lists(
    store: Any, memory: Memory, ids: list[str], weights: Any, vectors: Any, k: int
) -> list[list[int]]:
    from graymatter_tui.recall.ranking import rank

    position = {fact_id: i for i, fact_id in enumerate(ids)}
    return [
        [
            position[h.fact.id]
            for h in rank(store, memory.agent, q.text, k=k, weights=weights, vectors=vectors)
        ]
        for q in memory.queries
    ]


def measure(memories: list[Memory], lists: list[list[list[int]]], para: bool) -> dict[str, float]:
    sums: dict[str, float] = {}
    count = 0
    for memory, per_query in zip(memories, lists, strict=True):
        for query, top in zip(memory.queries, per_query, strict=True):
            count += 1
            for k in PARA_KS if para else KS:
                got = set(top[:k]) & query.evidence
                if para:
                    sums[f"r@{k}"] = sums.get(f"r@{k}", 0.0) + bool(got)
                else:
                    sums[f"any@{k}"] = sums.get(f"any@{k}", 0.0) + bool(got)
                    sums[f"all@{k}"] = sums.get(f"all@{k}", 0.0) + (got == query.evidence)
    return {name: total / max(count, 1) for name, total in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder-module", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=None, help="keep embeddings here")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="two conversations only")
    parser.add_argument(
        "--date-weights",
        default="",
        help="also rank hybrid with these date weights (D of ADR 0069), e.g. 0,0.05,0.2",
    )
    parser.add_argument(
        "--forms",
        default=",".join(DATE_FORMS),
        help="date-term forms to build LoCoMo stores with (each embeds its texts again)",
    )
    args = parser.parse_args()
    if not args.data.is_dir() or not any(args.data.glob("*.json")):
        print(
            f"locomo_bench: no LoCoMo data at {args.data} (its conversations' *.json files); "
            "this benchmark reads them from ../shared/data/locomo beside the repository "
            "(or --data DIR) and never ships them. Nothing measured.",
            file=sys.stderr,
        )
        raise SystemExit(1)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(args.threads))
    embedding = product_embedder(args.cache)
    if embedding is None:
        if args.embedder_module is None:
            print(
                "locomo_bench: the product has no local embedder yet (GRAYMATTER_EMBED=local); "
                "name one with --embedder-module PATH. Nothing measured.",
                file=sys.stderr,
            )
            raise SystemExit(1)
        embedding = module_embedder(args.embedder_module, args.threads, args.cache)

    from graymatter_tui.core.tokens import Analyzer
    from graymatter_tui.embedding.query import StoreQueryVectors
    from graymatter_tui.recall.ranking import RecallWeights
    from graymatter_tui.recall.vector_signal import NO_VECTORS

    started = time.perf_counter()
    sessions, turns, dropped = load_locomo(args.data)
    if args.quick:
        sessions, turns = sessions[:2], turns[:2]
    para = load_paraphrases()
    analyzer = Analyzer("english")
    hybrid, vector_only = RecallWeights(), RecallWeights(0.0, 0.0, vector=1.0)
    results: dict[str, Any] = {
        "embedder": embedding.label,
        "questions": sum(len(m.queries) for m in sessions),
        "dropped": dropped,
        "facts": {
            "session": sum(len(m.texts) for m in sessions),
            "turn": sum(len(m.texts) for m in turns),
            "para": len(para.texts),
        },
        "tables": {},
    }
    timings: dict[str, float] = {}
    k = max(max(KS), max(PARA_KS))
    with tempfile.TemporaryDirectory() as tmp:
        for level, memories in (("session", sessions), ("turn", turns), ("para", [para])):
            forms = ("none",) if level == "para" else tuple(args.forms.split(","))
            for form in forms:
                t0 = time.perf_counter()
                store, ids = build_store(Path(tmp) / f"{level}-{form}", memories, form, embedding)
                embedding.client.cache.save()
                built = time.perf_counter() - t0
                signal = StoreQueryVectors(store, embedding.client, 600.0)
                methods: dict[str, list[list[list[int]]]] = {}
                t0 = time.perf_counter()
                methods["keyword"] = [
                    rank_lists(store, m, ids[m.agent], RecallWeights(), NO_VECTORS, k)
                    for m in memories
                ]
                if form == "none":
                    methods["vector"] = [
                        rank_lists(store, m, ids[m.agent], vector_only, signal, k) for m in memories
                    ]
                methods["hybrid"] = [
                    rank_lists(store, m, ids[m.agent], hybrid, signal, k) for m in memories
                ]
                for d in (float(x) for x in args.date_weights.split(",") if x):
                    weights = RecallWeights(date=d)
                    methods[f"hybrid D={d:g}"] = [
                        rank_lists(store, m, ids[m.agent], weights, signal, k) for m in memories
                    ]
                methods["bm25"] = [bm25_lists(m, form, analyzer, k) for m in memories]
                embedding.client.cache.save()
                ranked = time.perf_counter() - t0
                store.close()
                table = {
                    name: measure(memories, lists, level == "para")
                    for name, lists in methods.items()
                }
                results["tables"][f"{level}/{form}"] = table
                timings[f"{level}/{form}"] = round(built + ranked, 1)
                print(
                    f"[{level}/{form}] built in {built:.0f}s, ranked in {ranked:.0f}s: "
                    + json.dumps(
                        {n: {m: round(v, 3) for m, v in t.items()} for n, t in table.items()}
                    ),
                    flush=True,
                )
    results["seconds"] = timings
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    report(results)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))


def report(results: dict[str, Any]) -> None:
    tables = results["tables"]
    print()
    print(
        f"locomo_bench: {results['questions']} LoCoMo questions (categories 1-4; "
        f"{results['dropped']} dropped: no usable evidence), facts {results['facts']}, "
        f"embedder {results['embedder']}, {results['total_seconds']:.0f} s"
    )
    print()
    print(
        "| method | S any@5 | S all@5 | S any@10 | S all@10 | T any@5 | T all@5 | T any@10 "
        "| T all@10 | P r@5 | P r@8 | P r@10 |"
    )
    print("|---|" + "---:|" * 11)
    session, turn, para = tables["session/none"], tables["turn/none"], tables["para/none"]
    swept = [name for name in session if name.startswith("hybrid D=")]
    for name in ("keyword", "bm25", "vector", "hybrid", *swept):
        cells = [session[name][m] for m in ("any@5", "all@5", "any@10", "all@10")]
        cells += [turn[name][m] for m in ("any@5", "all@5", "any@10", "all@10")]
        cells += [para[name][m] for m in ("r@5", "r@8", "r@10")] if name in para else []
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    print()
    worst = min(
        (t["hybrid"][m] - max(t["keyword"][m], t["vector"][m]), key, m)
        for key in ("session/none", "turn/none", "para/none")
        for t in [tables[key]]
        for m in t["hybrid"]
    )
    print(f"hybrid minus its best single signal, worst: {worst[0]:+.3f} ({worst[1]} {worst[2]})")
    for (level, metric), goal in GOALS.items():
        got = tables[f"{level}/none"]["hybrid"][metric]
        print(f"goal {level} {metric} >= {goal}: {got:.3f} {'met' if got >= goal else 'NOT met'}")
    print()
    print("date terms in the keyword index (vectors unchanged):")
    print()
    print(
        "| date terms | method | S any@5 | S all@5 | S any@10 | S all@10 | T any@5 | T all@5 "
        "| T any@10 | T all@10 |"
    )
    print("|---|---|" + "---:|" * 8)
    for form in DATE_FORMS:
        if f"session/{form}" not in tables:
            continue
        for name in ("keyword", "bm25", "hybrid"):
            s, t = tables[f"session/{form}"][name], tables[f"turn/{form}"][name]
            cells = [s[m] for m in ("any@5", "all@5", "any@10", "all@10")]
            cells += [t[m] for m in ("any@5", "all@5", "any@10", "all@10")]
            print(f"| {form} | {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
