"""The gate: canonical facts carrying unique markers among many filler facts; recall@8 of
every canonical fact measured before and after several consolidation cycles.

    python -m benchmarks.retrieval_quality.gate          (from the repository root)

A canonical fact counts as recalled when one of the top 8 live facts for its query still
contains its marker (the fact itself or a summary that kept the marker). Each canonical
fact has two queries: its template's own words, and the same asked in other inflections
("vaults codes projects Falcons"), which only a stemming store matches.

With `paraphrases=True` the corpus also holds `PARAPHRASES`: facts asked for in other
words that share no stemmed word with them, only a concept of the fixed concept table
(tests/support/concepts.py), so only the vector signal can find them: `vectors="text"`
(one concept-table vector per fact, brute-force cosine) or `vectors="sentences"` (a
fact scored by its best sentence, as a pipeline embedding long facts in chunks would), or
`vectors="stored"`: the product's own pipeline (the embedding worker storing a vector per
sentence, ADR 0038, and the store's search) against the scripted embedding server, whose
model is the same concept table.

    python -m benchmarks.retrieval_quality.gate --hybrid    (adds the hybrid table)
    python -m benchmarks.retrieval_quality.gate --sweep     (vector weights and floors)
"""

from __future__ import annotations

import random
import re
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.retrieval_quality.summarisers import SUMMARISERS  # noqa: E402
from graymatter_tui.backends.lmdb import LmdbStore  # noqa: E402
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions  # noqa: E402
from graymatter_tui.consolidation.summarisers.ollama import OllamaSummariser  # noqa: E402
from graymatter_tui.embedding.ollama import OllamaEmbedder  # noqa: E402
from graymatter_tui.embedding.query import StoreQueryVectors  # noqa: E402
from graymatter_tui.embedding.worker import Worker  # noqa: E402
from graymatter_tui.recall.ranking import RecallWeights, rank  # noqa: E402
from graymatter_tui.recall.vector_signal import NO_VECTORS, QueryVectors  # noqa: E402
from graymatter_tui.storage import NewFact  # noqa: E402
from tests.support.concept_vectors import ConceptVectors  # noqa: E402
from tests.support.embedding_fake import EmbeddingOverSocket  # noqa: E402
from tests.support.ollama_fake import FakeOllama  # noqa: E402

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
AGENT = "gate"
CODENAMES = (
    "falcon heron osprey kestrel merlin harrier condor petrel gannet plover avocet curlew "
    "dunlin godwit lapwing puffin razorbill shearwater skua tern wigeon bittern egret ibis "
    "jacana kittiwake loon nightjar oriole pipit quail rook siskin thrush twite vireo "
    "wagtail wren yellowhammer bunting chough dipper fulmar grebe hobby jay linnet "
    "moorhen nuthatch ouzel pochard redstart scoter smew stint teal whimbrel woodcock"
).split()
TEMPLATES = (
    "The vault code for project {name} is {marker}.",
    "Project {name} ships from warehouse {marker}.",
    "The escalation ticket for {name} is {marker}.",
    "Customer account for {name} has reference {marker}.",
)
# The same questions in other inflections (plurals, -ing), one per template; the name in
# the plural too ("Ibis" stays as it is: the plural of a name ending in s is itself).
INFLECTED = (
    "vaults codes projects {names}",
    "projects shipping warehouses {names}",
    "escalations tickets {names}",
    "customers accounts references {names}",
)
FILLER = (
    "The team reviewed the deployment checklist and updated the runbook.",
    "Standup moved to the afternoon for the rest of the month.",
    "The project board was cleaned up and stale cards archived.",
    "Someone asked about the vault policy during the retro.",
    "Warehouse staff rotated shifts after the holiday break.",
    "The customer survey closes at the end of the quarter.",
    "Escalation rules were explained to the new hires.",
    "Code review turnaround improved after the new process.",
)

