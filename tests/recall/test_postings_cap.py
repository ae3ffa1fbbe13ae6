"""A term held by more facts than `POSTINGS_PER_TERM` is read from its newest facts only
(ADR 0044), which bounds the work of any query. What that may change, and what it must
not: a fact that holds a rarer query term is scored exactly as without the cap (the common
term's weight in it is looked up directly), so it is never lost to the cap; only a query
made of common terms alone ranks among their newest facts."""

from __future__ import annotations

from datetime import timedelta

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall.ranking import POSTINGS_PER_TERM, RecallWeights, rank
from graymatter_tui.storage import NewFact
from tests.recall.helpers import AGENT, FIXED, reference_rank

COMMON = POSTINGS_PER_TERM + 300  # facts holding "deploy": over the cap
OTHERS = COMMON + 50  # so "deploy" stays under half the store (an informative term)
KEYWORD_ONLY = RecallWeights(1.0, 0.0)


def _fill(store: LmdbStore) -> list[str]:
    """Oldest first: ten old facts hold the rare word "zanzibar" (four also "deploy", one
    of them twice and short, the best "deploy" fact of all; "zanzibar archive note" would
    tie with "zanzibar deploy window" without the common term's weight, and win the tie by
    age); then the many ordinary ones."""
    texts = [
        "zanzibar archive note",  # as long as "zanzibar deploy window", and older
        "deploy deploy zanzibar",
        "zanzibar deploy notes for the quarter",
        "zanzibar rollout and deploy checklist",
        "zanzibar deploy window",
        "zanzibar",
        *(f"zanzibar archive item {n}" for n in range(4)),
        *(f"routine deploy of service {n} went fine today" for n in range(COMMON - 4)),
        *(f"unrelated standup note number {n}" for n in range(OTHERS)),
    ]
    store.put_many(
        NewFact(AGENT, text, created_at=FIXED + timedelta(seconds=n))
        for n, text in enumerate(texts)
    )
    return texts


def test_a_fact_holding_a_rare_query_term_scores_as_without_the_cap(gm: LmdbStore) -> None:
    _fill(gm)
    live = gm.list_facts(AGENT, "live")
    for query in ("zanzibar deploy", "deploy zanzibar checklist"):
        got = rank(gm, AGENT, query, weights=KEYWORD_ONLY)
        want = reference_rank(live, query, weights=KEYWORD_ONLY)
        assert [(h.fact.id, round(h.score, 12)) for h in got] == [
            (i, round(s, 12)) for i, s in want
        ]
        assert any(h.fact.text == "deploy deploy zanzibar" for h in got)


def test_a_query_of_a_common_term_alone_ranks_its_newest_facts(gm: LmdbStore) -> None:
    texts = _fill(gm)
    holding = [t for t in texts if "deploy" in t.split()]
    newest = set(holding[-POSTINGS_PER_TERM:])
    hits = rank(gm, AGENT, "deploy", k=8)
    assert len(hits) == 8 and all(h.fact.text in newest for h in hits)
    # The trade-off, visible: the best "deploy" fact is older than the newest facts read.
    assert "deploy deploy zanzibar" not in [h.fact.text for h in hits]
    assert len(holding) > POSTINGS_PER_TERM


def test_no_cap_below_it(gm: LmdbStore) -> None:
    gm.put_many(NewFact(AGENT, f"deploy note {n}") for n in range(50))
    live = gm.list_facts(AGENT, "live")
    got = rank(gm, AGENT, "deploy note", weights=RecallWeights())
    assert [h.fact.id for h in got] == [i for i, _ in reference_rank(live, "deploy note")]
