"""Shared helpers of the recall tests: a fixed clock, a settable clock, and a plain-Python
reference implementation of the ranking formula (without vectors) to compare `rank`
against."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.tx import DF, POSTING, Tx
from graymatter_tui.core.clock import parse_time
from graymatter_tui.core.model import Fact
from graymatter_tui.core.tokens import DEFAULT_LANGUAGE, Analyzer
from graymatter_tui.recall.dates import named_dates, written_on
from graymatter_tui.recall.ranking import RecallWeights
from graymatter_tui.storage.transaction import SEP, epoch_ms
from tests.support.clock import ManualClock

FIXED = datetime(2026, 3, 1, 12, tzinfo=UTC)
AGENT = "recall-agent"
# Test stores are new stores: they stem in the default language.
ANALYZER = Analyzer(DEFAULT_LANGUAGE)

# (term -> document frequency, (term, fact id) -> (term count, fact length))
Index = tuple[dict[str, int], dict[tuple[str, str], tuple[int, int]]]

# Weights from "keyword only" to "recency only", used wherever a property must hold at any
# weight.
ALL_WEIGHTS = [
    RecallWeights(1.0, 0.0),
    RecallWeights(),  # the default: keyword 0.3, recency 0 (and vector 0.7)
    RecallWeights(1.0, 0.5),
    RecallWeights(1.0, 1.0),
    RecallWeights(0.5, 1.0),
    RecallWeights(0.0, 1.0),
    RecallWeights(0.001, 1000.0),
]


Clock = ManualClock


def keyword_scores(live: list[Fact], query: str) -> dict[str, float]:
    """The keyword signal as recall.py documents it, from the facts' texts alone.

    Per informative query term: `(1 + ln tf) * idf / (1 + ln doc_len)` with
    `idf = ln((N + 1) / (df + 1)) + 1`; the sum is then multiplied by the share of the
    query's total idf that the fact matches (coordination). Terms held by more than half
    of the live facts are skipped unless nothing else matches.

    (The brief this suite was written from gave `... / sqrt(doc_len)` and no coordination;
    recall.py switched to this form while the suite was being written. This function is
    the one place to change if the formula moves again.)
    """
    n = len(live)
    terms = list(dict.fromkeys(ANALYZER.terms(query)))
    if not n or not terms:
        return {}
    counts = {f.id: ANALYZER.term_counts(f.text) for f in live}
    df = {t: sum(1 for c in counts.values() if t in c) for t in terms}
    present = [t for t in terms if df[t]]
    informative = [t for t in present if df[t] <= 0.5 * n] or present
    idfs = {t: math.log((n + 1) / (df[t] + 1)) + 1.0 for t in informative}
    scores: dict[str, float] = {}
    matched: dict[str, float] = {}
    for term in informative:
        idf = idfs[term]
        for fact_id, c in counts.items():
            if term in c:
                length = min(sum(c.values()), 65535)
                weight = (1.0 + math.log(c[term])) * idf / (1.0 + math.log(max(length, 1)))
                scores[fact_id] = scores.get(fact_id, 0.0) + weight
                matched[fact_id] = matched.get(fact_id, 0.0) + idf
    total = sum(idfs.values())
    return {i: score * matched[i] / total for i, score in scores.items()}


def reference_rank(
    facts: Iterable[Fact],
    query: str,
    *,
    k: int = 8,
    weights: RecallWeights | None = None,
) -> list[tuple[str, float]]:
    """(id, fused score) of the top `k`, by the documented recall rules without a vector
    signal, in plain Python: score = kw / kw_max (when the keyword weight is above 0) +
    R * rec (+ D for a fact written on a date the query names), rec the fact's position
    between the agent's first and last live fact by id (their created_at; 0 when they
    were made at the same moment); ties by older
    created_at, then the smaller id; a text once, its best copy."""
    weights = weights or RecallWeights()
    live = sorted((f for f in facts if f.is_live), key=lambda f: f.id)
    by_id = {f.id: f for f in live}
    scores = keyword_scores(live, query)
    best = max(scores.values(), default=0.0)
    oldest = epoch_ms(live[0].created_at) if live else 0
    newest = epoch_ms(live[-1].created_at) if live else 0

    def rec(fact: Fact) -> float:
        if newest <= oldest:
            return 0.0
        return min(max((epoch_ms(fact.created_at) - oldest) / (newest - oldest), 0.0), 1.0)

    dates = named_dates(query)  # the parser has tests of its own (test_dates.py)

    def dated(fact: Fact) -> float:
        return weights.date if dates and written_on(parse_time(fact.created_at), dates) else 0

    fused = {
        i: (s / best if weights.keyword > 0 else 0.0)
        + weights.recency * rec(by_id[i])
        + dated(by_id[i])
        for i, s in scores.items()
    }
    # Scores equal as numbers may come out an ulp apart here, where the formula is
    # computed in another order than in recall: such scores are a tie, not an order.
    ordered = sorted(fused, key=lambda i: (-round(fused[i], 12), by_id[i].created_at, i))
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for fact_id in ordered:
        if by_id[fact_id].text in seen:
            continue
        seen.add(by_id[fact_id].text)
        out.append((fact_id, fused[fact_id]))
        if len(out) == k:
            break
    return out


def index_contents(store: LmdbStore, agent: str) -> Index:
    """Everything the store's inverted index holds for `agent`: term -> document frequency,
    and (term, fact id) -> (term count, fact length), read straight from the tables."""
    prefix = agent.encode() + SEP

    def run(tx: Tx) -> Index:
        terms: dict[str, int] = {}
        cursor = tx.txn.cursor(db=tx.dbs.terms)
        found = cursor.set_range(prefix)
        while found and bytes(cursor.key()).startswith(prefix):
            terms[bytes(cursor.key())[len(prefix) :].decode()] = DF.unpack(cursor.value())[0]
            found = cursor.next()
        postings: dict[tuple[str, str], tuple[int, int]] = {}
        cursor = tx.txn.cursor(db=tx.dbs.postings)
        found = cursor.set_range(prefix)
        while found and bytes(cursor.key()).startswith(prefix):
            term, fact_id = bytes(cursor.key())[len(prefix) :].decode().split("\x00")
            postings[(term, fact_id)] = POSTING.unpack(cursor.value())
            found = cursor.next()
        return terms, postings

    return store.read(run)


def expected_index(live: list[Fact]) -> Index:
    """The inverted index recomputed by brute force from the live facts' texts."""
    terms: dict[str, int] = {}
    postings: dict[tuple[str, str], tuple[int, int]] = {}
    for fact in live:
        counts = ANALYZER.term_counts(fact.text)
        length = min(sum(counts.values()), 65535)
        for term, count in counts.items():
            terms[term] = terms.get(term, 0) + 1
            postings[(term, fact.id)] = (min(count, 65535), length)
    return terms, postings


def ids(hits: Iterable[object]) -> list[str]:
    return [h.fact.id for h in hits]  # type: ignore[attr-defined]


def texts(hits: Iterable[object]) -> list[str]:
    return [h.fact.text for h in hits]  # type: ignore[attr-defined]