# (fact with a {marker}, question in other words): one concept of the table each, no
# stemmed word in common (tests/test_retrieval_gate.py checks both).
PARAPHRASES = (
    ("The physician on call is reachable at extension {marker}.", "which doctor is on duty"),
    ("The company automobile is parked in bay {marker}.", "where is the car"),
    ("Our attorney filed brief {marker} last spring.", "who is the legal counsel"),
    ("Contractor wages are approved under budget line {marker}.", "how is salary decided"),
    ("The cafeteria closes early; order form {marker}.", "when does the canteen shut"),
    ("The research vessel docks at pier {marker}.", "where does the boat moor"),
    ("Badge photographs are stored in folder {marker}.", "where do pictures for cards live"),
    ("Onboarding commences with orientation session {marker}.", "how do newcomers begin"),
    (
        "The defective monitor was returned under RMA {marker}.",
        "what happened to the faulty screen",
    ),
    ("Procurement approved order {marker} for laptops.", "who can buy hardware"),
    ("The journey to the summit is booked as {marker}.", "travel plans for the offsite"),
    ("A rapid response unit handles case {marker}.", "who answers quickly"),
)


@dataclass(frozen=True)
class GateResult:
    summariser: str
    guard: str
    recall_before: float
    recall_after: float
    consumed: int
    kept_by_guard: int
    applied_cycles: int
    # recall@8 of the inflected queries (`INFLECTED`), before and after the cycles.
    inflected_before: float = 0.0
    inflected_after: float = 0.0
    # Measured from the summaries alone, without the guard (see `_judge`): batch facts
    # shown, facts whose whole text the summary holds verbatim, facts with a number
    # (a marker or a note number) the summary does not hold at all.
    shown: int = 0
    verbatim: int = 0
    lost: int = 0
    # recall@8 of the paraphrased questions (`PARAPHRASES`), when the corpus holds them.
    paraphrase_before: float = 0.0
    paraphrase_after: float = 0.0


@dataclass(frozen=True)
class Canonical:
    query: str
    marker: str
    inflected: str = ""


