"""The per-process vector cache (`embedding.vector_cache`, ADR 0045) over a real LMDB store:
it answers exactly what the block search answers, sees every vector stored and every fact
retired after it was built, drops itself on a switch of model, and never mixes agents."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import Fact
from graymatter_tui.embedding import vector_cache
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.embedding.query import StoreQueryVectors
from graymatter_tui.embedding.vector_cache import VectorCache
from graymatter_tui.embedding.worker import Worker
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.vector_layout import BLOCK_ROWS
from tests.support.embedding_fake import EmbeddingOverSocket

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
AGENT, OTHER = "agent-a", "agent-b"
DIM = 24
TEXTS = ["Payments go through Polar", "We never deploy on fridays", "Lunch is at noon"]


def _clustered(rng: np.random.Generator, n: int, centroids: int = 8) -> np.ndarray:
    """Unit vectors around a few centroids: many near-ties, as real embeddings have."""
    centres = rng.standard_normal((centroids, DIM)).astype(np.float32)
    rows = centres[rng.integers(0, centroids, n)] + 0.3 * rng.standard_normal((n, DIM))
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _embed(store: LmdbStore, vectors: dict[str, np.ndarray], model: str = "m") -> None:
    while rows := store.embed_waiting(100):
        store.store_vectors(model, rows, np.array([vectors[r[1]] for r in rows]))


def _populate(store: LmdbStore, agent: str, n: int, seed: int) -> dict[str, np.ndarray]:
    facts = store.put_many(NewFact(agent, f"{agent} fact {i}") for i in range(n))
    matrix = _clustered(np.random.default_rng(seed), n)
    return {fact.id: matrix[i] for i, fact in enumerate(facts)}


def _built(store: LmdbStore, agent: str = AGENT, model: str = "m") -> VectorCache:
    cache = VectorCache(store)
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    assert cache.nearest(agent, model, query, 5) == store.nearest(agent, model, query, 5)
    assert cache.wait(agent, timeout=30)
    return cache


def _same(got: list[tuple[str, float]] | None, want: list[tuple[str, float]] | None) -> None:
    assert got is not None and want is not None
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


@pytest.mark.parametrize("chunk_blocks", [vector_cache.CHUNK_BLOCKS, 1])
def test_the_cache_answers_what_the_block_search_answers(
    store: LmdbStore, chunk_blocks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_cache, "CHUNK_BLOCKS", chunk_blocks)  # 1: rows span chunks
    store.start_embedding("m")
    vectors = _populate(store, AGENT, BLOCK_ROWS * 3 + 17, seed=1)
    _embed(store, vectors)
    for gone in list(vectors)[:60:4]:  # freed rows in the first block
        store.retire(gone)
    cache = _built(store)
    rng = np.random.default_rng(2)
    for query in _clustered(rng, 40):
        for limit in (1, 10, 50):
            _same(cache.nearest(AGENT, "m", query, limit), store.nearest(AGENT, "m", query, limit))


def test_a_vector_stored_after_the_build_is_found_next_query(store: LmdbStore) -> None:
    store.start_embedding("m")
    _embed(store, _populate(store, AGENT, BLOCK_ROWS + 5, seed=3))
    cache = _built(store)
    late: Fact = store.put(AGENT, "a late fact")
    query = _clustered(np.random.default_rng(4), 1)[0]
    _embed(store, {late.id: query})
    found = cache.nearest(AGENT, "m", query, 3)
    assert found is not None and found[0] == (late.id, pytest.approx(1.0, abs=1e-5))
    _same(found, store.nearest(AGENT, "m", query, 3))


def test_a_fact_retired_after_the_build_is_never_returned(store: LmdbStore) -> None:
    store.start_embedding("m")
    vectors = _populate(store, AGENT, 50, seed=5)
    _embed(store, vectors)
    cache = _built(store)
    target = list(vectors)[7]
    found = cache.nearest(AGENT, "m", vectors[target], 1)
    assert found is not None and found[0][0] == target
    store.retire(target)
    found = cache.nearest(AGENT, "m", vectors[target], 50)
    assert found is not None and target not in [i for i, _ in found]
    _same(found, store.nearest(AGENT, "m", vectors[target], 50))


def test_a_switch_of_model_drops_the_cache(store: LmdbStore) -> None:
    store.start_embedding("old")
    vectors = _populate(store, AGENT, 40, seed=6)
    _embed(store, vectors, "old")
    cache = _built(store, model="old")
    store.start_embedding("new")  # every old vector goes, every live fact is queued
    query = next(iter(vectors.values()))
    assert cache.nearest(AGENT, "old", query, 5) is None
    assert cache.nearest(AGENT, "new", query, 5) is None and not cache.ready(AGENT)
    fresh = {fid: -vector for fid, vector in vectors.items()}  # the new model's vectors
    _embed(store, fresh, "new")
    _same(cache.nearest(AGENT, "new", -query, 5), store.nearest(AGENT, "new", -query, 5))
    assert cache.wait(AGENT, timeout=30)
    _same(cache.nearest(AGENT, "new", -query, 5), store.nearest(AGENT, "new", -query, 5))


def test_a_switch_back_to_the_same_model_name_forgets_the_old_rows(store: LmdbStore) -> None:
    store.start_embedding("m")
    vectors = _populate(store, AGENT, BLOCK_ROWS * 2, seed=7)
    _embed(store, vectors)
    cache = _built(store)
    store.start_embedding("m")  # a re-embed: the table is emptied, then refilled slowly
    rows = store.embed_waiting(10)
    first = {fact_id for _, fact_id, _ in rows}
    store.store_vectors("m", rows, np.array([vectors[row[1]] for row in rows]))
    query = vectors[list(vectors)[-1]]  # its old vector is gone from the store
    found = cache.nearest(AGENT, "m", query, 50)
    assert found is not None and {i for i, _ in found} <= set(first)
    _same(found, store.nearest(AGENT, "m", query, 50))


def test_two_agents_never_mix(store: LmdbStore) -> None:
    store.start_embedding("m")
    mine = _populate(store, AGENT, 60, seed=8)
    theirs = _populate(store, OTHER, 60, seed=8)  # the very same vectors
    _embed(store, {**mine, **theirs})
    cache = _built(store)
    assert cache.nearest(OTHER, "m", np.ones(DIM, np.float32) / np.sqrt(DIM), 1) is not None
    assert cache.wait(OTHER, timeout=30)
    for vector in list(mine.values())[:5]:
        found_mine = cache.nearest(AGENT, "m", vector, 60)
        found_theirs = cache.nearest(OTHER, "m", vector, 60)
        assert found_mine is not None and {i for i, _ in found_mine} == set(mine)
        assert found_theirs is not None and {i for i, _ in found_theirs} == set(theirs)


def test_only_changed_blocks_are_read_again(store: LmdbStore) -> None:
    store.start_embedding("m")
    vectors = _populate(store, AGENT, BLOCK_ROWS * 3, seed=9)
    _embed(store, vectors)
    whole = store.vector_blocks_since(AGENT, "m", -1)
    assert whole is not None and sorted(whole.changed) == [0, 1, 2] == list(whole.blocks)
    store.retire(list(vectors)[BLOCK_ROWS + 1])  # a row of block 1 is freed
    since = store.vector_blocks_since(AGENT, "m", whole.generation)
    assert since is not None and list(since.changed) == [1] and since.blocks == (0, 1, 2)
    assert since.changed[1][1][1] == ""  # the freed row has no id
    assert store.vector_blocks_since(AGENT, "other", -1) is None


def test_only_a_long_running_signal_keeps_a_cache(store: LmdbStore) -> None:
    embedder = OllamaEmbedder("http://127.0.0.1:9", "m", 1.0)
    assert StoreQueryVectors(store, embedder, 1.0).cache is None  # one-shot `recall`
    assert isinstance(StoreQueryVectors(store, embedder, 1.0, cache=True).cache, VectorCache)


def test_the_signal_of_a_long_running_process_follows_the_store(store: LmdbStore) -> None:
    """End to end over the scripted server: the cached signal answers what the one-shot one
    does, before and after a fact is retired and another embedded."""
    with EmbeddingOverSocket() as server:
        ids = {text: store.put(AGENT, text).id for text in TEXTS}
        worker = Worker(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0))
        worker.drain()
        embedder = OllamaEmbedder(server.url, "nomic-embed-text", 10.0)
        cached = StoreQueryVectors(store, embedder, 5.0, cache=True)
        one_shot = StoreQueryVectors(store, embedder, 5.0)
        question = "which billing vendor do we use?"
        assert cached.nearest(AGENT, question, 3) == one_shot.nearest(AGENT, question, 3)
        assert cached.cache is not None and cached.cache.wait(AGENT, timeout=30)
        found = cached.nearest(AGENT, question, 1)
        assert found is not None and found[0][0] == ids["Payments go through Polar"]
        store.retire(ids["Payments go through Polar"])
        later = store.put(AGENT, "Invoices are paid to our vendor monthly")
        worker.drain()
        found = cached.nearest(AGENT, question, 3)
        assert found == one_shot.nearest(AGENT, question, 3)
        assert found is not None and found[0][0] == later.id
        assert ids["Payments go through Polar"] not in [i for i, _ in found]
        assert cached.cache.ready(AGENT)  # answered by the copy, not the blocks


@pytest.mark.parametrize("chunk_blocks", [vector_cache.CHUNK_BLOCKS, 1])
def test_similarities_are_the_cosines_nearest_gives_from_blocks_and_cache(
    store: LmdbStore, chunk_blocks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What recall asks for a keyword match outside the nearest answer: its own cosine.
    monkeypatch.setattr(vector_cache, "CHUNK_BLOCKS", chunk_blocks)
    store.start_embedding("m")
    vectors = _populate(store, AGENT, BLOCK_ROWS * 2 + 9, seed=5)
    others = _populate(store, OTHER, 3, seed=6)
    _embed(store, {**vectors, **others})
    retired = list(vectors)[3]
    store.retire(retired)
    waiting = store.put(AGENT, "no vector yet").id  # stays queued: no vector
    other = next(iter(others))  # another agent's fact
    cache = _built(store)
    query = _clustered(np.random.default_rng(8), 1)[0]
    every = dict(store.nearest(AGENT, "m", query, len(vectors)) or [])
    asked = [*list(vectors)[:40:3], retired, waiting, other, "01ZZZZZZZZZZZZZZZZZZZZZZZZ"]
    from_blocks = store.similarities(AGENT, "m", query, asked)
    assert set(from_blocks) == {i for i in asked if i in every}  # live, embedded, this agent
    assert from_blocks == pytest.approx({i: every[i] for i in from_blocks}, abs=1e-6)
    assert cache.nearest(AGENT, "m", query, 5) is not None  # the cache's last query
    assert cache.similarities(AGENT, "m", query, asked) == pytest.approx(from_blocks, abs=1e-6)
    another = _clustered(np.random.default_rng(9), 1)[0]  # not the last query: computed
    assert cache.similarities(AGENT, "m", another, asked) == pytest.approx(
        store.similarities(AGENT, "m", another, asked), abs=1e-6
    )
    assert store.similarities(AGENT, "other-model", query, asked) == {}
    assert store.similarities(AGENT, "m", query[:5], asked) == {}  # another dimension


def test_the_query_signal_gives_the_cosines_of_the_query_it_just_embedded(
    store: LmdbStore,
) -> None:
    with EmbeddingOverSocket() as server:
        facts = [store.put(AGENT, text) for text in TEXTS]
        embedder = OllamaEmbedder(server.url, "nomic-embed-text", 10.0)
        Worker(store, embedder).drain()
        signal = StoreQueryVectors(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0), 5.0)
        assert signal.similarities(AGENT, "billing vendor", [facts[0].id]) == {}  # not asked yet
        nearest = dict(signal.nearest(AGENT, "billing vendor", 10) or [])
        calls = len(server.embed_requests())
        found = signal.similarities(AGENT, "billing vendor", [f.id for f in facts])
        assert found == pytest.approx({f.id: nearest[f.id] for f in facts}, abs=1e-6)
        assert len(server.embed_requests()) == calls  # the query is not embedded again
        assert signal.similarities(AGENT, "another query", [facts[0].id]) == {}


class _HeldFirstRead:
    """The real store, whose first full read of an agent's blocks (a cache build) waits
    at a gate: the build is under way while the test writes and queries."""

    def __init__(self, store: LmdbStore) -> None:
        self.store = store
        self.gate = threading.Event()
        self.reading = threading.Event()
        self.first = True

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def vector_blocks_since(self, agent: str, model: str, generation: int) -> object:
        if generation == -1 and self.first:
            self.first = False
            blocks = self.store.vector_blocks_since(agent, model, generation)
            self.reading.set()
            assert self.gate.wait(30)
            return blocks
        return self.store.vector_blocks_since(agent, model, generation)


def test_a_build_that_read_nothing_runs_again_for_the_query_that_came_meanwhile(
    store: LmdbStore,
) -> None:
    store.start_embedding("m")
    vectors = _populate(store, AGENT, 40, seed=8)
    source = _HeldFirstRead(store)
    cache = VectorCache(source)  # type: ignore[arg-type]
    query = next(iter(vectors.values()))
    assert cache.nearest(AGENT, "m", query, 5) is None  # no vector yet; a build starts
    assert source.reading.wait(30)  # ...and has read the (empty) blocks
    _embed(store, vectors)
    _same(cache.nearest(AGENT, "m", query, 5), store.nearest(AGENT, "m", query, 5))
    source.gate.set()  # the first build ends with nothing; the second finds the vectors
    assert cache.wait(AGENT, timeout=30)
    _same(cache.nearest(AGENT, "m", query, 5), store.nearest(AGENT, "m", query, 5))


def test_the_hook_runs_once_each_matrix_is_built(store: LmdbStore) -> None:
    store.start_embedding("m")
    _embed(store, _populate(store, AGENT, 40, seed=4))
    built: list[bool] = []
    cache = VectorCache(store, on_built=lambda: built.append(cache.ready(AGENT)))
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    cache.nearest(AGENT, "m", query, 5)  # starts the build
    assert cache.wait(AGENT, timeout=30)
    assert built == [True]  # once, and only when the matrix is in place
    cache.nearest(AGENT, "m", query, 5)  # answered from the matrix: no build, no call
    assert built == [True]

    def failing() -> None:
        raise RuntimeError("a hook that fails")

    other = VectorCache(store, on_built=failing)
    other.nearest(AGENT, "m", query, 5)
    assert other.wait(AGENT, timeout=30)  # the cache is built all the same
