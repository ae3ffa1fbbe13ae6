"""Recall: rank an agent's live facts for a query.

Two signals and a prior, fused by a weighted sum of normalised scores (ADR 0061):

    score = (V·cos + K·kw/kw_max) / (V + K) + R·rec

- `cos`: the vector signal's cosine of the query to the fact (its best row), when a
  `QueryVectors` answers. A candidate the signal scored neither in its nearest answer nor
  through `CandidateSimilarity` (no vector yet: the embedder is behind) stands at the
  cosine of the farthest neighbour returned: neither lifted nor buried for lacking one.
- `kw / kw_max`: the keyword signal (TF-IDF over the store's inverted index, stop-words
  removed, Unicode-aware tokens; term weight `(1 + ln tf) · idf / (1 + ln length)`, times
  the share of the query's idf the fact matches) over the query's best keyword score; 0
  for a fact with no keyword match.
- `rec`: the fact's position between the agent's oldest (0) and newest (1) live fact by
  creation time; a prior, off by default (R = 0).
- `D·dated`: when the query names a date ("in June", "on 3 June 2023", `2026-11-30`;
  `recall.dates`), D for a fact written on one of them, else 0: a prior (ADR 0069). A
  query naming no date gets none, and D is added to every fact's bound alike.

Weights V, K, R, D default to 0.7, 0.3, 0, 0.15 (`RecallWeights`). Without a vector
signal (none configured, none answering, or V = 0) the vector term drops out and the
score is `kw / kw_max + R·rec + D·dated`: with R = 0 and no date named, exactly the
keyword order.

Candidates: every fact sharing a keyword with the query (a common term reads only its
newest `POSTINGS_PER_TERM` postings, ADR 0044) plus the vector signal's nearest
`max(50, 4·k)` with a positive cosine (no similarity floor: a cosine at or below 0 is no
likeness at all). Tombstones are never in the index, and a vector candidate is re-read
and dropped unless it is a live fact of the agent (a stale vector never resurrects a
tombstone). Ties: older `created_at` first, then the smaller id. Identical texts are
returned once. Each hit carries what every signal contributed (`Hit.vector_part`,
`keyword_part`, `recency_part`, `date_part`), whose sum is its score.

Confidence (off by default; `graymatter_tui.core.confidence`): `min_confidence` leaves
out facts below that level, and `confidence_weight` w (0 to 0.5) multiplies the fused
score by `1 + w·c` (c = +1 verified, 0 inferred or unknown, −1 unverified), the hit's
`confidence_factor`; its score is then the parts' sum times that factor.
"""

from __future__ import annotations

import heapq
import math
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Container, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Final, Protocol, TypedDict, Unpack

from graymatter_tui.core.clock import parse_time
from graymatter_tui.core.confidence import (
    Confidence,
    admits,
    check_weight,
    parse_confidence,
)
from graymatter_tui.core.confidence import factor as confidence_factor
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import Fact
from graymatter_tui.core.receipts import Lineage, lineage
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.recall.dates import NamedDate, named_dates, written_on
from graymatter_tui.recall.vector_signal import NO_VECTORS, CandidateSimilarity, QueryVectors
from graymatter_tui.storage import KeywordIndex, MemoryStore
from graymatter_tui.storage.transaction import epoch_ms

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
# The fusion weights (ADR 0061), measured on LoCoMo and the paraphrase set: V between
# 0.4 and 0.75 of V + K never loses to either signal alone; the recency prior gained
# nothing there, so it is off unless asked for.
DEFAULT_VECTOR = 0.7
DEFAULT_KEYWORD = 0.3
DEFAULT_RECENCY = 0.0
# Measured on LoCoMo (ADR 0069): a fact written on a date the query names gains what a
# 0.15 better relevance would; enough to lift it among those about the same thing (the
# sessions' plateau starts here), small beside a fact about something else.
DEFAULT_DATE = 0.15


