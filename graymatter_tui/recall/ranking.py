"""Recall: rank an agent's live facts for a query.

Up to three signals fused by reciprocal-rank fusion (k = 60): vector similarity (when a
`QueryVectors` is given and answers), a keyword signal (TF-IDF over the
store's inverted index, with stop-words removed and Unicode-aware tokens; term weight
`(1 + ln tf) · idf / (1 + ln length)`, times the share of the query's idf the fact
matches) and recency
(newer facts first; ids are time-ordered). Candidates are the facts that share at least
one keyword with the query plus the vector signal's nearest facts at or above
`MIN_SIMILARITY`, so recall never returns unrelated facts just for being new; a fact absent
from a signal gets no term from it. Tombstones are never in the index, at any weight, and
a vector candidate is re-read and dropped unless it is a live fact of the agent (a stale
vector never resurrects a tombstone); equal cosines share a vector rank. Ties break by
score, then older `created_at`, then id. Identical texts are returned once. Without a
vector signal the order is exactly the keyword + recency order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import Fact
from graymatter_tui.core.receipts import Lineage, lineage
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.recall.vector_signal import QueryVectors
from graymatter_tui.storage import KeywordIndex, MemoryStore

RRF_K = 60
# Terms held by more than this share of an agent's facts carry almost no information and
# would make a query walk most of the index; they are skipped unless nothing else matches.
COMMON_TERM_SHARE = 0.5
# A term held by more facts than this is scored over its newest this-many facts only, so
# no query walks more than this many postings per term (ADR 0044). Its idf still counts
# every fact holding it. Rarer terms, the ones that pick a fact out, are read whole.
POSTINGS_PER_TERM = 1_000
MAX_QUERY_BYTES = 4096
# How many nearest facts the vector signal is asked for: enough that a paraphrase the
# keyword signal misses still reaches the top k, bounded so fusion stays cheap.
MIN_VECTOR_CANDIDATES = 50
VECTOR_CANDIDATES_PER_HIT = 4
# Below this cosine a vector neighbour is not a candidate: a vector index always answers
# with its nearest facts, even for a query that means nothing in this memory (ADR 0037).
MIN_SIMILARITY = 0.3


@dataclass(frozen=True)
class RecallWeights:
    """Fusion weights. With k = 60 reciprocal ranks are flat (rank 1 and rank 2 differ by
    1/61 - 1/62 ≈ 0.00026), so a recency weight much above 0.1 lets a newer fact that
    shares only common words outrank an older fact that matches the query's rare word.
    The recall-quality gate measured exactly that at 0.5; recency breaks near-ties here.
    The vector weight (keyword-only argument, so `RecallWeights(keyword, recency)` keeps
    its meaning) is upstream's 1.0, equal to keyword: measured in the gate (ADR 0037)."""

    keyword: float = 1.0
    recency: float = 0.1
    vector: float = field(default=1.0, kw_only=True)

    @classmethod
    def parse(cls, raw: str) -> RecallWeights:
        """`KEYWORD,RECENCY` (the vector weight stays at its default) or
        `VECTOR,KEYWORD,RECENCY`."""
        try:
            numbers = [float(x) for x in raw.split(",")]
        except ValueError:
            numbers = []
        if len(numbers) not in (2, 3):
            raise InvalidInput(
                "recall weights must be 'KEYWORD,RECENCY' or 'VECTOR,KEYWORD,RECENCY' "
                f"numbers, got {raw!r}"
            )
        if not all(math.isfinite(x) for x in numbers):
            raise InvalidInput("recall weights must be finite numbers")
        if len(numbers) == 2:
            keyword, recency = numbers
            if keyword < 0 or recency < 0 or keyword + recency == 0:
                raise InvalidInput("recall weights must be non-negative and not both zero")
            return cls(keyword, recency)
        vector, keyword, recency = numbers
        if min(numbers) < 0 or sum(numbers) == 0:
            raise InvalidInput("recall weights must be non-negative and not all zero")
        return cls(keyword, recency, vector=vector)


@dataclass(frozen=True)
class Hit:
    """A recalled fact, its fused score, and each signal's rank and score (None where the
    fact is absent from that signal; every candidate has a recency rank)."""

    fact: Fact
    score: float
    keyword_rank: int | None
    recency_rank: int
    vector_rank: int | None = None
    keyword_score: float | None = None
    # Cosine similarity of the fact's vector to the query's.
    vector_score: float | None = None


