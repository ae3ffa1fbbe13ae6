"""Hybrid recall leaves unscored the keyword candidates that cannot reach the top k
(`ranking._reachable`): the hits, their scores and every explain field must be exactly
what scoring every candidate gives. The vector signal here is an honest one made of
hashes: each (query, text) pair has a fixed cosine, `nearest` lists the best `limit` live
facts, and `similarities` gives the same cosines for any fact asked."""

from __future__ import annotations

import hashlib
import random
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall import ranking
from graymatter_tui.recall.ranking import Hit, RecallWeights, rank
from graymatter_tui.storage import MemoryStore, NewFact
from tests.recall.helpers import AGENT, FIXED

# Common words make many candidates with small keyword scores: the ones left unscored.
VOCABULARY = "deploy server staging caroline support group june port alert disk".split()


class HashVectors:
    def __init__(self, store: MemoryStore, duplicate_cosines: bool) -> None:
        self.store = store
        self.duplicate_cosines = duplicate_cosines  # few distinct cosines: many ties
        self.asked: list[int] = []

    def cosine(self, query: str, text: str) -> float:
        digest = hashlib.sha256(f"{query}\0{text}".encode()).digest()
        value = int.from_bytes(digest[:4], "big") / 2**32 * 1.2 - 0.2
        return round(value, 1) if self.duplicate_cosines else value

    def _scored(self, agent: str, query: str) -> dict[str, float]:
        return {f.id: self.cosine(query, f.text) for f in self.store.list_facts(agent, "live")}

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        ordered = sorted(self._scored(agent, query).items(), key=lambda p: (-p[1], p[0]))
        return ordered[:limit]

    def similarities(self, agent: str, query: str, fact_ids: Sequence[str]) -> dict[str, float]:
        self.asked.append(len(fact_ids))
        scored = self._scored(agent, query)
        return {i: scored[i] for i in fact_ids if i in scored}


def explained(hits: list[Hit]) -> list[tuple[object, ...]]:
    return [(h.fact.id, *(v for n, v in vars(h).items() if n != "fact")) for h in hits]