@dataclass(frozen=True)
class RecallWeights:
    """Fusion weights: `vector` (V) and `keyword` (K) share the relevance in proportion
    (only their ratio matters; without a vector signal only whether K is above 0), and
    `recency` (R) adds R·rec on the same 0-1 scale (R = 0.05 lifts the newest fact by
    what a 0.05 better relevance would). The vector weight is a keyword-only argument, so
    `RecallWeights(keyword, recency)` reads like the two-number `--weights K,R`."""

    keyword: float = DEFAULT_KEYWORD
    recency: float = DEFAULT_RECENCY
    vector: float = field(default=DEFAULT_VECTOR, kw_only=True)
    date: float = field(default=DEFAULT_DATE, kw_only=True)

    @classmethod
    def parse(cls, raw: str) -> RecallWeights:
        """`VECTOR,KEYWORD,RECENCY[,DATE]`, or `KEYWORD,RECENCY` (the vector weight stays
        at its default, 0.7, and the date weight at 0.15)."""
        try:
            numbers = [float(x) for x in raw.split(",")]
        except ValueError:
            numbers = []
        if len(numbers) not in (2, 3, 4):
            raise InvalidInput(
                "recall weights must be 'VECTOR,KEYWORD,RECENCY[,DATE]' or 'KEYWORD,RECENCY' "
                f"numbers, got {raw!r}"
            )
        if not all(math.isfinite(x) for x in numbers):
            raise InvalidInput("recall weights must be finite numbers")
        if min(numbers) < 0:
            raise InvalidInput("recall weights must be non-negative")
        if len(numbers) == 2:
            keyword, recency = numbers
            # As before fusion: `0,0` named no signal to rank by, and scripts rely on the error.
            if keyword + recency == 0:
                raise InvalidInput("recall weights must be non-negative and not both zero")
            return cls(keyword, recency)
        vector, keyword, recency, *date = numbers
        if vector + keyword + recency == 0:
            raise InvalidInput("recall weights must be non-negative and not all zero")
        return cls(keyword, recency, vector=vector, date=date[0] if date else DEFAULT_DATE)

    def __str__(self) -> str:
        """`V,K,R`, and `,D` when the date weight is not its default (so what earlier
        releases printed is unchanged, and the text parses back to the same weights)."""
        shown = f"{self.vector:g},{self.keyword:g},{self.recency:g}"
        return shown if self.date == DEFAULT_DATE else f"{shown},{self.date:g}"


@dataclass(frozen=True)
class Hit:
    """A recalled fact, its fused score, and each signal's rank and score (None where the
    fact is absent from that signal; every candidate has a recency rank), and what each
    contributed to the score: `vector_part + keyword_part + recency_part + date_part ==
    score`."""

    fact: Fact
    score: float
    keyword_rank: int | None
    recency_rank: int
    vector_rank: int | None = None
    keyword_score: float | None = None
    # Cosine similarity of the fact's vector to the query's (None: no vector signal, or
    # the fact has no vector yet).
    vector_score: float | None = None
    # The keyword score over the query's best one (0 without a keyword match).
    keyword_normalised: float = 0.0
    # The fact's position between the agent's oldest (0) and newest (1) live fact.
    recency: float = 0.0
    vector_part: float = 0.0
    keyword_part: float = 0.0
    recency_part: float = 0.0
    # The fact had no cosine of its own: `vector_part` used the farthest neighbour's.
    vector_stand_in: bool = False
    # What confidence multiplied the parts' sum by; None when recall was asked for no
    # confidence ranking (no minimum, weight 0), and then the score is their sum.
    confidence_factor: float | None = None
    # Whether the query named a date, and whether this fact was written on one of them.
    dates_named: bool = False
    written_on_named_date: bool = False
    date_part: float = 0.0


@dataclass(frozen=True)
class KeywordPlan:
    """What a query's keyword score reads, in the order it adds them: the informative
    terms with their idf, rare ones (read whole) first by document frequency, then the
    common ones (capped at their newest `POSTINGS_PER_TERM`), and the sum of their idfs
    (the coordination's whole)."""

    rare: list[tuple[str, float]]
    common: list[tuple[str, float]]
    total: float
    frequencies: dict[str, int]  # each term's live facts, as the snapshot counts them


