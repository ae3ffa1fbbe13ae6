"""The embedder against the scripted server over real HTTP (loopback) and a real store:
hostile answers store nothing, a fact revised while its embedding is in flight never gets
the old text's vector, and a switch of model or dimension re-embeds without mixing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.embedding.base import EmbedError
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.embedding.openai import OpenAIEmbedder
from graymatter_tui.embedding.worker import Worker
from tests.support.concepts import concept_dimension, concept_vector
from tests.support.embedding_fake import EmbeddingOverSocket, Fault

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
AGENT = "agent-a"
SMALL = concept_dimension() + 8  # another model's dimension, room for every concept
TEXTS = ["Payments go through Polar", "We never deploy on fridays", "The outage hit billing"]


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


def _ollama(url: str, model: str = "nomic-embed-text", timeout: float = 5.0) -> OllamaEmbedder:
    return OllamaEmbedder(url, model, timeout)


def _query(text: str, dimension: int = 768) -> np.ndarray:
    return np.array(concept_vector(text, dimension), dtype=np.float32)


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_a_drain_embeds_every_waiting_fact(store: LmdbStore, server: EmbeddingOverSocket) -> None:
    facts = [store.put(AGENT, text) for text in TEXTS]
    result = Worker(store, _ollama(server.url), batch=2).drain()
    assert (result.stored, result.requeued, result.backlog) == (3, 3, 0)
    assert len(server.embed_requests()) == 2  # batches of two
    assert store.embed_model() == ("nomic-embed-text", 768)
    found = store.nearest(AGENT, "nomic-embed-text", _query("which billing vendor"), 1)
    assert found is not None and found[0][0] == facts[0].id


@pytest.mark.parametrize(
    "fault",
    [
        Fault.status(500),
        Fault.hang(10),
        Fault("wrong_dim"),
        Fault("nan"),
        Fault("inf"),
        Fault("empty"),
        Fault("fewer"),
        Fault("drop"),
        Fault("not_json"),
    ],
    ids=lambda f: f.kind if f.kind != "status" else "500",
)
@pytest.mark.parametrize("wire", ["ollama", "openai"])
def test_a_hostile_answer_stores_nothing(
    store: LmdbStore, server: EmbeddingOverSocket, fault: Fault, wire: str
) -> None:
    store.put(AGENT, "first fact about payments")
    embedder = (
        _ollama(server.url, timeout=30)
        if wire == "ollama"
        else OpenAIEmbedder(server.url, "nomic-embed-text", 30)
    )
    worker = Worker(store, embedder)
    worker.drain()  # the store now holds 768-dim vectors of this model
    if fault.kind == "hang":
        embedder.timeout = 1.0
    for text in TEXTS:
        store.put(AGENT, text)
    before = store.embed_state()
    server.script(fault, Fault())  # the second answer is the probe of a dimension change
    with pytest.raises(EmbedError) as caught:
        worker.step()
    assert "\n" not in str(caught.value) and embedder.where in str(caught.value)
    after = store.embed_state()
    assert (after.vectors, after.backlog, after.dimension) == (1, 3, 768)
    assert after == before


def test_a_refused_connection_stores_nothing(store: LmdbStore) -> None:
    store.put(AGENT, "a fact")
    with pytest.raises(EmbedError, match=r"cannot connect to Ollama at http://127\.0\.0\.1"):
        Worker(store, _ollama(_dead_url())).drain()
    state = store.embed_state()
    assert (state.model, state.vectors, state.backlog) == ("nomic-embed-text", 0, 1)


def test_a_fact_revised_in_flight_never_gets_the_old_texts_vector(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    fact = store.put(AGENT, "Payments go through Polar")
    worker = Worker(store, _ollama(server.url))
    worker.ensure_model()
    server.hold = threading.Event()
    outcome: list[tuple[int, int, int]] = []
    thread = threading.Thread(target=lambda: outcome.append(worker.step()))
    thread.start()
    deadline = time.monotonic() + 10
    while not server.embed_requests() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.embed_requests(), "the embedding request never arrived"
    revision, _ = store.revise(fact.id, "We deploy on fridays")  # while the server holds
    server.hold.set()
    thread.join(10)
    assert outcome == [(0, 1, 0)]  # nothing stored for the old text
    assert store.embed_state().vectors == 0
    assert [r[1] for r in store.embed_waiting(5)] == [revision.id]
    server.hold = None
    assert worker.drain().stored == 1
    money = store.nearest(AGENT, "nomic-embed-text", _query("billing"), 5)
    assert money is not None and [i for i, _ in money] == [revision.id]
    assert money[0][1] == pytest.approx(0.0, abs=1e-6)  # deploy/schedule, not money


def test_a_model_switch_re_embeds_and_never_mixes(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    server.models["concepts-small"] = SMALL
    for text in TEXTS:
        store.put(AGENT, text)
    Worker(store, _ollama(server.url)).drain()
    assert store.embed_model() == ("nomic-embed-text", 768)
    switched = Worker(store, _ollama(server.url, "concepts-small"))
    assert switched.ensure_model() == 3
    # The old model's vectors are gone at once: nothing to compare across models.
    assert store.nearest(AGENT, "nomic-embed-text", _query("billing"), 5) is None
    assert store.nearest(AGENT, "concepts-small", _query("billing", SMALL), 5) is None
    result = switched.drain()
    assert (result.stored, result.backlog) == (3, 0)
    assert store.embed_model() == ("concepts-small", SMALL)
    state = store.embed_state()
    assert (state.vectors, state.backlog) == (3, 0)
    found = store.nearest(AGENT, "concepts-small", _query("billing", SMALL), 1)
    assert found is not None and found[0][1] > 0.5
    embedded = [t for r in server.embed_requests() for t in r.json["input"]]
    assert sorted(embedded[3:]) == sorted(TEXTS)  # each fact embedded again, once


def test_a_new_dimension_under_the_same_name_is_a_switch(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    for text in TEXTS:
        store.put(AGENT, text)
    worker = Worker(store, _ollama(server.url))
    worker.drain()
    server.models["nomic-embed-text"] = 256  # the model was replaced under its name
    store.put(AGENT, "a late fact about secrets")
    result = worker.drain()
    assert result.requeued == 4 and result.stored == 4
    assert store.embed_model() == ("nomic-embed-text", 256)
    assert store.embed_state().vectors == 4
