"""Embedding vectors on both backends (ADR 0058): one script with the same clock, the same
seeded ids and the same fixed vectors gives the same `nearest` answers (ids, and scores
within float tolerance) on LMDB and PostgreSQL, through curation (retire, revise, delete,
pin, touch), a vector that arrives for a fact revised meanwhile, a switch of model, and
the per-process copy kept current by block stamps; the blocks hold the same bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from graymatter_tui.embedding.vector_cache import VectorCache
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.ids import seed_ids
from tests.conformance.conftest import START, AnyStore
from tests.support.clock import ManualClock

DIM = 24
OPS, RESEARCH = "ops", "research"


@pytest.fixture(autouse=True)
def unseeded_afterwards() -> Iterator[None]:
    yield
    seed_ids(None)


def vector_of(text: str, piece: int = 0, dimension: int = DIM) -> np.ndarray:
    """A fixed unit vector for a text (and a piece of it): what a model would give."""
    seed = int.from_bytes(hashlib.blake2b(f"{piece}:{text}".encode()).digest()[:8], "big")
    row = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return (row / np.linalg.norm(row)).astype(np.float32)


def pieces_of(text: str) -> int:
    """How many rows a fact gets (a row per sentence, ADR 0038): one to three."""
    return 1 + len(text) % 3


def embed_all(store: AnyStore, model: str = "concepts", dimension: int = DIM) -> int:
    """Store a vector for every queued fact, as the worker would; how many were stored."""
    stored = 0
    while waiting := store.embed_waiting(40):
        rows: list[tuple[str, str, str]] = []
        vectors: list[np.ndarray] = []
        for agent, fact_id, text in waiting:
            for piece in range(pieces_of(text) if text else 1):
                rows.append((agent, fact_id, text))
                vectors.append(vector_of(text, piece, dimension))
        done, _skipped = store.store_vectors(model, rows, np.stack(vectors))
        stored += done
    return stored


def queries(dimension: int = DIM) -> list[np.ndarray]:
    """Probe vectors: some facts' own rows (their fact is then the first neighbour) and
    fresh ones."""
    texts = ["ops note 3", "ops note 17", "research finding 150", "research finding 299"]
    probes = [vector_of(text, 0, dimension) for text in texts]
    probes += [vector_of(f"a fresh question {i}", 0, dimension) for i in range(4)]
    return probes


def answers(store: AnyStore, model: str = "concepts", dimension: int = DIM) -> list[Any]:
    """Every probe's nearest, for both agents, checking on the way that each answer is a
    live fact of that agent."""
    found = []
    for agent in (OPS, RESEARCH):
        for probe in queries(dimension):
            hits = store.nearest(agent, model, probe, 12)
            for fact_id, _score in hits or []:
                fact = store.require(fact_id)
                assert fact.is_live and fact.agent_id == agent, fact
            found.append(hits)
    return found


def script(store: AnyStore, clk: ManualClock) -> dict[str, Any]:
    """Embedding through curation on one store; what every read gave."""
    seen: dict[str, Any] = {}
    clk.now = START
    seed_ids(4321)
    assert store.nearest(OPS, "concepts", vector_of("x"), 5) is None  # never embedded
    assert store.start_embedding("concepts") == 0
    ops = [store.put(OPS, f"ops note {i}") for i in range(40)]
    clk.advance(minutes=1)
    # More than two blocks of one agent, so a search spans blocks and a fact's rows may
    # straddle two.
    research = store.put_many(NewFact(RESEARCH, f"research finding {i}") for i in range(300))
    seen["state queued"] = store.embed_state()
    seen["stored"] = embed_all(store)
    seen["state embedded"] = store.embed_state()
    seen["first"] = answers(store)

    clk.advance(minutes=5)
    store.retire(ops[3].id)  # the first neighbour of a probe: it must go
    revised, _ = store.revise(ops[17].id, "ops note 17, revised")
    store.delete([research[150].id])  # pruned
    store.pin(ops[5].id)  # same text: keeps its vector, never queued
    store.touch([ops[6].id, ops[6].id])
    seen["after curation"] = answers(store)
    seen["backlog"] = store.embed_backlog()

    # A vector that arrives after its fact was revised is never stored: the tombstone
    # cannot come back through it.
    waiting = store.embed_waiting(10)
    assert [fact_id for _, fact_id, _ in waiting] == [revised.id]
    again, _ = store.revise(revised.id, "ops note 17, revised twice")
    rows = [(a, i, t) for a, i, t in waiting]
    seen["stale"] = store.store_vectors("concepts", rows, np.stack([vector_of(rows[0][2])]))
    probe = vector_of(revised.text)
    hits = store.nearest(OPS, "concepts", probe, 50) or []
    assert revised.id not in [fact_id for fact_id, _ in hits]
    seen["stale answers"] = hits
    seen["stored later"] = embed_all(store)
    seen["after re-embedding"] = answers(store)
    assert again.id in [i for i, _ in store.nearest(OPS, "concepts", vector_of(again.text), 1)]

    # A switch of model: every vector of the old one goes, every live fact waits.
    clk.advance(minutes=5)
    seen["switch queued"] = store.start_embedding("other", 16)
    assert store.nearest(OPS, "concepts", queries()[0], 5) is None
    seen["state switched"] = store.embed_state()
    seen["stored other"] = embed_all(store, "other", 16)
    seen["other"] = answers(store, "other", 16)
    seen["state at the end"] = store.embed_state()
    return seen


def _same(lmdb: Any, pg: Any, where: str) -> None:
    """Equal, with vector scores (float32 sums in another order) within tolerance."""
    if isinstance(lmdb, list) and lmdb and isinstance(lmdb[0], tuple) and len(lmdb[0]) == 2:
        assert [i for i, _ in lmdb] == [i for i, _ in pg], where
        assert [s for _, s in lmdb] == pytest.approx([s for _, s in pg], abs=1e-5), where
    elif isinstance(lmdb, list):
        assert isinstance(pg, list) and len(lmdb) == len(pg), where
        for n, (a, b) in enumerate(zip(lmdb, pg, strict=True)):
            _same(a, b, f"{where}[{n}]")
    else:
        assert lmdb == pg, where


def test_the_same_script_gives_the_same_neighbours_on_both_backends(
    both_stores: tuple[AnyStore, AnyStore], clk: ManualClock
) -> None:
    lmdb_store, pg_store = both_stores
    on_lmdb = script(lmdb_store, clk)
    on_pg = script(pg_store, clk)
    assert on_lmdb.keys() == on_pg.keys()
    for key in on_lmdb:
        _same(on_lmdb[key], on_pg[key], key)
    # What the script itself must have shown, on either backend.
    assert on_lmdb["stored"] == 340 and on_lmdb["state embedded"].vectors == 340
    assert on_lmdb["stale"] == (0, 1)
    first = on_lmdb["first"]
    assert all(hits for hits in first)
    assert first[0][0][1] == pytest.approx(1.0, abs=1e-5)  # a fact's own row
    assert on_lmdb["state switched"].backlog == on_lmdb["switch queued"] == 40 - 1 + 299
    assert on_lmdb["state at the end"].model == "other"
    # The stored rows themselves are the same bytes on both.
    assert lmdb_store.snapshot().vectors == pg_store.snapshot().vectors


def _blocks(store: AnyStore, agent: str, model: str, since: int) -> set[int]:
    found = store.vector_blocks_since(agent, model, since)
    assert found is not None
    return set(found.changed)


def test_the_per_process_copy_follows_block_stamps_on_either_backend(
    any_store: AnyStore, clk: ManualClock
) -> None:
    store = any_store
    seed_ids(99)
    store.start_embedding("concepts")
    facts = store.put_many(NewFact(RESEARCH, f"research finding {i}") for i in range(300))
    embed_all(store)
    generation = store.generation()
    every = store.vector_blocks_since(RESEARCH, "concepts", -1)
    assert every is not None and len(every.blocks) >= 4 and set(every.changed) == set(every.blocks)
    assert _blocks(store, RESEARCH, "concepts", generation) == set()  # nothing since

    cache = VectorCache(store)
    probe = vector_of("research finding 7")
    assert cache.nearest(RESEARCH, "concepts", probe, 8) == store.nearest(
        RESEARCH, "concepts", probe, 8
    )
    assert cache.wait(RESEARCH, timeout=30)
    held = cache._agents[RESEARCH]

    # A retirement zeroes its row's id in one block: only that block is stamped anew.
    gone = facts[7]
    before = store.generation()
    store.retire(gone.id)
    changed = _blocks(store, RESEARCH, "concepts", before)
    assert len(changed) == 1
    got = cache.nearest(RESEARCH, "concepts", probe, 8)
    assert got is not None and gone.id not in [i for i, _ in got]
    _same(got, store.nearest(RESEARCH, "concepts", probe, 8), "after a retirement")
    assert cache._agents[RESEARCH] is held and held.generation == store.generation()

    # New vectors fill the freed rows and the tail: the copy takes only those blocks.
    before = store.generation()
    store.put_many(NewFact(RESEARCH, f"a later finding {i}") for i in range(3))
    embed_all(store)
    changed = _blocks(store, RESEARCH, "concepts", before)
    assert 1 <= len(changed) <= 2 and changed < set(every.blocks) | {max(every.blocks) + 1}
    late = vector_of("a later finding 1")
    got = cache.nearest(RESEARCH, "concepts", late, 3)
    assert got is not None and store.require(got[0][0]).text == "a later finding 1"
    _same(got, store.nearest(RESEARCH, "concepts", late, 3), "after new vectors")
    assert cache._agents[RESEARCH] is held

    # A switch of model drops the copy: the old model's vectors are gone from the store.
    store.start_embedding("other", 16)
    assert store.vector_blocks_since(RESEARCH, "concepts", -1) is None
    assert cache.nearest(RESEARCH, "concepts", probe, 8) is None
    assert not cache.ready(RESEARCH)