def keyword_plan(tx: KeywordIndex, agent: str, terms: list[str]) -> KeywordPlan | None:
    """The plan of `terms` over `agent`'s index; None when nothing can match."""
    live = tx.live_count(agent)
    if not live or not terms:
        return None
    unique = list(dict.fromkeys(terms))
    frequencies = {t: tx.document_frequency(agent, t) for t in unique}
    present = [t for t in unique if frequencies[t]]
    informative = [t for t in present if frequencies[t] <= COMMON_TERM_SHARE * live] or present
    if not informative:
        return None
    idfs = {t: math.log((live + 1) / (frequencies[t] + 1)) + 1.0 for t in informative}
    ordered = sorted(informative, key=lambda t: frequencies[t])
    rare = [(t, idfs[t]) for t in ordered if frequencies[t] <= POSTINGS_PER_TERM]
    common = [(t, idfs[t]) for t in ordered[len(rare) :]]
    return KeywordPlan(rare, common, sum(idfs.values()), frequencies)


def impact(count: int, length: int) -> float:
    """A term's weight in one fact, before idf: more mentions count, longer facts less."""
    return (1.0 + math.log(count)) / (1.0 + math.log(max(length, 1)))


def _keyword_scores(tx: KeywordIndex, agent: str, terms: list[str]) -> dict[str, float]:
    """Each matching live fact's keyword score, read from the store's index."""
    plan = keyword_plan(tx, agent, terms)
    if plan is None:
        return {}
    scores: dict[str, float] = {}
    matched: dict[str, float] = {}
    impacts: dict[tuple[int, int], float] = {}  # few distinct (count, length) pairs

    def add(postings: Iterable[tuple[str, tuple[int, int]]], idf: float) -> None:
        # One loop per term, not a call per posting: a query adds thousands.
        score, match, impact_of = scores.get, matched.get, impacts.get
        for fact_id, posting in postings:
            weight = impact_of(posting)
            if weight is None:
                weight = impacts[posting] = impact(*posting)
            scores[fact_id] = score(fact_id, 0.0) + weight * idf
            matched[fact_id] = match(fact_id, 0.0) + idf

    # Rare terms first, read whole: they pick out the facts a query is about.
    for term, idf in plan.rare:
        add(((i, (c, n)) for i, c, n in tx.iter_postings(agent, term)), idf)
    # A common term adds its newest postings, and its weight in every fact already found
    # (looked up directly), so a fact matching a rare term scores exactly as uncapped.
    for term, idf in plan.common:
        found = list(scores)
        newest = [(i, (c, n)) for i, c, n in tx.iter_postings(agent, term, POSTINGS_PER_TERM)]
        add(newest, idf)
        walked = {fact_id for fact_id, _ in newest}
        unwalked = [fact_id for fact_id in found if fact_id not in walked]
        add(tx.postings_of(agent, term, unwalked).items(), idf)
    # Coordination: a fact matching the query's rare terms beats a shorter one that
    # matches only its common terms (so a summary holding the rare detail stays findable).
    total = plan.total
    for fact_id in scores:
        scores[fact_id] *= matched[fact_id] / total
    return scores