def made_texts(seed: int, count: int) -> list[str]:
    """`count` texts of one to six words of the vocabulary: well over the 50 neighbours
    the signal lists, so most keyword candidates are left for `_reachable` to judge."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(1, 6))) for _ in range(count)]


weights = st.sampled_from(
    [
        RecallWeights(),
        RecallWeights(0.3, 0.1, vector=0.7),
        RecallWeights(0.6, 0.05, vector=0.4, date=0.3),
        RecallWeights(0.1, 0.0, vector=0.9, date=0.0),
    ]
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(60, 260),
    query=st.sampled_from(["deploy", "caroline support group", "staging port in june", "disk"]),
    k=st.integers(1, 8),
    weights=weights,
    duplicate_cosines=st.booleans(),
)
def test_leaving_unreachable_candidates_unscored_changes_no_hit(
    clean_graymatter_env: None,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    count: int,
    query: str,
    k: int,
    weights: RecallWeights,
    duplicate_cosines: bool,
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = LmdbStore.open(Path(directory) / "s", clock_fn=lambda: FIXED)
        try:
            texts = made_texts(seed, count)
            store.put_many(
                NewFact(AGENT, t, created_at=FIXED - timedelta(days=n)) for n, t in enumerate(texts)
            )
            vectors = HashVectors(store, duplicate_cosines)
            pruned = rank(store, AGENT, query, k=k, weights=weights, vectors=vectors)
            with monkeypatch.context() as patch:
                patch.setattr(ranking, "_reachable", lambda *args: ranking._EVERY)
                everything = rank(store, AGENT, query, k=k, weights=weights, vectors=vectors)
            assert explained(pruned) == explained(everything)
        finally:
            store.close()


def test_a_question_of_common_words_asks_few_cosines(
    clean_graymatter_env: None, tmp_path: Path
) -> None:
    """The point of it: of 400 facts sharing one common word with the query, only those
    whose keyword part could still lift them into the top 8 have their cosine asked."""
    with LmdbStore.open(tmp_path / "s", clock_fn=lambda: FIXED) as store:
        store.put_many(
            NewFact(AGENT, f"note {n} about the deploy window" + " filler" * (n % 7))
            for n in range(400)
        )
        vectors = HashVectors(store, duplicate_cosines=False)
        hits = rank(store, AGENT, "deploy", k=8, vectors=vectors)
        assert len(hits) == 8
        # scoring every candidate asks for the 350 the 50 neighbours leave out
        assert sum(vectors.asked) < 400 - 50


class FixedCosines(HashVectors):
    """Cosines named per text; ties listed by id, as the stored search lists them."""

    def __init__(self, store: MemoryStore, cosines: dict[str, float]) -> None:
        super().__init__(store, duplicate_cosines=False)
        self.cosines = cosines

    def cosine(self, query: str, text: str) -> float:
        return self.cosines[text]


def test_a_candidate_the_neighbours_leave_out_at_the_stand_in_cosine_is_still_found(
    clean_graymatter_env: None, tmp_path: Path
) -> None:
    """The bound's edge: a candidate nearest did not list, whose cosine equals the
    farthest neighbour's, whose keyword part makes it the top hit by a small margin."""
    fillers = [f"filler note {n}" for n in range(49)]
    cosines = {t: 0.8 for t in fillers}
    cosines |= {  # the second is one word shorter: a slightly better keyword match
        "deploy window opens at noon by the east gate of the north car park lot today": 0.8,
        "deploy window opens at noon by the east gate of the north car park lot": 0.8,
    }
    with LmdbStore.open(tmp_path / "s", clock_fn=lambda: FIXED) as store:
        written = store.put_many(
            NewFact(AGENT, t, created_at=FIXED - timedelta(minutes=len(cosines) - n))
            for n, t in enumerate(cosines)
        )
        vectors = FixedCosines(store, cosines)
        weights = RecallWeights(0.5, 0.0, vector=0.5, date=0.0)
        listed = {i for i, _ in vectors.nearest(AGENT, "deploy window", 50) or []}
        left_out = written[-1]
        assert (
            left_out.text
            == "deploy window opens at noon by the east gate of the north car park lot"
            and left_out.id not in listed
        )
        (hit,) = rank(store, AGENT, "deploy window", k=1, weights=weights, vectors=vectors)
        assert hit.fact.id == left_out.id
        assert hit.vector_score == 0.8 and hit.vector_rank is None


def test_a_fact_on_the_named_date_beats_a_floor_of_neighbours_not_written_on_it(
    clean_graymatter_env: None, tmp_path: Path
) -> None:
    """The neighbours' floor counts the date prior only for a neighbour written on a date
    the query names. Here none is: the best neighbour's score (0.63) is the floor, and
    a keyword candidate the neighbours left out, written on the named date, reaches
    0.65 with the prior. Counting the prior for every neighbour would put the floor above
    anything the candidate could reach, and leave it unscored."""
    june = datetime(2025, 6, 10, 9, tzinfo=UTC)
    cosines = {"alpha release notes": 0.9, **{f"filler note {n}": 0.3 for n in range(49)}}
    cosines["deploy checklist"] = 0.29  # just below the farthest neighbour: left out
    with LmdbStore.open(tmp_path / "s", clock_fn=lambda: FIXED) as store:
        store.put_many(
            NewFact(AGENT, t, created_at=june if t == "deploy checklist" else FIXED)
            for t in cosines
        )
        vectors = FixedCosines(store, cosines)
        listed = {i for i, _ in vectors.nearest(AGENT, "deploy in june", 50) or []}
        (wanted,) = [f for f in store.list_facts(AGENT, "live") if f.text == "deploy checklist"]
        assert wanted.id not in listed
        (hit,) = rank(store, AGENT, "deploy in june", k=1, vectors=vectors)
        assert hit.fact.id == wanted.id
        assert hit.written_on_named_date and hit.vector_rank is None
