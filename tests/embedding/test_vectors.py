"""Stored vectors in a real LMDB store: the queue follows every write once the store has a
model, vectors follow their facts' life, a search reads per-agent blocks, and vectors of
two models are never compared."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact, vector_ops
from graymatter_tui.storage.vector_layout import BLOCK_ROWS
from tests.support.backends import AnyStore
from tests.support.concepts import concept_dimension, concept_vector

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
AGENT = "agent-a"
# Room for every concept of the table however it grows, and still small.
DIM = concept_dimension() + 8


def _unit(rows: list[list[float]]) -> np.ndarray:
    matrix = np.array(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _embed_all(store: LmdbStore, model: str = "concepts", dimension: int = DIM) -> int:
    done = 0
    while rows := store.embed_waiting(50):
        matrix = _unit([concept_vector(text or "x", dimension) for _, _, text in rows])
        done += store.store_vectors(model, rows, matrix)[0]
    return done


def test_a_store_that_never_embeds_queues_nothing(store: LmdbStore) -> None:
    store.put(AGENT, "Payments go through Polar")
    store.put_many(NewFact(AGENT, f"note {i}") for i in range(3))
    state = store.embed_state()
    assert (state.model, state.dimension, state.backlog, state.vectors) == (None, None, 0, 0)


def test_every_write_queues_once_a_model_is_recorded(store: LmdbStore) -> None:
    old = store.put(AGENT, "Payments go through Polar")
    assert store.start_embedding("concepts") == 1
    store.put(AGENT, "We deploy on fridays")
    store.put_many(NewFact(AGENT, f"incident {i}") for i in range(3))
    assert store.embed_backlog() == 5 and store.embed_backlog(AGENT) == 5
    assert store.embed_backlog("nobody") == 0
    assert _embed_all(store) == 5
    state = store.embed_state()
    assert (state.model, state.dimension, state.backlog, state.vectors) == ("concepts", DIM, 0, 5)
    revision, _tomb = store.revise(old.id, "Billing goes through Stripe")
    assert [r[1] for r in store.embed_waiting(10)] == [revision.id]
    assert store.embed_state().vectors == 4  # the old text's vector went with it


def test_nearest_finds_paraphrases_and_never_a_retired_fact(store: LmdbStore) -> None:
    store.start_embedding("concepts")
    polar = store.put(AGENT, "Payments go through Polar")
    friday = store.put(AGENT, "We never deploy on fridays")
    store.put(AGENT, "the cafeteria opens at nine")
    _embed_all(store)
    query = _unit([concept_vector("which billing vendor do we use?", DIM)])[0]
    found = store.nearest(AGENT, "concepts", query, 2)
    assert found is not None and found[0][0] == polar.id
    assert found[0][1] == pytest.approx(0.7071, abs=1e-3)
    store.retire(polar.id)
    found = store.nearest(AGENT, "concepts", query, 3)
    assert found is not None and polar.id not in [i for i, _ in found]
    deploy = _unit([concept_vector("when is the release", DIM)])[0]
    assert store.nearest(AGENT, "concepts", deploy, 1) == [
        (friday.id, pytest.approx(0.7071, abs=1e-3))
    ]


def test_a_search_over_many_blocks_matches_brute_force(store: LmdbStore) -> None:
    store.start_embedding("random")
    facts = store.put_many(NewFact(AGENT, f"fact number {i}") for i in range(BLOCK_ROWS * 2 + 7))
    rng = np.random.default_rng(7)
    matrix = _unit(rng.standard_normal((len(facts), 32)).tolist())
    by_id = {f.id: matrix[n] for n, f in enumerate(facts)}
    while rows := store.embed_waiting(60):
        store.store_vectors("random", rows, np.array([by_id[r[1]] for r in rows]))
    for gone in facts[:40:3]:  # free slots, reused below by new facts
        store.retire(gone.id)
        del by_id[gone.id]
    for fact in store.put_many(NewFact(AGENT, f"late fact {i}") for i in range(10)):
        by_id[fact.id] = _unit(rng.standard_normal((1, 32)).tolist())[0]
    while rows := store.embed_waiting(60):
        store.store_vectors("random", rows, np.array([by_id[r[1]] for r in rows]))
    assert store.embed_state().vectors == len(by_id)
    query = _unit(rng.standard_normal((1, 32)).tolist())[0]
    ids = list(by_id)
    scores = np.array([by_id[i] for i in ids]) @ query
    expected = [ids[n] for n in np.argsort(-scores)[:10]]
    found = store.nearest(AGENT, "random", query, 10)
    assert found is not None and [i for i, _ in found] == expected


def test_vectors_of_another_model_are_never_compared(store: LmdbStore) -> None:
    store.start_embedding("old-model")
    store.put(AGENT, "Payments go through Polar")
    _embed_all(store, "old-model")
    query = _unit([concept_vector("billing", DIM)])[0]
    assert store.nearest(AGENT, "new-model", query, 5) is None
    assert store.nearest(AGENT, "old-model", query[:8] / np.linalg.norm(query[:8]), 5) is None
    assert store.start_embedding("new-model") == 1  # the switch re-queues every live fact
    assert store.nearest(AGENT, "old-model", query, 5) is None  # old vectors are gone
    rows = store.embed_waiting(5)
    assert store.store_vectors("old-model", rows, _unit([[1.0] * DIM])) == (0, 1)
    assert store.embed_backlog() == 1


def test_a_stale_batch_stores_nothing_for_a_changed_fact(store: LmdbStore) -> None:
    store.start_embedding("concepts")
    fact = store.put(AGENT, "Payments go through Polar")
    rows = store.embed_waiting(5)
    revision, _ = store.revise(fact.id, "Payments go through Stripe")
    matrix = _unit([concept_vector(rows[0][2], DIM)])
    assert store.store_vectors("concepts", rows, matrix) == (0, 1)
    assert store.embed_state().vectors == 0
    assert [r[1] for r in store.embed_waiting(5)] == [revision.id]


def test_a_read_only_open_of_an_older_store_has_no_vectors(tmp_path: Path) -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "store-0.4.0" / "store"
    shutil.copytree(fixture, tmp_path / "store")
    with LmdbStore.open(tmp_path / "store", read_only=True) as old:
        assert old.embed_state().backlog == 0
        agent = old.agents()[0].agent_id
        assert old.nearest(agent, "concepts", np.ones(4, dtype=np.float32) / 2, 3) is None


def test_a_batch_that_stores_nothing_records_no_dimension(store: LmdbStore) -> None:
    fact = store.put(AGENT, "Payments go through Polar")
    store.start_embedding("concepts")
    rows = store.embed_waiting(5)
    store.retire(fact.id)
    assert store.store_vectors("concepts", rows, np.zeros((1, 1), dtype=np.float32)) == (0, 1)
    assert store.embed_model() == ("concepts", None)


def test_close_to_with_a_limit_gives_the_closest_facts_as_brute_force_ranks_them(
    store: LmdbStore,
) -> None:
    """The embedder's pass asks for the closest few of each new fact (a template store
    has every fact above the floor): over several blocks, facts of several rows, free
    slots, the limit's facts are the brute-force best by (-cosine, id)."""
    store.start_embedding("random")
    facts = store.put_many(NewFact(AGENT, f"fact number {i}") for i in range(BLOCK_ROWS * 2 + 7))
    rng = np.random.default_rng(11)
    rows_of = {
        f.id: _unit(rng.standard_normal((1 + n % 3, 32)).tolist()) for n, f in enumerate(facts)
    }
    for fact in facts:
        rows = rows_of[fact.id]
        stored, _ = store.store_vectors("random", [(AGENT, fact.id, fact.text)] * len(rows), rows)
        assert stored == 1
    for gone in facts[:30:4]:
        store.retire(gone.id)
        del rows_of[gone.id]
    queries = _unit(rng.standard_normal((9, 32)).tolist())
    floor = 0.05
    unbounded = store.facts_close_to(AGENT, "random", queries, floor)
    assert unbounded is not None
    for limit in (1, 4, 33):
        bounded = store.facts_close_to(AGENT, "random", queries, floor, limit)
        assert bounded is not None and len(bounded) == len(queries)
        for query, whole, closest in zip(queries, unbounded, bounded, strict=True):
            best = {i: float((rows @ query).max()) for i, rows in rows_of.items()}
            ranked = sorted(
                ((i, s) for i, s in best.items() if s >= floor), key=lambda p: (-p[1], p[0])
            )
            assert set(whole) == {i for i, _ in ranked}
            assert list(closest) == [i for i, _ in ranked[:limit]]
            for fact_id, cosine in closest.items():
                assert cosine == pytest.approx(best[fact_id], abs=1e-5)


def test_a_new_model_queues_every_live_fact_a_chunk_at_a_time(
    any_store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of three (a store of 1M facts queues 10,000 at a time): every live fact of
    every agent waits once, in queue order, whatever the chunks' edges."""
    monkeypatch.setattr(vector_ops, "QUEUE_CHUNK", 3)
    first = any_store.put_many(NewFact("agent-b", f"b fact {i}") for i in range(7))
    second = any_store.put_many(NewFact(AGENT, f"a fact {i}") for i in range(5))
    for gone in (first[2], second[4]):
        any_store.retire(gone.id)
    assert any_store.start_embedding("random") == 10
    waiting = [(agent, fact_id) for agent, fact_id, _ in any_store.embed_waiting(100)]
    live = [
        (f.agent_id, f.id) for f in (*first, *second) if f.id not in (first[2].id, second[4].id)
    ]
    assert waiting == sorted(live)
    assert any_store.embed_backlog() == 10
