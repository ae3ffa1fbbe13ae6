"""A vector per sentence (ADR 0038): a fact's similarity is its best sentence's, its rows
are written, replaced and freed together, and a search answers each fact once, the same
from the blocks and from the in-memory copy."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.embedding.vector_cache import VectorCache
from graymatter_tui.embedding.worker import Worker
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.vector_rank import ROWS_PER_FACT
from tests.support.concepts import concept_vector
from tests.support.embedding_fake import EmbeddingOverSocket

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
AGENT = "agent-a"
MODEL = "nomic-embed-text"
DIM = 24


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


def _concept(text: str) -> np.ndarray:
    return np.array(concept_vector(text, 768), dtype=np.float32)


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _row_ids(store: LmdbStore, model: str = "m") -> tuple[str, ...]:
    blocks = store.vector_blocks_since(AGENT, model, -1)
    assert blocks is not None
    return tuple(name for block in sorted(blocks.changed) for name in blocks.changed[block][1])


def _store(store: LmdbStore, fact_id: str, text: str, rows: np.ndarray, model: str = "m") -> None:
    stored = store.store_vectors(model, [(AGENT, fact_id, text)] * len(rows), rows)
    assert stored == (1, 0)


def test_a_two_sentence_fact_is_found_at_its_best_sentences_cosine(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    text = "Payments go through Polar. We never deploy on fridays."
    fact = store.put(AGENT, text)
    other = store.put(AGENT, "The outage hit billing")
    result = Worker(store, OllamaEmbedder(server.url, MODEL, 5.0), batch=32).drain()
    assert (result.stored, result.backlog) == (2, 0)
    assert len(server.embed_requests()) == 1  # every sentence of the batch in one call
    assert store.embed_state().vectors == 2  # counted in facts, not rows
    query = _concept("when do releases ship")
    found = store.nearest(AGENT, MODEL, query, 8)
    assert found is not None and [i for i, _ in found] == [fact.id, other.id]
    best = float(query @ _concept("We never deploy on fridays."))
    whole = float(query @ _concept(text))
    assert found[0][1] == pytest.approx(best, abs=1e-5)
    assert best > whole + 0.1  # what one vector for the whole text would have scored


def test_a_batch_counts_sentences_and_holds_whole_facts(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    store.put_many(NewFact(AGENT, f"Fact {i} first. Fact {i} second.") for i in range(3))
    result = Worker(store, OllamaEmbedder(server.url, MODEL, 5.0), batch=3).drain()
    assert (result.stored, result.backlog) == (3, 0)
    sizes = [len(r.json["input"]) for r in server.embed_requests()]
    assert sizes == [2, 2, 2]  # two pieces fit in 3; a third fact's two would not


def test_retiring_a_fact_frees_all_its_rows_for_reuse(store: LmdbStore) -> None:
    store.start_embedding("m")
    first, second = store.put_many(NewFact(AGENT, f"fact {i}") for i in range(2))
    rng = np.random.default_rng(1)
    _store(store, first.id, first.text, _unit(rng.standard_normal((3, DIM))))
    assert _row_ids(store) == (first.id,) * 3
    store.retire(first.id)
    assert _row_ids(store) == ("",) * 3
    assert store.embed_state().vectors == 0
    _store(store, second.id, second.text, _unit(rng.standard_normal((3, DIM))))
    assert _row_ids(store) == (second.id,) * 3  # the freed slots, no new rows


def test_re_embedding_a_fact_replaces_all_its_rows(store: LmdbStore) -> None:
    store.start_embedding("m")
    fact = store.put(AGENT, "one fact")
    rng = np.random.default_rng(2)
    old = _unit(rng.standard_normal((3, DIM)))
    _store(store, fact.id, fact.text, old)
    store.write(lambda tx: tx.queue_put(AGENT, fact.id))
    new = _unit(rng.standard_normal((1, DIM)))
    _store(store, fact.id, fact.text, new)
    assert sorted(_row_ids(store)) == ["", "", fact.id]
    for query in old:  # an old row never answers any more
        found = store.nearest(AGENT, "m", query, 5)
        assert found == [(fact.id, pytest.approx(float(query @ new[0]), abs=1e-5))]
    revision, _ = store.revise(fact.id, "the fact revised")
    _store(store, revision.id, revision.text, _unit(rng.standard_normal((2, DIM))))
    assert sorted(_row_ids(store)) == ["", revision.id, revision.id]
    assert store.embed_state().vectors == 1


def _multi_row_store(store: LmdbStore, facts: int, seed: int) -> list[str]:
    store.start_embedding("m")
    rng = np.random.default_rng(seed)
    made = store.put_many(NewFact(AGENT, f"fact {i}") for i in range(facts))
    for fact in made:
        _store(store, fact.id, fact.text, _unit(rng.standard_normal((rng.integers(1, 6), DIM))))
    return [fact.id for fact in made]


def test_the_cache_and_the_block_search_agree_on_multi_row_facts(store: LmdbStore) -> None:
    ids = _multi_row_store(store, 150, seed=3)
    for gone in ids[:40:3]:
        store.retire(gone)
    cache = VectorCache(store)
    probe = _unit(np.ones((1, DIM)))[0]
    cache.nearest(AGENT, "m", probe, 1)
    assert cache.wait(AGENT, timeout=30)
    for query in _unit(np.random.default_rng(4).standard_normal((30, DIM))):
        for limit in (1, 10, 200):
            want = store.nearest(AGENT, "m", query, limit)
            got = cache.nearest(AGENT, "m", query, limit)
            assert want is not None and got is not None
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
            names = [i for i, _ in want]
            assert len(names) == len(set(names)) == min(limit, 150 - len(ids[:40:3]))


def test_a_fact_with_more_rows_than_the_first_take_never_hides_the_next(store: LmdbStore) -> None:
    store.start_embedding("m")
    crowded, runner_up = store.put_many(NewFact(AGENT, f"fact {i}") for i in range(2))
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    many = 2 * ROWS_PER_FACT + 10  # more than the first take for a limit of 2
    noise = 0.01 * np.random.default_rng(5).standard_normal((many, DIM))
    _store(store, crowded.id, crowded.text, _unit(np.tile(query, (many, 1)) + noise))
    _store(store, runner_up.id, runner_up.text, _unit(np.ones((1, DIM))))  # worse than all
    cache = VectorCache(store)
    cache.nearest(AGENT, "m", query, 1)
    assert cache.wait(AGENT, timeout=30)
    for search in (store.nearest, cache.nearest):
        found = search(AGENT, "m", query, 2)
        assert found is not None and [i for i, _ in found] == [crowded.id, runner_up.id]