class KeywordScorer(Protocol):
    """Where `rank` takes its keyword scores from, when not the store's index directly
    (`recall.keyword_cache.KeywordCache`): the same numbers, however they are found."""

    def scores(self, tx: KeywordIndex, agent: str, terms: list[str]) -> dict[str, float]: ...


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
    min_similarity: float | None = None,
    min_confidence: Confidence | None = None,
    confidence_weight: float = 0.0,
    keywords: KeywordScorer | None = None,
) -> list[Hit]:
    """The top `k` live facts for `query`, without touching access counts (a preview).

    `vectors`: the vector signal; None (the default) is the one the environment
    configures for this store (GRAYMATTER_EMBED; none when embeddings are off, and a bad
    setting raises InvalidInput), `NO_VECTORS` ranks on keywords alone. `min_similarity`
    keeps vector neighbours below it out of the candidates (no floor by default).
    `min_confidence` and `confidence_weight`: see the module's docstring. `keywords`:
    where the keyword scores come from (None: the store's index, read for this query)."""
    validate_agent(agent)
    check_query(query)
    if k < 1:
        raise InvalidInput("k must be at least 1")
    confidence = ConfidenceRanking.of(min_confidence, confidence_weight)
    weights = weights or RecallWeights()
    if vectors is None:
        vectors = configured_vectors(store)
    terms = store.read_index(lambda tx: tx.terms(query))
    if not terms:
        return []  # only stop-words or punctuation: nothing to look for, in any signal
    keyword_scores = _keyword_scores if keywords is None else keywords.scores
    hybrid = vectors is not NO_VECTORS and weights.vector > 0

    def read_keywords(tx: KeywordIndex) -> KeywordSide:
        return KeywordSide(keyword_scores(tx, agent, terms), by_score=hybrid)

    nearest = None
    beside: Future[KeywordSide] | None = None
    if hybrid:
        if BESIDE:
            # The keyword signal is read on another thread meanwhile (ADR 0072): the
            # query's embedding and the vector search spend most of their time outside
            # the GIL, and so does the sorting of its scores that fusion needs.
            beside = _beside().submit(store.read_index, read_keywords)
        # Asked outside any read transaction: the signal may wait on an embedding server.
        limit = max(MIN_VECTOR_CANDIDATES, VECTOR_CANDIDATES_PER_HIT * k)
        try:
            nearest = vectors.nearest(agent, query, limit) or None
        except BaseException:
            if beside is not None:
                beside.cancel()
            raise
    floor = 0.0 if min_similarity is None else min_similarity
    read = None if beside is None else beside.result()

    def score_keywords(tx: KeywordIndex) -> tuple[KeywordSide, dict[str, Fact], Signals]:
        side = read_keywords(tx) if read is None else read
        facts: dict[str, Fact] = {}
        similarity = _live_neighbours(tx, agent, nearest or [], facts, floor)
        return side, facts, Signals(similarity, tx.live_span(agent))

    side, facts, signals = store.read_index(score_keywords)
    signals.dates = named_dates(query)
    if nearest is not None:
        # The farthest neighbour's cosine: where a fact the signal could not score stands.
        signals.stand_in = min(signals.similarity.values(), default=0.0)
        signals.reachable = _reachable(k, weights, side, facts, signals, confidence)
        similarity, scores = signals.similarity, side.scores
        if isinstance(signals.reachable, set):
            missing = [i for i in signals.reachable if i not in similarity]
        else:
            missing = [i for i in scores if i not in similarity]
        if missing and isinstance(vectors, CandidateSimilarity):
            signals.cosines = _finite(vectors.similarities(agent, query, missing))
    return store.read_index(
        lambda tx: _fuse(tx, agent, k, weights, side, facts, signals, confidence)
    )


# Whether the keyword signal is read beside the vector signal (ADR 0072); off, one after
# the other on the caller's thread (the bench compares both).
BESIDE = True
_BESIDE: ThreadPoolExecutor | None = None
_BESIDE_LOCK = threading.Lock()


def _beside() -> ThreadPoolExecutor:
    """The threads that read the keyword signal beside the vector signal: two, so two
    threads of a process (the TUI's workers, an MCP server's requests) that rank at once
    do not queue behind each other's keyword reads."""
    global _BESIDE
    with _BESIDE_LOCK:
        if _BESIDE is None:
            _BESIDE = ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall-keywords")
        return _BESIDE


class KeywordSide:
    """The keyword scores, and the orders of them fusion needs, made where they are read
    (beside the vector signal, off the critical path): the scores ascending (keyword
    ranks, `_Ranks`), the ids sorted (recency ranks), and with `by_score` the ids best
    first (`_reachable` takes the ones that can still reach the top k as a prefix)."""

    __slots__ = ("ascending", "best", "by_score", "ids", "scores")

    def __init__(self, scores: dict[str, float], *, by_score: bool) -> None:
        self.scores = scores
        self.ascending = sorted(scores.values())
        self.best = self.ascending[-1] if self.ascending else 0.0
        self.ids = sorted(scores)
        self.by_score = sorted(scores, key=scores.__getitem__, reverse=True) if by_score else None


@dataclass(frozen=True)
class ConfidenceRanking:
    """What recall was asked to do with confidence; None from `of` when nothing."""

    minimum: Confidence | None
    weight: float

    @classmethod
    def of(cls, minimum: Confidence | None, weight: float) -> ConfidenceRanking | None:
        if minimum is not None:
            parse_confidence(minimum, "min_confidence")
        check_weight(weight)
        if minimum is None and weight == 0:
            return None
        return cls(minimum, weight)


