"""Recall's vector signal over the store (`embedding.query.StoreQueryVectors`): a
paraphrase finds its fact through the scripted server's concept table, and every failure
is None (recall ranks without vectors), never an exception."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.embedding import query as vector_query
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.embedding.query import StoreQueryVectors
from graymatter_tui.embedding.worker import Worker
from graymatter_tui.recall.vector_signal import QueryVectors
from tests.support.embedding_fake import EmbeddingOverSocket, Fault

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
AGENT = "agent-a"


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


@pytest.fixture
def embedded(store: LmdbStore, server: EmbeddingOverSocket) -> dict[str, str]:
    texts = {
        "polar": "Payments go through Polar",
        "friday": "We never deploy on fridays",
        "lunch": "Lunch is at noon",
    }
    ids = {key: store.put(AGENT, text).id for key, text in texts.items()}
    Worker(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0)).drain()
    return ids


def _signal(store: LmdbStore, url: str, model: str = "nomic-embed-text") -> QueryVectors:
    return StoreQueryVectors(store, OllamaEmbedder(url, model, 10.0), timeout=5.0)


def test_a_paraphrase_finds_its_fact(
    store: LmdbStore, server: EmbeddingOverSocket, embedded: dict[str, str]
) -> None:
    found = _signal(store, server.url).nearest(AGENT, "which billing vendor do we use?", 2)
    assert found is not None
    # money + vendor against money: the concept table says 1/sqrt(2), nothing more.
    assert found[0] == (embedded["polar"], pytest.approx(0.7071, abs=1e-4))
    assert embedded["lunch"] not in [i for i, score in found if score > 0]


@pytest.mark.parametrize("fault", [Fault.status(500), Fault("nan"), Fault.hang(10)])
def test_a_failing_server_gives_no_signal(
    store: LmdbStore, server: EmbeddingOverSocket, embedded: dict[str, str], fault: Fault
) -> None:
    server.script(fault)
    signal = StoreQueryVectors(
        store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0), timeout=0.5
    )
    assert signal.nearest(AGENT, "billing", 3) is None
    assert signal.last_error


def test_no_signal_without_vectors_of_the_configured_model(
    store: LmdbStore, server: EmbeddingOverSocket, embedded: dict[str, str]
) -> None:
    before = len(server.embed_requests())
    assert _signal(store, server.url, "another-model").nearest(AGENT, "billing", 3) is None
    assert len(server.embed_requests()) == before  # the server was not even asked
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    assert _signal(store, dead).nearest(AGENT, "billing", 3) is None


def test_from_env_is_none_when_embeddings_are_off(store: LmdbStore) -> None:
    assert vector_query.from_env(store) is None


def test_from_env_builds_the_configured_signal(
    store: LmdbStore,
    server: EmbeddingOverSocket,
    embedded: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GRAYMATTER_EMBED", "ollama")
    monkeypatch.setenv("GRAYMATTER_EMBED_URL", server.url)
    signal = vector_query.from_env(store)
    assert signal is not None
    found = signal.nearest(AGENT, "when is the next release", 1)
    assert found is not None and found[0][0] == embedded["friday"]
