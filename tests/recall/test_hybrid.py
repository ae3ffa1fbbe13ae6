"""Hybrid recall: the vector signal fused with keyword and recency (RRF, k = 60), over real
LMDB stores, with `ConceptVectors` (the concept table, brute-force cosine) as the signal.

score = wv / (60 + vector_rank) + wk / (60 + keyword_rank) + wr / (60 + recency_rank), a
term only for the signals a fact is in; every candidate has a recency rank among all
candidates (keyword's and vector's)."""

from __future__ import annotations

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.recall.ranking import MIN_SIMILARITY, RecallWeights, rank, recall
from tests.recall.helpers import AGENT, ALL_WEIGHTS, ids, reference_rank, texts
from tests.support.concept_vectors import ConceptVectors, NoVectors

POLAR = "Payments go through Polar"
PARAPHRASE = "which billing vendor do we use"  # no shared (stemmed) word; money + vendor
FILLER = ["weather sunny today", "coffee beans roasted", "garden roses bloom"]


def seed(store: LmdbStore, items: list[str]) -> dict[str, str]:
    return {text: store.put(AGENT, text).id for text in items}


def test_a_paraphrase_is_found_only_through_vectors(gm: LmdbStore) -> None:
    made = seed(gm, [POLAR, *FILLER])
    assert rank(gm, AGENT, PARAPHRASE) == []
    hits = rank(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm))
    assert ids(hits) == [made[POLAR]]
    (hit,) = hits
    assert (hit.vector_rank, hit.keyword_rank, hit.recency_rank) == (1, None, 1)
    assert hit.vector_score == pytest.approx(2**-0.5)
    assert hit.keyword_score is None
    assert hit.score == pytest.approx(1.0 / 61 + 0.1 / 61)


def test_a_fact_in_both_signals_outranks_one_in_a_single_signal(gm: LmdbStore) -> None:
    # "Polar invoices" matches the keyword "polar" and the money concept; the older
    # "billing runs nightly" shares only the concept; "polar bears" only the keyword.
    made = seed(gm, ["billing runs nightly", "Polar invoices are monthly", "polar bears", *FILLER])
    vectors = ConceptVectors(gm)
    hits = rank(gm, AGENT, "polar payments", vectors=vectors)
    assert texts(hits)[0] == "Polar invoices are monthly"
    top = hits[0]
    assert top.keyword_rank is not None and top.vector_rank is not None
    assert top.score == pytest.approx(
        1.0 / (60 + top.vector_rank) + 1.0 / (60 + top.keyword_rank) + 0.1 / (60 + top.recency_rank)
    )
    assert set(ids(hits)) == {
        made["billing runs nightly"],
        made["Polar invoices are monthly"],
        made["polar bears"],
    }
    for hit in hits:
        expected = 0.1 / (60 + hit.recency_rank)
        if hit.keyword_rank is not None:
            expected += 1.0 / (60 + hit.keyword_rank)
        if hit.vector_rank is not None:
            expected += 1.0 / (60 + hit.vector_rank)
        assert hit.score == pytest.approx(expected)
    # Recency ranks run over every candidate, newest first.
    assert sorted(h.recency_rank for h in hits) == [1, 2, 3]
    assert vectors.asked == [(AGENT, "polar payments", 50)]


def test_a_tombstone_named_by_the_vector_signal_is_never_returned(gm: LmdbStore) -> None:
    made = seed(gm, [POLAR, "billing runs nightly", *FILLER])
    retired = gm.retire(made[POLAR])
    revision, old = gm.revise(made["billing runs nightly"], "invoices are sent weekly")
    # A lagging vector store still answers with both superseded ids, at the top.
    stale = [(retired.id, 1.0), (old.id, 0.99)]
    for run in (rank, recall):
        hits = run(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm, stale=stale))
        assert ids(hits) == [revision.id]
        assert hits[0].vector_rank == 1  # the stale answers take no rank either
    assert gm.find(retired.id) is not None and gm.find(retired.id).is_tombstone  # type: ignore[union-attr]


def test_ids_the_store_does_not_hold_for_this_agent_are_ignored(gm: LmdbStore) -> None:
    made = seed(gm, [POLAR, *FILLER])
    other = gm.put("someone-else", "billing vendor is Stripe")
    stale = [
        ("01ZZZZZZZZZZZZZZZZZZZZZZZZ", 1.0),  # no such fact
        ("", 1.0),
        ("x" * 500, 1.0),
        ("\x00bad", 1.0),
        (other.id, 1.0),  # another agent's fact
        (made[POLAR], float("nan")),  # a broken score never counts
    ]
    hits = rank(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm, stale=stale))
    assert ids(hits) == [made[POLAR]]
    assert hits[0].vector_rank == 1  # the ignored answers take no rank either