def _impact(count: int, length: int) -> float:
    """A term's weight in one fact, before idf: more mentions count, longer facts less."""
    return (1.0 + math.log(count)) / (1.0 + math.log(max(length, 1)))


def _keyword_scores(tx: KeywordIndex, agent: str, terms: list[str]) -> dict[str, float]:
    live = tx.live_count(agent)
    if not live or not terms:
        return {}
    unique = list(dict.fromkeys(terms))
    frequencies = {t: tx.document_frequency(agent, t) for t in unique}
    present = [t for t in unique if frequencies[t]]
    informative = [t for t in present if frequencies[t] <= COMMON_TERM_SHARE * live] or present
    idfs = {t: math.log((live + 1) / (frequencies[t] + 1)) + 1.0 for t in informative}
    scores: dict[str, float] = {}
    matched: dict[str, float] = {}
    impacts: dict[tuple[int, int], float] = {}  # few distinct (count, length) pairs

    def add(fact_id: str, count: int, length: int, idf: float) -> None:
        impact = impacts.get((count, length))
        if impact is None:
            impact = impacts[(count, length)] = _impact(count, length)
        scores[fact_id] = scores.get(fact_id, 0.0) + impact * idf
        matched[fact_id] = matched.get(fact_id, 0.0) + idf

    # Rare terms first, read whole: they pick out the facts a query is about.
    capped = sorted(informative, key=lambda t: frequencies[t])
    while capped and frequencies[capped[0]] <= POSTINGS_PER_TERM:
        term = capped.pop(0)
        for fact_id, count, length in tx.iter_postings(agent, term):
            add(fact_id, count, length, idfs[term])
    # A common term adds its newest postings, and its weight in every fact already found
    # (looked up directly), so a fact matching a rare term scores exactly as uncapped.
    for term in capped:
        idf = idfs[term]
        found = list(scores)
        walked = set()
        for fact_id, count, length in tx.iter_postings(agent, term, POSTINGS_PER_TERM):
            add(fact_id, count, length, idf)
            walked.add(fact_id)
        unwalked = [fact_id for fact_id in found if fact_id not in walked]
        for fact_id, posting in tx.postings_of(agent, term, unwalked).items():
            add(fact_id, *posting, idf)
    # Coordination: a fact matching the query's rare terms beats a shorter one that
    # matches only its common terms (so a summary holding the rare detail stays findable).
    total = sum(idfs.values())
    for fact_id in scores:
        scores[fact_id] *= matched[fact_id] / total
    return scores


def check_query(query: str) -> None:
    if len(query.encode("utf-8", errors="surrogatepass")) > MAX_QUERY_BYTES:
        raise InvalidInput(f"query is longer than {MAX_QUERY_BYTES} bytes")


def rank(
    store: MemoryStore,
    agent: str,
    query: str,
    *,
    k: int = 8,
    weights: RecallWeights | None = None,
    vectors: QueryVectors | None = None,
    min_similarity: float = MIN_SIMILARITY,
) -> list[Hit]:
    """The top `k` live facts for `query`, without touching access counts (a preview)."""
    validate_agent(agent)
    check_query(query)
    if k < 1:
        raise InvalidInput("k must be at least 1")
    weights = weights or RecallWeights()
    nearest = None
    if vectors is not None and weights.vector > 0:
        if not store.read_index(lambda tx: tx.terms(query)):
            return []  # only stop-words or punctuation: nothing to look for, in any signal
        # Asked outside any read transaction: the signal may wait on an embedding server.
        limit = max(MIN_VECTOR_CANDIDATES, VECTOR_CANDIDATES_PER_HIT * k)
        nearest = vectors.nearest(agent, query, limit)

    def run(tx: KeywordIndex) -> list[Hit]:
        scores = _keyword_scores(tx, agent, tx.terms(query))
        facts: dict[str, Fact] = {}
        similarity = _live_neighbours(tx, agent, nearest or [], facts, min_similarity)
        candidates = [*scores, *(i for i in similarity if i not in scores)]
        if not candidates:
            return []
        by_keyword = sorted(scores, key=lambda i: (-scores[i], i))
        by_recency = sorted(candidates, reverse=True)  # ULIDs: newest first
        keyword_rank = {fact_id: r for r, fact_id in enumerate(by_keyword, start=1)}
        vector_rank = _shared_ranks(similarity)
        recency_rank = {fact_id: r for r, fact_id in enumerate(by_recency, start=1)}

        def fuse(fact_id: str) -> float:
            total = 0.0
            if fact_id in keyword_rank:
                total += weights.keyword / (RRF_K + keyword_rank[fact_id])
            total += weights.recency / (RRF_K + recency_rank[fact_id])
            if fact_id in vector_rank:
                total += weights.vector / (RRF_K + vector_rank[fact_id])
            return total

        fused = {fact_id: fuse(fact_id) for fact_id in candidates}
        ordered = sorted(fused, key=lambda i: (-fused[i], i))
        # Decode in score order until k distinct texts are found, plus every candidate
        # tied with the last one, so the final tie-break (older created_at, then id)
        # decides among all of them rather than among whoever the id order let in.
        hits: list[Hit] = []
        seen_texts: set[str] = set()
        cutoff: float | None = None
        for fact_id in ordered:
            score = fused[fact_id]
            if cutoff is not None and score < cutoff:
                break
            fact = facts.get(fact_id) or tx.find(fact_id)
            if fact is None or fact.is_tombstone or fact.text in seen_texts:
                continue
            seen_texts.add(fact.text)
            hits.append(
                Hit(
                    fact,
                    score,
                    keyword_rank.get(fact_id),
                    recency_rank[fact_id],
                    vector_rank.get(fact_id),
                    scores.get(fact_id),
                    similarity.get(fact_id),
                )
            )
            if cutoff is None and len(hits) >= k:
                cutoff = score
        hits.sort(key=lambda h: (-h.score, h.fact.created_at, h.fact.id))
        return hits[:k]

    return store.read_index(run)


