"""`migrate` carries embedding vectors (ADR 0058): LMDB -> PostgreSQL -> LMDB with the real
CLI and the scripted embedding server keeps every vector row byte for byte and the queue
of facts still waiting, embeds nothing again (the server is never asked), and recall on
PostgreSQL ranks with the copied vectors. A target whose embedder uses another model, or
that holds another model's vectors, queues the copied facts for its own; into a target
holding vectors of the same agent, each fact's vectors are merged, not overwritten; a copy
whose vectors differ is not verified."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import CompletedProcess

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.exchange import migration
from graymatter_tui.exchange.migration import MigrationUnverified, migrate
from graymatter_tui.storage import NewFact, StoreSnapshot, VectorSnapshot
from tests.support.backends import AnyStore
from tests.support.embedding_fake import EmbeddingOverSocket

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

Run = Callable[..., CompletedProcess[str]]
AGENT = "ops-agent"
QUESTION = "which billing vendor do we use"


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


def _env(server: EmbeddingOverSocket, **extra: str) -> dict[str, str]:
    return {"GRAYMATTER_EMBED": "ollama", "GRAYMATTER_EMBED_URL": server.url, **extra}


def _ok(done: CompletedProcess[str]) -> CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def _vectors(snap: StoreSnapshot) -> VectorSnapshot:
    return snap.vectors


def test_lmdb_to_postgres_to_lmdb_keeps_every_vector_and_embeds_nothing_again(
    run_cli: Run, cli_dir: Path, tmp_path: Path, pg_url: str, server: EmbeddingOverSocket
) -> None:
    env = _env(server)
    _ok(run_cli("demo"))
    _ok(run_cli("remember", "finance", "Payments go through Polar"))
    embedded = json.loads(_ok(run_cli("embed", "--json", env=env)).stdout)
    assert embedded["embedded"] > 100 and embedded["backlog"] == 0
    _ok(run_cli("remember", "finance", "Standup moved to the afternoon"))  # queued only
    asked = len(server.texts)

    there = json.loads(
        _ok(run_cli("migrate", "--from", str(cli_dir), "--to", pg_url, "--json", env=env)).stdout
    )
    assert there["vectors"] == {
        "mode": "copy",
        "model": "nomic-embed-text",
        "dimension": 768,
        "copied": embedded["embedded"],
        "queued": 1,
    }
    assert "embedding vectors" in there["verified"]
    assert len(server.texts) == asked  # nothing was embedded to make the copy

    # Recall on PostgreSQL ranks with the copied vectors: only the question is embedded.
    found = json.loads(
        _ok(
            run_cli(
                "recall", "finance", QUESTION, "--json", "--explain", "--store", pg_url, env=env
            )
        ).stdout
    )
    assert found[0]["text"] == "Payments go through Polar"
    assert found[0]["vector_rank"] == 1 and found[0]["keyword_rank"] is None
    assert server.texts[asked:] == [QUESTION]
    keywords_only = json.loads(
        _ok(run_cli("recall", "finance", QUESTION, "--json", "--store", pg_url)).stdout
    )
    assert "Payments go through Polar" not in [hit["text"] for hit in keywords_only]
    asked += 1

    back = tmp_path / "back"
    home = _ok(run_cli("migrate", "--from", pg_url, "--to", str(back), env=env)).stdout
    assert (
        f"vectors      {embedded['embedded']} facts with vectors of nomic-embed-text "
        "(768 dimensions) copied, none embedded again; 1 fact waiting for one" in home
    )
    assert len(server.texts) == asked

    with (
        LmdbStore.open(cli_dir, read_only=True) as first,
        PgStore.open(pg_url, read_only=True) as middle,
        LmdbStore.open(back, read_only=True) as last,
    ):
        original = _vectors(first.snapshot())
        assert original.rows and original.queue
        assert _vectors(middle.snapshot()) == original  # byte for byte, queue included
        assert _vectors(last.snapshot()) == original
        assert last.embed_state() == first.embed_state()
    # The one fact still waiting is the only one the target's embedder embeds.
    drained = json.loads(_ok(run_cli("embed", "--json", "--dir", str(back), env=env)).stdout)
    assert (drained["embedded"], drained["requeued"]) == (1, 0)
    assert server.texts[asked:] == ["Standup moved to the afternoon"]


def test_a_target_whose_embedder_uses_another_model_queues_every_fact_for_it(
    run_cli: Run, cli_dir: Path, pg_url: str, server: EmbeddingOverSocket
) -> None:
    env = _env(server)
    for text in ("Payments go through Polar", "We deploy on fridays", "Rotate the secrets"):
        _ok(run_cli("remember", AGENT, text))
    _ok(run_cli("embed", env=env))
    other = _env(server, GRAYMATTER_EMBED_MODEL="text-embedding-3-small")
    done = _ok(run_cli("migrate", "--from", str(cli_dir), "--to", pg_url, "--json", env=other))
    assert json.loads(done.stdout)["vectors"] == {
        "mode": "switch",
        "model": "text-embedding-3-small",
        "dimension": None,
        "copied": 0,
        "queued": 3,
    }
    with PgStore.open(pg_url, read_only=True) as target:
        state = target.embed_state()
    assert (state.model, state.vectors, state.backlog) == ("text-embedding-3-small", 0, 3)
    asked = len(server.texts)
    drained = json.loads(_ok(run_cli("embed", "--json", "--store", pg_url, env=other)).stdout)
    assert (drained["embedded"], drained["requeued"]) == (3, 0)
    assert len(server.texts) == asked + 3


def _embedded_source(path: Path, agent: str, texts: list[str], seed: int) -> LmdbStore:
    store = LmdbStore.open(path)
    store.start_embedding("m")
    store.put_many(NewFact(agent, text) for text in texts)
    _embed(store, seed)
    return store


def _embed(store: AnyStore, seed: int, model: str = "m", dimension: int = 8) -> None:
    rng = np.random.default_rng(seed)
    while rows := store.embed_waiting(100):
        matrix = rng.standard_normal((len(rows), dimension)).astype(np.float32)
        store.store_vectors(model, rows, matrix / np.linalg.norm(matrix, axis=1, keepdims=True))


def test_a_target_holding_another_model_keeps_it_and_queues_the_copied_facts(
    any_store: AnyStore, tmp_path: Path
) -> None:
    any_store.start_embedding("other")  # an empty target whose embedder already ran
    with _embedded_source(tmp_path / "source", "a", [f"fact {i}" for i in range(5)], 1) as source:
        report = migrate(source, any_store)
    assert report.vectors is not None and report.vectors.mode == "queue"
    assert (report.vectors.model, report.vectors.copied, report.vectors.queued) == ("other", 0, 5)
    assert any_store.embed_state().model == "other" and any_store.embed_backlog() == 5
    assert any_store.vector_blocks_since("a", "m", -1) is None


def test_into_a_target_with_vectors_of_the_same_agent_each_fact_is_merged(
    any_store: AnyStore, tmp_path: Path
) -> None:
    any_store.start_embedding("m")
    any_store.put_many(NewFact("a", f"the target's fact {i}") for i in range(200))
    _embed(any_store, 2)
    theirs = {
        f.id: any_store.nearest("a", "m", _row_of(any_store, f.id), 1)
        for f in any_store.list_facts("a")[:20]
    }
    texts = [f"the source's fact {i}" for i in range(150)]
    with _embedded_source(tmp_path / "source", "a", texts, 3) as source:
        probes = {f.id: _row_of(source, f.id) for f in source.list_facts("a")[:20]}
        report = migrate(source, any_store, allow_non_empty=True)
    assert report.vectors is not None
    assert (report.vectors.mode, report.vectors.copied) == ("copy", 150)
    assert any_store.embed_state().vectors == 350
    for fact_id, probe in probes.items():  # each copied vector answers for its own fact
        found = any_store.nearest("a", "m", probe, 1)
        assert found is not None and found[0][0] == fact_id
        assert found[0][1] == pytest.approx(1.0, abs=1e-5)
    for fact_id, before in theirs.items():  # and the target's own are untouched
        assert before is not None and before[0][0] == fact_id
        after = any_store.nearest("a", "m", _row_of(any_store, fact_id), 1)
        assert after is not None and after[0][0] == fact_id
        assert after[0][1] == pytest.approx(before[0][1], abs=1e-5)


def _row_of(store: AnyStore, fact_id: str) -> np.ndarray:
    """The stored vector of a fact (its first row), read from the blocks."""
    blocks = store.vector_blocks_since(store.require(fact_id).agent_id, "m", -1)
    assert blocks is not None
    for matrix, ids in blocks.changed.values():
        if fact_id in ids:
            return np.array(matrix[ids.index(fact_id)])
    raise AssertionError(f"{fact_id} has no vector")


def test_a_copy_whose_vectors_differ_from_the_source_is_not_verified(tmp_path: Path) -> None:
    with (
        _embedded_source(tmp_path / "source", "a", ["one fact", "another fact"], 4) as source,
        LmdbStore.open(tmp_path / "target") as target,
    ):
        report = migrate(source, target)
        assert report.vectors is not None and report.vectors.copied == 2
        snap, after = source.snapshot(), target.snapshot()
        rows = list(after.vectors.rows)
        key, value = next((k, v) for k, v in rows if k.split(b"\x00")[1] == b"b")
        rows[rows.index((key, value))] = (key, bytes([value[0] ^ 1]) + value[1:])
        changed = StoreSnapshot(
            **{
                **after.__dict__,
                "vectors": VectorSnapshot(**{**after.vectors.__dict__, "rows": rows}),
            }
        )
        empty = migration._nothing_like(snap)
        with pytest.raises(MigrationUnverified, match="vectors differ"):
            migration._verify_vectors(snap, empty, changed, report.vectors)
        migration._verify_vectors(snap, empty, after, report.vectors)  # the real copy passes