def test_neighbours_below_the_similarity_floor_are_not_candidates(gm: LmdbStore) -> None:
    # A query naming n concepts against a fact holding one of them: cosine 1/sqrt(n).
    # Eleven concepts give 0.3015 (kept), twelve 0.2887 (dropped).
    made = seed(gm, [POLAR, *FILLER])
    assert MIN_SIMILARITY == 0.3
    eleven = "billing vendor release incident password friday doctor car lawyer salary canteen"
    assert ids(rank(gm, AGENT, eleven, vectors=ConceptVectors(gm))) == [made[POLAR]]
    assert rank(gm, AGENT, eleven + " boat", vectors=ConceptVectors(gm)) == []


def test_equal_cosines_share_a_vector_rank(gm: LmdbStore) -> None:
    # Three facts the concept table cannot tell apart (money alone), one it ranks lower.
    made = seed(gm, ["invoices are monthly", "billing runs nightly", POLAR, "pay the vendor"])
    hits = rank(gm, AGENT, "which charges", vectors=ConceptVectors(gm))
    ranks = {h.fact.id: h.vector_rank for h in hits}
    assert ranks == {
        made["invoices are monthly"]: 1,
        made["billing runs nightly"]: 1,
        made[POLAR]: 1,
        made["pay the vendor"]: 4,
    }


@pytest.mark.parametrize("weights", ALL_WEIGHTS, ids=str)
def test_no_vector_signal_gives_exactly_the_keyword_and_recency_order(
    gm: LmdbStore, weights: RecallWeights
) -> None:
    seed(
        gm,
        [
            "router firmware upgrade",
            "router password rotated",
            "firmware notes",
            "router router firmware",
            POLAR,
            *FILLER,
        ],
    )
    query = "router firmware"
    baseline = rank(gm, AGENT, query, weights=weights)
    expected = reference_rank(gm.list_facts(AGENT, "all"), query, weights=weights)
    assert ids(baseline) == [fact_id for fact_id, _ in expected]
    assert [h.score for h in baseline] == pytest.approx([score for _, score in expected])
    silent = NoVectors()
    assert rank(gm, AGENT, query, weights=weights, vectors=silent) == baseline
    assert silent.asked == 1
    # A vector weight of 0 leaves the signal out entirely (it is not even asked).
    off = RecallWeights(weights.keyword, weights.recency, vector=0.0)
    concept = ConceptVectors(gm)
    assert rank(gm, AGENT, query, weights=off, vectors=concept) == baseline
    assert concept.asked == []
    assert all(h.vector_rank is None and h.vector_score is None for h in baseline)


@pytest.mark.parametrize(
    "query",
    ["the and of", "?!... ,,, ---", "   ", "привет мир", "支払いの業者"],
    ids=["stop-words", "punctuation", "blank", "cyrillic", "japanese"],
)
def test_meaningless_or_foreign_queries_return_nothing(gm: LmdbStore, query: str) -> None:
    # Facts that all carry concepts: a query with no concept word is orthogonal to them.
    seed(gm, [POLAR, "deploy on fridays", "rotate the password"])
    vectors = ConceptVectors(gm)
    assert rank(gm, AGENT, query, vectors=vectors) == []
    assert recall(gm, AGENT, query, vectors=vectors) == []


def test_stop_word_queries_do_not_ask_the_vector_signal(gm: LmdbStore) -> None:
    seed(gm, [POLAR])
    vectors = ConceptVectors(gm)
    assert rank(gm, AGENT, "the of and", vectors=vectors) == []
    assert vectors.asked == []


def test_recall_records_the_access_of_vector_only_hits(gm: LmdbStore) -> None:
    made = seed(gm, [POLAR, *FILLER])
    recall(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm))
    assert gm.find(made[POLAR]).access_count == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,0.1", RecallWeights(1.0, 0.1)),
        ("0,1", RecallWeights(0.0, 1.0)),
        ("2,1,0.1", RecallWeights(1.0, 0.1, vector=2.0)),
        ("0,1,0", RecallWeights(1.0, 0.0, vector=0.0)),
        ("1,0,0", RecallWeights(0.0, 0.0, vector=1.0)),
    ],
)
def test_weights_parse_two_and_three_numbers(raw: str, expected: RecallWeights) -> None:
    assert RecallWeights.parse(raw) == expected
    assert RecallWeights.parse("1,0.1").vector == RecallWeights().vector == 1.0


@pytest.mark.parametrize("raw", ["1", "1,2,3,4", "0,0,0", "1,-1,1", "1,inf,1", "a,b,c", ""])
def test_bad_weights_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput):
        RecallWeights.parse(raw)
