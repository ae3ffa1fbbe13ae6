"""Hybrid recall: the vector signal fused with the keyword signal, over real LMDB stores,
with `ConceptVectors` (the concept table, brute-force cosine) as the signal.

score = (V·cos + K·kw/kw_max) / (V + K) + R·rec, V = 0.7, K = 0.3, R = 0 by default; a
fact absent from the keyword signal has kw = 0; candidates are the keyword matches plus
the signal's nearest max(50, 4k) with a positive cosine (no similarity floor)."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator, Sequence
from datetime import timedelta

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.embedding.worker import Worker
from graymatter_tui.recall.ranking import RecallWeights, rank, recall
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import NewFact
from tests.recall.helpers import AGENT, ALL_WEIGHTS, FIXED, ids, reference_rank, texts
from tests.support.concept_vectors import ConceptVectors, NoVectors
from tests.support.embedding_fake import EmbeddingOverSocket

POLAR = "Payments go through Polar"
PARAPHRASE = "which billing vendor do we use"  # no shared (stemmed) word; money + vendor
FILLER = ["weather sunny today", "coffee beans roasted", "garden roses bloom"]
V, K = 0.7, 0.3


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
    assert hit.keyword_score is None and hit.keyword_normalised == 0.0
    assert hit.score == pytest.approx(V * 2**-0.5)
    assert (hit.vector_part, hit.keyword_part, hit.recency_part) == (hit.score, 0.0, 0.0)


def test_a_fact_in_both_signals_outranks_one_in_a_single_signal(gm: LmdbStore) -> None:
    # "Polar invoices" matches the keyword "polar" and the money concept; the older
    # "billing runs nightly" shares only the concept; "polar bears" only the keyword.
    made = seed(gm, ["billing runs nightly", "Polar invoices are monthly", "polar bears", *FILLER])
    vectors = ConceptVectors(gm)
    hits = rank(gm, AGENT, "polar payments", vectors=vectors)
    assert texts(hits) == ["Polar invoices are monthly", "billing runs nightly", "polar bears"]
    both, concept, keyword = hits
    # "polar bears" (length 2) is the better keyword match than "polar invoices monthly"
    # (length 3): (1 + ln 2) / (1 + ln 3) of it; it shares no concept (cosine 0).
    assert (keyword.keyword_rank, keyword.keyword_normalised) == (1, 1.0)
    assert keyword.vector_score == 0.0 and keyword.vector_rank is None
    assert keyword.score == pytest.approx(K * 1.0)
    assert both.keyword_rank == 2 and both.vector_rank == 1
    ratio = (1 + math.log(2)) / (1 + math.log(3))
    assert both.keyword_normalised == pytest.approx(ratio)
    assert both.score == pytest.approx(V * 1.0 + K * ratio)
    assert concept.score == pytest.approx(V * 1.0)  # same concept, no shared word
    for hit in hits:
        assert hit.score == pytest.approx(hit.vector_part + hit.keyword_part + hit.recency_part)
    assert set(ids(hits)) == {
        made["billing runs nightly"],
        made["Polar invoices are monthly"],
        made["polar bears"],
    }
    assert vectors.asked == [(AGENT, "polar payments", 50)]


def test_a_meaning_only_match_ranks_above_a_single_incidental_keyword_match(
    gm: LmdbStore, clock: object
) -> None:
    # The newer fact shares one word ("use") and nothing the question is about; the
    # older says what the question asks, in other words. RRF (rank 1 in one signal each)
    # tied them and let recency pick the newer.
    made = seed(gm, [POLAR, *FILLER])
    gm_clock = clock
    gm_clock.advance(days=3)  # type: ignore[attr-defined]
    incidental = gm.put(AGENT, "we use tabs for indentation").id
    hits = rank(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm))
    assert ids(hits) == [made[POLAR], incidental]
    assert hits[0].score == pytest.approx(V * 2**-0.5)
    assert hits[1].score == pytest.approx(K * 1.0)  # its one word is the best keyword match
    assert hits[1].keyword_rank == 1 and hits[1].vector_score == 0.0


def _noise(agent: str, query: str, fact_id: str) -> float:
    """A fixed pseudo-random cosine in [0.2, 0.3): a model that knows nothing here."""
    digest = hashlib.sha256(f"{agent}\0{query}\0{fact_id}".encode()).digest()
    return 0.2 + 0.1 * int.from_bytes(digest[:8], "big") / 2**64


class NoiseVectors:
    """A vector signal with no information: every live fact at a noise cosine."""

    def __init__(self, store: LmdbStore) -> None:
        self.store = store

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        scored = [(f.id, _noise(agent, query, f.id)) for f in self.store.list_facts(agent, "live")]
        return sorted(scored, key=lambda pair: (-pair[1], pair[0]))[:limit]

    def similarities(self, agent: str, query: str, fact_ids: Sequence[str]) -> dict[str, float]:
        return {i: _noise(agent, query, i) for i in fact_ids}


def test_never_worse_than_keywords_when_the_vectors_are_noise(gm: LmdbStore) -> None:
    # 40 facts a keyword picks out (a unique code name each, words shared by ten of
    # them), among 120 fillers: keyword recall finds every one at rank 1.
    rng = random.Random(7)
    names = [f"name{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
    templates = ["vault code for {n}", "ship {n} from warehouse", "ticket for {n}", "account {n}"]
    targets = {
        name: templates[i % 4].format(n=name) + f" {rng.randint(1000, 9999)}"
        for i, name in enumerate(names)
    }
    fillers = [f"{FILLER[i % 3]} note {i}" for i in range(120)]
    items = [*targets.values(), *fillers]
    rng.shuffle(items)
    made = {f.text: f.id for f in gm.put_many(NewFact(AGENT, t) for t in items)}
    noise = NoiseVectors(gm)
    for k in (1, 3, 8):
        keyword_hits = hybrid_hits = 0
        for name, text in targets.items():
            query = templates[names.index(name) % 4].format(n=name)
            keyword_hits += made[text] in ids(rank(gm, AGENT, query, k=k, vectors=NO_VECTORS))
            hybrid_hits += made[text] in ids(rank(gm, AGENT, query, k=k, vectors=noise))
        assert keyword_hits == len(targets)
        assert hybrid_hits >= keyword_hits, k


def test_a_keyword_match_outside_the_nearest_is_fused_with_its_own_cosine(
    gm: LmdbStore,
) -> None:
    # 60 facts mean exactly "money" (cosine 1 to the query): the nearest 50 are all
    # cosine 1, so the keyword match "zebra payment schedule" (money + schedule: cosine
    # 0.7071) is not among them; its cosine is asked for and fused as it is.
    gm.put_many(NewFact(AGENT, f"invoice number {i}") for i in range(60))
    target = gm.put(AGENT, "zebra payment schedule")
    vectors = ConceptVectors(gm)
    hits = rank(gm, AGENT, "zebra invoices", vectors=vectors)
    assert hits[0].fact.id == target.id
    top = hits[0]
    assert top.vector_rank is None  # not in the nearest answer
    assert top.vector_score == pytest.approx(2**-0.5) and not top.vector_stand_in
    assert top.score == pytest.approx(V * 2**-0.5 + K * top.keyword_normalised)
    assert target.id in vectors.asked_similarities[0]


def test_a_fact_without_a_vector_stands_at_the_farthest_neighbour(gm: LmdbStore) -> None:
    made = seed(gm, ["billing runs nightly", "invoices are monthly", "polar bears", *FILLER])
    vectors = ConceptVectors(gm, unembedded={made["polar bears"]})
    hits = rank(gm, AGENT, "polar payments", vectors=vectors)
    by_text = {h.fact.text: h for h in hits}
    waiting = by_text["polar bears"]
    assert waiting.vector_stand_in and waiting.vector_score is None
    # The neighbours: the two money facts, at cosine 1 (fillers share nothing: cosine 0).
    assert sorted(h.vector_score or 0 for h in hits if h is not waiting) == [1.0, 1.0]
    assert waiting.vector_part == pytest.approx(V * 1.0)
    assert waiting.score == pytest.approx(V * 1.0 + K * 1.0)
    # No vector signal that can score it: the same stand-in.
    plain = rank(gm, AGENT, "polar payments", vectors=NoSimilarities(vectors))
    assert {h.fact.text: h.score for h in plain} == pytest.approx(
        {h.fact.text: h.score for h in hits}
    )


class NoSimilarities:
    """A signal answering `nearest` only (no `CandidateSimilarity`)."""

    def __init__(self, inner: ConceptVectors) -> None:
        self.inner = inner

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        return self.inner.nearest(agent, query, limit)


def test_hybrid_ties_go_to_the_older_fact_then_the_smaller_id(gm: LmdbStore) -> None:
    # The same words in another order: equal keyword scores and equal cosines.
    a, b, c = gm.put_many(
        [
            NewFact(AGENT, "polar billing", created_at=FIXED, fact_id="01KJMMA2G0AAAAAAAAAAAAAAAA"),
            NewFact(
                AGENT,
                "billing polar",
                created_at=FIXED - timedelta(days=1),
                fact_id="01KJMMA2G0BBBBBBBBBBBBBBBB",
            ),
            NewFact(
                AGENT,
                "polar, billing",
                created_at=FIXED - timedelta(days=1),
                fact_id="01KJMMA2G0CCCCCCCCCCCCCCCC",
            ),
        ]
    )
    gm.put_many(NewFact(AGENT, text, created_at=FIXED) for text in FILLER)
    hits = rank(gm, AGENT, "polar payments", vectors=ConceptVectors(gm))
    assert len({h.score for h in hits[:3]}) == 1
    assert ids(hits)[:3] == [b.id, c.id, a.id]  # older created_at, then the smaller id
    assert ids(rank(gm, AGENT, "polar payments", k=1, vectors=ConceptVectors(gm))) == [b.id]


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


def test_no_similarity_floor_unless_asked_for(gm: LmdbStore) -> None:
    # A query naming n concepts against a fact holding one of them: cosine 1/sqrt(n).
    # Twelve concepts give 0.2887: a candidate (the old floor of 0.3 dropped it), unless
    # the caller sets a floor.
    made = seed(gm, [POLAR, *FILLER])
    twelve = "billing vendor release incident password friday doctor car lawyer salary canteen boat"
    hits = rank(gm, AGENT, twelve, vectors=ConceptVectors(gm))
    assert ids(hits) == [made[POLAR]]
    assert hits[0].vector_score == pytest.approx(12**-0.5)
    assert rank(gm, AGENT, twelve, vectors=ConceptVectors(gm), min_similarity=0.3) == []


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
def test_no_vector_signal_gives_exactly_the_keyword_order(
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
    assert rank(gm, AGENT, query, weights=weights, vectors=NO_VECTORS) == baseline
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
    # Facts that all carry concepts: a query with no concept word is orthogonal to them
    # (cosine 0: no likeness at all, not a candidate).
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


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


def test_rank_uses_the_configured_embedder_unless_told_otherwise(
    gm: LmdbStore, server: EmbeddingOverSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = seed(gm, [POLAR, *FILLER])
    gm.start_embedding("nomic-embed-text")
    Worker(gm, OllamaEmbedder(server.url, "nomic-embed-text", 10.0)).drain()
    assert rank(gm, AGENT, PARAPHRASE) == []  # embeddings off in the environment
    monkeypatch.setenv("GRAYMATTER_EMBED", "ollama")
    monkeypatch.setenv("GRAYMATTER_EMBED_URL", server.url)
    hits = rank(gm, AGENT, PARAPHRASE)
    assert ids(hits) == [made[POLAR]] and hits[0].vector_rank == 1
    assert hits[0].vector_score == pytest.approx(2**-0.5, abs=1e-6)
    asked = len(server.embed_requests())
    assert ids(rank(gm, AGENT, PARAPHRASE)) == [made[POLAR]]
    assert len(server.embed_requests()) == asked + 1  # one query embedding a query
    assert rank(gm, AGENT, PARAPHRASE, vectors=NO_VECTORS) == []
    assert len(server.embed_requests()) == asked + 1
    monkeypatch.setenv("GRAYMATTER_EMBED", "bert")
    with pytest.raises(InvalidInput, match="unknown embedder"):
        rank(gm, AGENT, PARAPHRASE)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,0.1", RecallWeights(1.0, 0.1)),
        ("0,1", RecallWeights(0.0, 1.0)),
        ("2,1,0.1", RecallWeights(1.0, 0.1, vector=2.0)),
        ("0,1,0", RecallWeights(1.0, 0.0, vector=0.0)),
        ("1,0,0", RecallWeights(0.0, 0.0, vector=1.0)),
        (" 0.7 , 0.3 , 0 ", RecallWeights()),
        ("0.7,0.3,0,0", RecallWeights(date=0.0)),
        ("1,1,0.1,0.25", RecallWeights(1.0, 0.1, vector=1.0, date=0.25)),
    ],
)
def test_weights_parse_two_three_and_four_numbers(raw: str, expected: RecallWeights) -> None:
    assert RecallWeights.parse(raw) == expected
    assert RecallWeights.parse(str(expected)) == expected  # what explain prints parses back
    assert RecallWeights.parse("1,0.1").vector == RecallWeights().vector == 0.7
    assert (RecallWeights().keyword, RecallWeights().recency) == (0.3, 0.0)
    assert RecallWeights.parse("1,0.1").date == RecallWeights().date == 0.15


def test_weights_print_as_earlier_releases_did_unless_the_date_weight_is_set() -> None:
    assert str(RecallWeights()) == "0.7,0.3,0"
    assert str(RecallWeights(date=0.0)) == "0.7,0.3,0,0"


@pytest.mark.parametrize(
    "raw",
    [
        "1",
        "1,2,3,4,5",
        "0,0,0",
        "0,0,0,1",  # a date alone ranks nothing: it only lifts what the signals found
        "0,0",
        "1,-1,1",
        "1,1,1,-1",
        "-1,1",
        "1,inf,1",
        "1,1,1,nan",
        "nan,1",
        "a,b,c",
        "",
        "1,,2",
    ],
)
def test_bad_weights_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput):
        RecallWeights.parse(raw)


def test_the_vector_share_is_what_counts_not_the_sum(gm: LmdbStore) -> None:
    seed(gm, ["billing runs nightly", "Polar invoices are monthly", "polar bears", *FILLER])
    scaled = rank(
        gm,
        AGENT,
        "polar payments",
        vectors=ConceptVectors(gm),
        weights=RecallWeights(3.0, 0.0, vector=7.0),
    )
    default = rank(gm, AGENT, "polar payments", vectors=ConceptVectors(gm))
    assert ids(scaled) == ids(default)
    assert [h.score for h in scaled] == pytest.approx([h.score for h in default])
    assert all(math.isfinite(h.score) for h in default)