def _shared_ranks(similarity: dict[str, float]) -> dict[str, int]:
    """Vector ranks where equal cosines share a rank (1, 1, 3): identical vectors say the
    facts mean the same to the model, and ranking them by id would hand one of them a
    preference as large as a keyword rank's with no evidence (ADR 0037)."""
    ranks: dict[str, int] = {}
    previous: float | None = None
    current = 0
    for position, fact_id in enumerate(sorted(similarity, key=lambda i: -similarity[i]), 1):
        if similarity[fact_id] != previous:
            current, previous = position, similarity[fact_id]
        ranks[fact_id] = current
    return ranks


def _live_neighbours(
    tx: KeywordIndex,
    agent: str,
    nearest: list[tuple[str, float]],
    facts: dict[str, Fact],
    floor: float,
) -> dict[str, float]:
    """fact id -> cosine of the vector signal's answer, kept only for live facts of `agent`
    at or above `floor`, read in this transaction (vectors may lag behind a
    revision or a retirement; the facts table is the truth). Found facts go in `facts`."""
    similarity: dict[str, float] = {}
    for fact_id, cosine in nearest:
        if fact_id in similarity or not (math.isfinite(cosine) and cosine >= floor):
            continue
        fact = tx.find(fact_id)
        if fact is None or not fact.is_live or fact.agent_id != agent:
            continue
        facts[fact_id] = fact
        similarity[fact_id] = cosine
    return similarity


class RankOptions(TypedDict, total=False):
    """`rank`'s keyword arguments (defaults there), which `recall` passes on."""

    k: int
    weights: RecallWeights | None
    vectors: QueryVectors | None
    min_similarity: float


def recall(store: MemoryStore, agent: str, query: str, **options: Unpack[RankOptions]) -> list[Hit]:
    """`rank`, then record the access of every returned fact in one transaction."""
    hits = rank(store, agent, query, **options)
    if hits:
        store.touch([h.fact.id for h in hits])
    return hits


def lineages(store: MemoryStore, agent: str, fact_ids: list[str]) -> dict[str, Lineage]:
    """For `--explain` / `explain: true`: what each of these facts of `agent` superseded,
    transitively (revisions, and the facts a summary consumed).

    Revisions leave no index from a fact to what it replaced, so the agent's tombstones
    are read once and turned around; a summary's receipts add the facts it consumed,
    including pruned ones (their copies are in the journal)."""
    if not fact_ids:
        return {}
    tombstones = {t.id: t for t in store.list_facts(agent, "tombstones")}
    replaced: dict[str, list[str]] = {}
    for tomb in tombstones.values():
        if not tomb.is_retired:
            replaced.setdefault(tomb.superseded_by, []).append(tomb.id)

    def predecessors(fact_id: str) -> list[str]:
        return [*replaced.get(fact_id, []), *store.receipts(fact_id)]

    def lookup(fact_id: str) -> Fact | None:
        return tombstones.get(fact_id) or store.find(fact_id)

    return {fact_id: lineage(fact_id, predecessors, lookup) for fact_id in fact_ids}