class _Every:
    """Every candidate reachable (`Signals.reachable` when nothing is ruled out)."""

    def __contains__(self, item: object) -> bool:
        return True


_EVERY: Final = _Every()


@dataclass
class Signals:
    """What `_fuse` needs beside the keyword scores: the live vector neighbours' cosines,
    the cosines of other candidates, and the span of the agent's creation times."""

    similarity: dict[str, float]
    span: tuple[int, int] | None
    cosines: dict[str, float] = field(default_factory=dict)
    stand_in: float | None = None  # None: no vector signal answered
    dates: tuple[NamedDate, ...] = ()  # the dates the query names
    # The keyword candidates that could reach the top k (`_reachable`); all by default.
    reachable: Container[str] = field(default_factory=lambda: _EVERY)


def _reachable(
    k: int,
    weights: RecallWeights,
    side: KeywordSide,
    facts: dict[str, Fact],
    signals: Signals,
    confidence: ConfidenceRanking | None,
) -> Container[str]:
    """The keyword candidates that could still be among the top `k`, when the vector
    signal answered. Nearest lists every fact whose cosine is above its farthest
    neighbour's, so a candidate it did not list scores at most V·stand-in plus its keyword
    part plus the whole priors; the neighbours' k best relevances (by distinct text) are
    a floor under the k-th hit's score, since the priors only add. A candidate whose best
    possible score is below that floor can never be a hit: `_fuse` neither scores it nor
    is its cosine asked for. A LoCoMo question has ~3,300 candidates (one name, several
    common words), most of them far below the floor. Everything is reachable with a
    confidence factor (it may lower a score) or fewer than `k` neighbours."""
    similarity, stand_in = signals.similarity, signals.stand_in
    if confidence is not None or stand_in is None or len(similarity) < k:
        return _EVERY
    if min(weights.vector, weights.keyword, weights.recency, weights.date) < 0:
        return _EVERY  # the priors must only add (parsed weights never are below 0)
    v, kw = weights.vector, weights.keyword
    share = v + kw
    scores, best_keyword = side.scores, side.best
    if share <= 0 or best_keyword <= 0:
        return _EVERY
    # The neighbours' own scores, priors included (their facts are read): a floor under
    # the k-th hit's. With a date named, a neighbour written on it lifts the floor as much
    # as the date lifts every unread bound.
    r, d = weights.recency, weights.date if signals.dates else 0.0
    by_text: dict[str, float] = {}
    for fact_id, cosine in similarity.items():
        fact = facts[fact_id]
        relevance = v * cosine / share + kw * (scores.get(fact_id, 0.0) / best_keyword) / share
        if r:
            relevance += r * _position(fact, signals.span)
        if d and written_on(parse_time(fact.created_at), signals.dates):
            relevance += d
        by_text[fact.text] = max(relevance, by_text.get(fact.text, -math.inf))
    if len(by_text) < k:
        return _EVERY
    floor = heapq.nlargest(k, by_text.values())[-1]
    priors = weights.recency + (weights.date if signals.dates else 0.0)
    ceiling = v * stand_in / share

    def best_possible(score: float) -> float:
        # `_fuse`'s bound, term for term, with the stand-in as the cosine
        return ceiling + kw * (score / best_keyword) / share + priors

    # (a margin of rounding: the two sums may add the same terms in another order)
    if side.by_score is None:
        kept = {i for i, score in scores.items() if best_possible(score) >= floor - 1e-9}
    else:  # `best_possible` never falls as the score rises: the kept are a prefix
        kept = set()
        for fact_id in side.by_score:
            if best_possible(scores[fact_id]) < floor - 1e-9:
                break
            kept.add(fact_id)
    return kept | set(similarity)


def _position(fact: Fact, span: tuple[int, int] | None) -> float:
    """The fact's place between the agent's oldest (0) and newest (1) live fact."""
    oldest, newest = span or (0, 0)
    if newest <= oldest:
        return 0.0
    return min(max((epoch_ms(fact.created_at) - oldest) / (newest - oldest), 0.0), 1.0)


def _finite(found: dict[str, float]) -> dict[str, float]:
    return {i: float(c) for i, c in found.items() if math.isfinite(c)}