def build_corpus(
    store: LmdbStore, n_canonical: int, n_filler: int, seed: int, *, paraphrases: bool = False
) -> tuple[list[Canonical], list[Canonical]]:
    """(canonical facts, paraphrased facts) after inserting them and the filler."""
    rng = random.Random(seed)
    items: list[NewFact] = []
    canon: list[Canonical] = []
    for index in range(n_canonical):
        name = CODENAMES[index % len(CODENAMES)].capitalize() + (
            "" if index < len(CODENAMES) else str(index // len(CODENAMES))
        )
        template = TEMPLATES[index % len(TEMPLATES)]
        marker = f"{rng.randint(10000, 99999)}" if index % 2 else f"KX-{rng.randint(1000, 9999)}"
        text = template.format(name=name, marker=marker)
        query = " ".join(w for w in template.split() if "{" not in w and len(w) > 3)
        names = name if name.endswith("s") else f"{name}s"
        inflected = INFLECTED[index % len(TEMPLATES)].format(names=names)
        canon.append(Canonical(query=f"{query} {name}", marker=marker, inflected=inflected))
        items.append(_weak(text, rng))
    for index in range(n_filler):
        items.append(_weak(f"{FILLER[index % len(FILLER)]} (note {index})", rng))
    reworded: list[Canonical] = []
    if paraphrases:
        for text, question in PARAPHRASES:
            marker = f"{rng.randint(10000, 99999)}"
            items.append(_weak(text.format(marker=marker), rng))
            reworded.append(Canonical(query=question, marker=marker))
    rng.shuffle(items)
    store.put_many(items)
    return canon, reworded


def _weak(text: str, rng: random.Random) -> NewFact:
    """Old and unread, so decay puts it among the weakest and a batch takes it."""
    age = timedelta(days=rng.uniform(60, 200))
    return NewFact(agent_id=AGENT, text=text, created_at=NOW - age, accessed_at=NOW - age)


DIGITS = re.compile(r"\d+")


def _judge(batch: list[str], summary: str) -> tuple[int, int]:
    """(verbatim, lost) for one batch: a fact held verbatim kept every detail, so a correct
    guard consumes it; a fact with a digit run absent from the summary lost a marker or a
    number, so a correct guard keeps it. Every fact of this corpus carries digits."""
    digits = set(DIGITS.findall(summary))
    verbatim = sum(1 for text in batch if text in summary)
    lost = sum(1 for text in batch if set(DIGITS.findall(text)) - digits)
    return verbatim, lost


def recall_at_8(
    store: LmdbStore,
    canon: list[Canonical],
    *,
    inflected: bool = False,
    vectors: QueryVectors = NO_VECTORS,
    weights: RecallWeights | None = None,
    min_similarity: float | None = None,
) -> float:
    if not canon:
        return 0.0
    hits = 0
    for item in canon:
        query = item.inflected if inflected else item.query
        found = rank(
            store,
            AGENT,
            query,
            k=8,
            vectors=vectors,
            weights=weights,
            min_similarity=min_similarity,
        )
        if any(item.marker in hit.fact.text for hit in found):
            hits += 1
    return hits / len(canon)


STORED_MODEL = "nomic-embed-text"


def _signal(
    store: LmdbStore, vectors: str, stack: ExitStack
) -> tuple[QueryVectors, Callable[[], object]]:
    """The vector signal, and what brings its vectors up to date before a measure."""
    if vectors == "none":
        return NO_VECTORS, lambda: None
    if vectors == "stored":
        server = stack.enter_context(EmbeddingOverSocket())
        store.start_embedding(STORED_MODEL)
        worker = Worker(store, OllamaEmbedder(server.url, STORED_MODEL, 10.0), batch=64)
        query = OllamaEmbedder(server.url, STORED_MODEL, 10.0)
        return StoreQueryVectors(store, query, 10.0), worker.drain
    if vectors not in ("text", "sentences"):
        raise ValueError(f"vectors must be none, text, sentences or stored, got {vectors!r}")
    return ConceptVectors(store, per_sentence=vectors == "sentences"), lambda: None


def run_gate(
    summariser: str,
    guard: str,
    *,
    server: FakeOllama,
    n_canonical: int = 40,
    n_filler: int = 360,
    cycles: int = 6,
    seed: int = 11,
    stem_language: str = "english",
    paraphrases: bool = False,
    vectors: str = "none",
    weights: RecallWeights | None = None,
    min_similarity: float | None = None,
) -> GateResult:
    server.set_responder(SUMMARISERS[summariser]())
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        store = LmdbStore.open(
            Path(tmp) / "store", clock_fn=lambda: NOW, stem_language=stem_language
        )
        try:
            canon, reworded = build_corpus(
                store, n_canonical, n_filler, seed, paraphrases=paraphrases
            )
            signal, catch_up = _signal(store, vectors, stack)

            def measure(items: list[Canonical], inflected: bool = False) -> float:
                return recall_at_8(
                    store,
                    items,
                    inflected=inflected,
                    vectors=signal,
                    weights=weights,
                    min_similarity=min_similarity,
                )

            catch_up()
            before = measure(canon)
            inflected_before = measure(canon, inflected=True)
            paraphrase_before = measure(reworded)
            consumed = kept = applied = shown = verbatim = lost = 0
            options = CycleOptions(threshold=20, max_batch=32, guard=guard)
            model = OllamaSummariser(
                server.url, server.model, timeout=10.0, transport=server.transport
            )
            for _ in range(cycles):
                record = Cycle(store, AGENT, model, options).run_sync()
                if record.outcome == "applied":
                    applied += 1
                    consumed += len(record.consumed)
                kept += sum(1 for v in record.verdicts if not v.consumed)
                texts = [item.text for item in record.batch_facts]
                shown += len(texts)
                held, missing = _judge(texts, record.summary_text)
                verbatim += held
                lost += missing
            catch_up()
            after = measure(canon)
            inflected_after = measure(canon, inflected=True)
            paraphrase_after = measure(reworded)
        finally:
            store.close()
    return GateResult(
        summariser,
        guard,
        before,
        after,
        consumed,
        kept,
        applied,
        inflected_before,
        inflected_after,
        shown,
        verbatim,
        lost,
        paraphrase_before,
        paraphrase_after,
    )


def main() -> None:
    stemming = "--stemming" in sys.argv[1:]
    print("Recall-quality gate: recall@8 of canonical facts before/after 6 cycles")
    print("| summariser | guard | recall before | recall after | facts consumed | kept by guard |")
    print("|---|---|---:|---:|---:|---:|")
    server = FakeOllama()
    for name in SUMMARISERS:
        for guard in ("off", "keys", "strict"):
            r = run_gate(name, guard, server=server)
            print(
                f"| {name} | {guard} | {r.recall_before:.2f} | {r.recall_after:.2f} | "
                f"{r.consumed} | {r.kept_by_guard} |"
            )
    if stemming:
        _stemming_table(server)
    if "--hybrid" in sys.argv[1:]:
        _hybrid_table(server)
    if "--sweep" in sys.argv[1:]:
        _sweep_table(server)


def _stemming_table(server: FakeOllama) -> None:
    """recall@8 of exact and inflected queries, keyword-only (no stemming) and
    keyword+stemming (English), before and after the cycles, guard off and on."""
    print()
    print(
        "| summariser | guard | stemming | exact before | exact after | inflected before "
        "| inflected after |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for name in ("lossless", "drops markers"):
        for guard in ("off", "keys"):
            for language in ("none", "english"):
                r = run_gate(name, guard, server=server, stem_language=language)
                print(
                    f"| {name} | {guard} | {language} | {r.recall_before:.2f} | "
                    f"{r.recall_after:.2f} | {r.inflected_before:.2f} | "
                    f"{r.inflected_after:.2f} |"
                )


# (label, stemming language, vector signal): the ways recall can run.
RECALL_MODES = (
    ("keyword-only", "none", "none"),
    ("keyword+stemming", "english", "none"),
    ("hybrid, a vector per fact", "english", "text"),
    ("hybrid, a vector per sentence", "english", "sentences"),
    ("hybrid, stored pipeline", "english", "stored"),
)


def _hybrid_table(server: FakeOllama) -> None:
    """recall@8 of exact, inflected and paraphrased queries for each recall mode, before
    and after the cycles, guard off and on, on the corpus with paraphrases."""
    print()
    print(
        "| summariser | guard | recall | exact before | exact after | inflected before "
        "| inflected after | paraphrase before | paraphrase after |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name in ("lossless", "drops markers"):
        for guard in ("off", "keys"):
            for label, language, vectors in RECALL_MODES:
                r = run_gate(
                    name,
                    guard,
                    server=server,
                    stem_language=language,
                    paraphrases=True,
                    vectors=vectors,
                )
                print(
                    f"| {name} | {guard} | {label} | {r.recall_before:.2f} | "
                    f"{r.recall_after:.2f} | {r.inflected_before:.2f} | "
                    f"{r.inflected_after:.2f} | {r.paraphrase_before:.2f} | "
                    f"{r.paraphrase_after:.2f} |"
                )


def _sweep_table(server: FakeOllama) -> None:
    """recall@8 (before → after) of exact and paraphrased questions for the vector share
    of the fusion (V / (V + K), ADR 0061) and similarity floors, a vector per fact and per
    sentence, lossless summaries with the guard off and lossy ones with it on."""
    print()
    print(
        "| vectors | vector share | floor | lossless/off exact | lossless/off paraphrase "
        "| drops markers/keys exact | drops markers/keys paraphrase |"
    )
    print("|---|---:|---:|---|---|---|---|")
    settings: list[tuple[float, float | None]] = [(w, None) for w in (0.25, 0.5, 0.7, 0.9)]
    settings += [(0.7, f) for f in (0.3, 0.5)]
    for vectors in ("text", "sentences"):
        for weight, floor in settings:
            cells = []
            for name, guard in (("lossless", "off"), ("drops markers", "keys")):
                r = run_gate(
                    name,
                    guard,
                    server=server,
                    paraphrases=True,
                    vectors=vectors,
                    weights=RecallWeights(1.0 - weight, 0.0, vector=weight),
                    min_similarity=floor,
                )
                cells.append(f"{r.recall_before:.2f} → {r.recall_after:.2f}")
                cells.append(f"{r.paraphrase_before:.2f} → {r.paraphrase_after:.2f}")
            shown = "none" if floor is None else floor
            print(f"| {vectors} | {weight} | {shown} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
