"""Both embedding clients over real HTTP (loopback) against the scripted server: batch
input, vectors in input order and of unit length, and every hostile answer refused with
one line that names the server and what was wrong."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import numpy as np
import pytest

from graymatter_tui.embedding.base import Embedder, EmbedError
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.embedding.openai import OpenAIEmbedder
from tests.support.concepts import concept_vector
from tests.support.embedding_fake import EmbeddingOverSocket, Fault

TEXTS = ["Payments go through Polar", "we deploy on fridays", "nothing in the table"]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


def _client(kind: str, url: str, timeout: float = 5.0) -> Embedder:
    if kind == "ollama":
        return OllamaEmbedder(url, "nomic-embed-text", timeout)
    return OpenAIEmbedder(url, "text-embedding-3-small", timeout, "sk-secret-key")


@pytest.fixture(params=["ollama", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_batch_comes_back_in_order_as_unit_rows(server: EmbeddingOverSocket, kind: str) -> None:
    vectors = _client(kind, server.url).embed(TEXTS)
    assert vectors.shape == (3, 768) and vectors.dtype == np.float32
    expected = np.array([concept_vector(t) for t in TEXTS], dtype=np.float32)
    assert np.allclose(vectors, expected, atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    last = server.embed_requests()[-1]
    assert last.json["input"] == TEXTS  # one request for the whole batch


def test_openai_sends_the_key_only_in_a_header(server: EmbeddingOverSocket) -> None:
    _client("openai", server.url).embed(["a secret"])
    last = server.embed_requests()[-1]
    assert last.headers["authorization"] == "Bearer sk-secret-key"
    assert last.route == "/v1/embeddings"


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault.status(500), "answered HTTP 500: internal error (scripted)"),
        (Fault("wrong_dim"), "vectors of dimension 384"),
        (Fault("nan"), "NaN or infinite components (text 0)"),
        (Fault("inf"), "NaN or infinite components (text 0)"),
        (Fault("empty"), "an empty vector (text 0)"),
        (Fault("fewer"), "sent 2 vectors for 3 texts"),
        (Fault("not_json"), "a reply that is not JSON"),
        (Fault("drop"), "closed the connection before answering completely"),
    ],
    ids=["500", "wrong-dim", "nan", "inf", "empty", "fewer", "not-json", "drop"],
)
def test_a_hostile_answer_is_one_clear_error(
    server: EmbeddingOverSocket, kind: str, fault: Fault, said: str
) -> None:
    client = _client(kind, server.url)
    if fault.kind == "wrong_dim":
        client.dimension = 768  # type: ignore[attr-defined]  # the store's, already known
    server.script(fault)
    with pytest.raises(EmbedError) as caught:
        client.embed(TEXTS)
    message = str(caught.value)
    assert said in message
    assert client.where in message and "\n" not in message
    assert "sk-secret-key" not in message


def test_a_hang_is_cut_at_the_timeout(server: EmbeddingOverSocket, kind: str) -> None:
    server.script(Fault.hang(10))
    with pytest.raises(EmbedError, match=r"did not answer within 0\.5 s"):
        _client(kind, server.url, timeout=0.5).embed(TEXTS)


def test_a_refused_connection_names_the_server(kind: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(EmbedError, match=r"^cannot connect to .*127\.0\.0\.1"):
        _client(kind, url).embed(TEXTS)


def test_an_unknown_model_says_how_to_get_it(server: EmbeddingOverSocket) -> None:
    with pytest.raises(EmbedError, match=r"has no model 'mxbai' \(run `ollama pull mxbai`\)"):
        OllamaEmbedder(server.url, "mxbai", 5.0).embed(TEXTS)
    with pytest.raises(EmbedError, match=r"answered HTTP 404: model \"mxbai\" not found"):
        OpenAIEmbedder(server.url, "mxbai", 5.0).embed(TEXTS)


def test_the_openai_api_needs_a_key() -> None:
    with pytest.raises(EmbedError, match="OPENAI_API_KEY is not set"):
        OpenAIEmbedder("https://api.openai.com", "text-embedding-3-small", 5.0).embed(["x"])