def _fuse(
    tx: KeywordIndex,
    agent: str,
    k: int,
    weights: RecallWeights,
    side: KeywordSide,
    facts: dict[str, Fact],
    signals: Signals,
    confidence: ConfidenceRanking | None = None,
) -> list[Hit]:
    similarity, scores = signals.similarity, side.scores
    only_vectors = sorted(i for i in similarity if i not in scores)
    if not scores and not only_vectors:
        return []
    with_vectors = signals.stand_in is not None
    v, kw, r = weights.vector if with_vectors else 0.0, weights.keyword, weights.recency
    d = weights.date if signals.dates else 0.0
    share = v + kw  # above 0 whenever v is
    best_keyword = side.best

    def cosine(fact_id: str) -> tuple[float, bool]:
        found = similarity.get(fact_id)
        if found is None:
            found = signals.cosines.get(fact_id)
        if found is None:
            return signals.stand_in or 0.0, True
        return found, False

    reachable = signals.reachable
    # (a set from `_reachable` holds every neighbour too)
    scored = list(reachable) if isinstance(reachable, set) else [*scores, *only_vectors]
    if v <= 0:  # keywords alone: thousands of candidates, no call per candidate
        if best_keyword > 0 and kw > 0:
            got = scores.get
            parts = {fact_id: (0.0, got(fact_id, 0.0) / best_keyword) for fact_id in scored}
        else:
            parts = dict.fromkeys(scored, (0.0, 0.0))
    else:  # (vector part, keyword part); a query naming a date may leave thousands
        cosines = dict.fromkeys(scored, signals.stand_in or 0.0)
        cosines.update(signals.cosines)
        cosines.update(similarity)
        got = scores.get
        if best_keyword > 0:
            parts = {
                i: (v * cosines[i] / share, kw * (got(i, 0.0) / best_keyword) / share)
                for i in scored
            }
        else:
            parts = {i: (v * cosines[i] / share, kw * 0.0 / share) for i in scored}
    span = signals.span

    # Read in order of the best score each could reach (its relevance plus the whole
    # priors), until k distinct texts are found that nothing unread can beat or tie: with
    # R = D = 0 that is the exact order, and above 0 reads only what a prior could lift.
    # The confidence factor can lift a fact by at most 1 + w. A query naming a date lifts
    # every bound, so hundreds of facts may be read: each costs a look-up and a compare
    # with the k best so far (`top`: each text's best score only rises, so the k best
    # texts are kept exactly by replacing the lowest), and a `Hit` is made only for the
    # answer.
    lift = 1.0 + confidence.weight if confidence is not None else 1.0
    bound = {fact_id: sum(parts[fact_id]) + r + d for fact_id in scored}
    ordered = _best_first(bound, scored)
    best: dict[str, _Read] = {}  # text -> its best copy
    top: dict[str, float] = {}  # the k best texts' scores
    for fact_id in ordered:
        if len(top) >= k and bound[fact_id] * lift < min(top.values()):
            break
        fact = facts.get(fact_id) or tx.find(fact_id)
        if fact is None or not fact.is_live or fact.agent_id != agent:
            continue
        if confidence is not None and not admits(fact.confidence, confidence.minimum):
            continue
        vector_part, keyword_part = parts[fact_id]
        rec = _position(fact, span)
        recency_part = r * rec
        dated = bool(signals.dates) and written_on(parse_time(fact.created_at), signals.dates)
        date_part = d if dated else 0.0
        score = vector_part + keyword_part + recency_part + date_part
        multiplier = None
        if confidence is not None:
            multiplier = confidence_factor(fact.confidence, confidence.weight)
            score *= multiplier
        key = (score, fact.created_at, fact.id)
        held = best.get(fact.text)
        if held is not None and not _before(key, held.key):
            continue
        best[fact.text] = _Read(key, fact, rec, recency_part, dated, date_part, multiplier)
        if fact.text in top or len(top) < k:
            top[fact.text] = max(score, top.get(fact.text, score))
        else:
            lowest = min(top, key=top.__getitem__)
            if score > top[lowest]:
                del top[lowest]
                top[fact.text] = score
    chosen = sorted(best.values(), key=lambda e: (-e.key[0], e.key[1], e.key[2]))[:k]
    keyword_rank = _Ranks(scores, side.ascending)
    vector_rank = _shared_ranks(similarity)

    def newer_than(fact_id: str) -> int:
        """How many candidates are newer (ULIDs: later ids)."""
        return (len(side.ids) - bisect_right(side.ids, fact_id)) + (
            len(only_vectors) - bisect_right(only_vectors, fact_id)
        )

    hits = []
    for entry in chosen:
        fact, fact_id = entry.fact, entry.fact.id
        vector_part, keyword_part = parts[fact_id]
        cos, stand_in = cosine(fact_id) if with_vectors else (0.0, False)
        hits.append(
            Hit(
                fact,
                entry.key[0],
                keyword_rank.of(fact_id),
                newer_than(fact_id) + 1,  # newest first
                vector_rank.get(fact_id),
                scores.get(fact_id),
                None if stand_in or not with_vectors else cos,
                scores.get(fact_id, 0.0) / best_keyword if best_keyword > 0 else 0.0,
                entry.rec,
                vector_part,
                keyword_part,
                entry.recency_part,
                stand_in and v > 0,
                entry.multiplier,
                bool(signals.dates),
                entry.dated,
                entry.date_part,
            )
        )
    return hits


