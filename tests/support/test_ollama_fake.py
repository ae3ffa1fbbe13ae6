"""The scripted Ollama itself: Ollama's routes and request checks through httpx's
MockTransport, and the connection-level replies over a real socket."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest

from tests.support.ollama_fake import FakeOllama, RecordedRequest, Reply
from tests.support.over_socket import OllamaOverSocket

ULID_A = "01JC0000000000000000000001"
ULID_B = "01JC0000000000000000000002"


@pytest.fixture
def fake() -> FakeOllama:
    return FakeOllama()


@pytest.fixture
def client(fake: FakeOllama) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, transport=fake.transport) as http:
        yield http
    assert fake.errors == []


def generate(client: httpx.Client, prompt: str = "hello", **fields: object) -> httpx.Response:
    body = {"model": "llama3.2", "prompt": prompt, "stream": False, **fields}
    return client.post("/api/generate", json=body)


# ------------------------------------------------------------------ fixed routes


def test_root_version_and_tags() -> None:
    fake = FakeOllama(models=["llama3.2", "qwen2.5:7b"])
    with httpx.Client(base_url=fake.url, transport=fake.transport) as client:
        root, head = client.get("/"), client.head("/")
        version, tags = client.get("/api/version"), client.get("/api/tags")
    assert (root.status_code, root.text) == (200, "Ollama is running")
    assert root.headers["content-type"] == "text/plain; charset=utf-8"
    assert (head.status_code, head.content) == (200, b"")
    assert version.json() == {"version": "0.12.0"}
    assert version.headers["content-type"] == "application/json; charset=utf-8"
    models = tags.json()["models"]
    assert [m["name"] for m in models] == ["llama3.2:latest", "qwen2.5:7b"]
    assert re.fullmatch(r"[0-9a-f]{64}", models[0]["digest"])


def test_unknown_path_is_404_and_wrong_method_is_405(
    fake: FakeOllama, client: httpx.Client
) -> None:
    missing = client.get("/api/nope")
    assert (missing.status_code, missing.text) == (404, "404 page not found")
    wrong = client.get("/api/generate")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"
    assert [r.path for r in fake.requests] == ["/api/nope", "/api/generate"]
    assert fake.generate_requests == []


# ------------------------------------------------------------------ /api/generate


def test_scripted_proposal_round_trip(fake: FakeOllama, client: httpx.Client) -> None:
    fake.script(Reply.proposal("merged <summary>", [ULID_A, ULID_B], ["A says x, B says y"]))
    response = generate(client, "p" * 40, format="json", options={"num_ctx": 4096})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert b"\\u003csummary\\u003e" in response.content  # Go escapes < and > in JSON
    envelope = response.json()
    assert json.loads(envelope["response"]) == {
        "summary": "merged <summary>",
        "consumes": [ULID_A, ULID_B],
        "contradictions": ["A says x, B says y"],
    }
    assert (envelope["done"], envelope["done_reason"], envelope["model"]) == (
        True,
        "stop",
        "llama3.2",
    )
    assert envelope["prompt_eval_count"] == 10
    [recorded] = fake.generate_requests
    assert recorded.headers["content-type"] == "application/json"
    assert recorded.json["options"] == {"num_ctx": 4096}


def test_length_done_reason_error_and_raw_replies(fake: FakeOllama, client: httpx.Client) -> None:
    fake.script(
        Reply.text('{"summary": "cut', done_reason="length"),
        Reply.error(503, "server busy, please try again"),
        Reply.model_not_found("phi4"),
        Reply.raw_body(b"<html>bad gateway</html>", status=502, content_type="text/html"),
    )
    assert generate(client).json()["done_reason"] == "length"
    busy = generate(client)
    assert (busy.status_code, busy.json()) == (503, {"error": "server busy, please try again"})
    gone = generate(client)
    assert (gone.status_code, gone.json()) == (404, {"error": "model 'phi4' not found"})
    proxy = generate(client)
    assert (proxy.status_code, proxy.headers["content-type"]) == (502, "text/html")
    assert proxy.content == b"<html>bad gateway</html>"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"", 400, "missing request body"),
        (b"{not json", 400, "invalid character 'n' looking for beginning of object key"),
        (b"[1]", 400, "json: cannot unmarshal array into Go value of type api.GenerateRequest"),
        (b'{"model": "llama3.2", "stream": "no"}', 400, "GenerateRequest.stream"),
        (b'{"model": "llama3.2", "format": "yaml"}', 500, 'invalid format: "yaml"'),
        (b'{"model": "llama3.2", "options": {"num_ctx": "4k"}}', 500, '"num_ctx" must be'),
        (b'{"model": "llama3.2", "options": {"temperature": true}}', 500, '"temperature"'),
        (b'{"prompt": "x"}', 404, "model '' not found"),
        (b'{"model": "mistral"}', 404, "model 'mistral' not found"),
    ],
)
def test_requests_ollama_refuses_do_not_consume_the_script(
    fake: FakeOllama, client: httpx.Client, body: bytes, status: int, error: str
) -> None:
    fake.script(Reply.text("kept"))
    refused = client.post("/api/generate", content=body)
    assert refused.status_code == status
    assert error in refused.json()["error"]
    assert fake.pending == 1
    assert len(fake.generate_requests) == 1  # refused requests are still recorded
    tagged = generate(client, model="llama3.2:latest")  # the same model, tag spelled out
    assert tagged.json()["response"] == "kept"


def test_streaming_form_when_stream_is_not_false(fake: FakeOllama, client: httpx.Client) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    fake.script(Reply.text(text))
    response = client.post("/api/generate", json={"model": "llama3.2", "prompt": "hi"})
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert all(line["done"] is False for line in lines[:-1])
    assert (lines[-1]["done"], lines[-1]["response"], lines[-1]["done_reason"]) == (
        True,
        "",
        "stop",
    )
    assert "".join(line["response"] for line in lines) == text


def test_queue_then_responder_then_default(fake: FakeOllama, client: httpx.Client) -> None:
    assert generate(client).json() == {"error": "no scripted reply"}
    fake.set_default(lambda request: Reply.text(request.prompt.upper()))
    assert generate(client, "shout").json()["response"] == "SHOUT"
    seen: list[RecordedRequest] = []
    fake.set_responder(lambda request: seen.append(request) or Reply.text("responder"))
    fake.script(Reply.text("queued"))
    assert generate(client).json()["response"] == "queued"
    assert generate(client, "x").json()["response"] == "responder"
    assert [r.prompt for r in seen] == ["x"]


def test_a_failing_responder_is_a_500_and_recorded(fake: FakeOllama) -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise RuntimeError("boom")

    fake.set_responder(broken)
    with httpx.Client(base_url=fake.url, transport=fake.transport) as client:
        response = generate(client)
    assert response.status_code == 500 and "boom" in response.json()["error"]
    assert [str(error) for error in fake.errors] == ["boom"]


def test_a_socket_only_reply_without_a_socket_is_reported(fake: FakeOllama) -> None:
    fake.script(Reply.hang(30))
    with httpx.Client(base_url=fake.url, transport=fake.transport) as client:
        assert generate(client).status_code == 500
    assert "needs a socket" in str(fake.errors[0])


# ------------------------------------------------------------------ over a socket


@pytest.fixture
def server() -> Iterator[OllamaOverSocket]:
    with OllamaOverSocket() as running:
        yield running
    assert running.errors == []
    assert running.open_connections == 0


@pytest.fixture
def socket_client(server: OllamaOverSocket) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=2.0) as http:
        yield http


def test_the_same_fake_answers_on_loopback(
    server: OllamaOverSocket, socket_client: httpx.Client
) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.url)
    server.script(Reply.text("over tcp"))
    assert socket_client.get("/api/version").json() == {"version": "0.12.0"}
    assert generate(socket_client).json()["response"] == "over tcp"
    assert socket_client.post("/api/generate", content=b"").status_code == 400
    assert socket_client.head("/").content == b""


def test_hang_times_out_and_stop_releases_it() -> None:
    with OllamaOverSocket() as server:
        server.script(Reply.hang(30.0))
        with (
            httpx.Client(base_url=server.url, timeout=httpx.Timeout(2.0, read=0.3)) as client,
            pytest.raises(httpx.ReadTimeout),
        ):
            generate(client)
        assert len(server.generate_requests) == 1
    assert server.open_connections == 0  # the hanging handler was released, not abandoned


@pytest.mark.parametrize(
    ("reply", "error", "match"),
    [
        (Reply.drop(), httpx.RemoteProtocolError, "without sending a response"),
        (Reply.drop(reset=True), httpx.ReadError, "reset"),
        (Reply.drop_mid_body(), httpx.RemoteProtocolError, "complete message body"),
    ],
    ids=["drop", "reset", "drop-mid-body"],
)
def test_dropped_connections(
    server: OllamaOverSocket,
    socket_client: httpx.Client,
    reply: Reply,
    error: type[Exception],
    match: str,
) -> None:
    server.script(reply, Reply.text("fine"))
    with pytest.raises(error, match=match):
        generate(socket_client)
    assert generate(socket_client).json()["response"] == "fine"  # the client recovers


def test_trickle_and_huge_deliver_whole_envelopes(
    server: OllamaOverSocket, socket_client: httpx.Client
) -> None:
    text = json.dumps({"summary": "slow but complete", "consumes": [ULID_A]})
    server.script(Reply.trickle(text, delay=0.001, chunk=16), Reply.huge(5_000_000))
    assert generate(socket_client).json()["response"] == text
    assert len(generate(socket_client).json()["response"]) == 5_000_000


def test_stop_closes_idle_keep_alive_connections() -> None:
    server = OllamaOverSocket().__enter__()
    with httpx.Client(base_url=server.url, timeout=2.0) as client:
        assert client.get("/").status_code == 200
        server.stop()
        assert server.open_connections == 0
        with pytest.raises(httpx.TransportError):
            client.get("/")