@dataclass(frozen=True, slots=True)
class _Read:
    """A fact `_fuse` read, with what its `Hit` needs beyond the signals' parts."""

    key: tuple[float, str, str]  # (score, created_at, id)
    fact: Fact
    rec: float
    recency_part: float
    dated: bool
    date_part: float
    multiplier: float | None


class _Ranks:
    """Each keyword candidate's rank by score, highest first, ties by id, as
    `_best_first(scores, list(scores))` would number them: worked out only for the facts
    that become hits (a dozen), not by sorting the thousands of candidates."""

    def __init__(self, scores: dict[str, float], ascending: list[float] | None = None) -> None:
        self.scores = scores
        self.ascending = sorted(scores.values()) if ascending is None else ascending

    def of(self, fact_id: str) -> int | None:
        score = self.scores.get(fact_id)
        if score is None:
            return None
        low = bisect_left(self.ascending, score)
        high = bisect_right(self.ascending, score)
        above = len(self.ascending) - high
        if high - low == 1:
            return above + 1
        tied_before = sum(1 for i, s in self.scores.items() if s == score and i < fact_id)
        return above + tied_before + 1


def _best_first(value: dict[str, float], ids: list[str]) -> list[str]:
    """`ids` by `value` highest first, ties by id: `sorted(ids, key=lambda i: (-value[i],
    i))`, as two sorts whose keys are C calls (by id, then a stable sort by value, which
    keeps equal values in id order); recall sorts thousands of candidates a query."""
    return sorted(sorted(ids), key=value.__getitem__, reverse=True)


def _before(a: tuple[float, str, str], b: tuple[float, str, str]) -> bool:
    """Whether a hit keyed (score, created_at, id) `a` ranks before `b`."""
    return (-a[0], a[1], a[2]) < (-b[0], b[1], b[2])


def configured_vectors(store: MemoryStore) -> QueryVectors:
    """The vector signal GRAYMATTER_EMBED configures for `store` (kept for the store, so
    repeated calls share one embedder), or NO_VECTORS when embeddings are off."""
    from graymatter_tui.embedding.query import configured  # httpx and numpy only if used

    return configured(store) or NO_VECTORS


def _shared_ranks(similarity: dict[str, float]) -> dict[str, int]:
    """Vector ranks where equal cosines share a rank (1, 1, 3): identical vectors say the
    facts mean the same to the model (ADR 0037)."""
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
    nearest: Sequence[tuple[str, float]],
    facts: dict[str, Fact],
    floor: float,
) -> dict[str, float]:
    """fact id -> cosine of the vector signal's answer, kept only for live facts of `agent`
    above 0 and at or above `floor`, read in this transaction (vectors may lag behind a
    revision or a retirement; the facts table is the truth). Found facts go in `facts`."""
    similarity: dict[str, float] = {}
    for fact_id, cosine in nearest:
        if fact_id in similarity or not (math.isfinite(cosine) and cosine > 0 and cosine >= floor):
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
    min_similarity: float | None
    min_confidence: Confidence | None
    confidence_weight: float
    keywords: KeywordScorer | None


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
