"""Tests of the scripted Ollama server itself, over real HTTP with httpx."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.ollama_server import RecordedRequest, Reply, ScriptedOllama

TIMEOUT = httpx.Timeout(2.0)
ULID_A = "01JC0000000000000000000001"
ULID_B = "01JC0000000000000000000002"


@pytest.fixture
def server() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as running:
        yield running
    assert running.errors == []  # no unexpected exception in a handler thread


@pytest.fixture
def client(server: ScriptedOllama) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        yield http


def generate(
    client: httpx.Client, prompt: str = "hello", *, model: str = "llama3.2", stream: bool = False
) -> httpx.Response:
    return client.post("/api/generate", json={"model": model, "prompt": prompt, "stream": stream})


# ----------------------------------------------------------------- fixed routes


def test_url_is_loopback_with_ephemeral_port(server: ScriptedOllama) -> None:
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)", server.url)
    assert match is not None
    assert int(match.group(1)) > 0


def test_root_says_ollama_is_running(client: httpx.Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == "Ollama is running"

    head = client.head("/")
    assert head.status_code == 200
    assert head.headers["content-length"] == str(len("Ollama is running"))
    assert head.content == b""


def test_version(client: httpx.Client) -> None:
    response = client.get("/api/version")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == {"version": "0.12.0"}


def test_tags_lists_each_configured_model_with_latest_tag() -> None:
    with (
        ScriptedOllama(models=["llama3.2", "qwen2.5:7b"]) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as client,
    ):
        response = client.get("/api/tags")
    assert response.status_code == 200
    models = response.json()["models"]
    assert [m["name"] for m in models] == ["llama3.2:latest", "qwen2.5:7b"]
    first = models[0]
    assert set(first) == {"name", "model", "modified_at", "size", "digest", "details"}
    assert first["model"] == "llama3.2:latest"
    assert re.fullmatch(r"[0-9a-f]{64}", first["digest"])
    assert first["details"] == {
        "parent_model": "",
        "format": "gguf",
        "family": "llama",
        "families": ["llama"],
        "parameter_size": "3.2B",
        "quantization_level": "Q4_K_M",
    }


def test_unknown_path_is_404_and_wrong_method_is_405(
    server: ScriptedOllama, client: httpx.Client
) -> None:
    missing = client.get("/api/nope")
    assert missing.status_code == 404
    assert missing.text == "404 page not found"
    assert missing.headers["content-type"] == "text/plain; charset=utf-8"

    wrong = client.get("/api/generate")
    assert wrong.status_code == 405
    assert [r.path for r in server.requests] == ["/api/nope", "/api/generate"]
    assert server.generate_requests == []  # a GET is not a generate request


# ----------------------------------------------------------------- scripted generate


def test_scripted_proposal_round_trip(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.proposal("merged summary", [ULID_A, ULID_B], ["A says x, B says y"]))
    sent = {"model": "llama3.2", "prompt": "p" * 40, "stream": False, "format": "json"}

    response = client.post("/api/generate", json=sent)

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert int(response.headers["content-length"]) == len(response.content)
    envelope = response.json()
    assert json.loads(envelope["response"]) == {
        "summary": "merged summary",
        "consumes": [ULID_A, ULID_B],
        "contradictions": ["A says x, B says y"],
    }
    assert envelope["done"] is True
    assert envelope["done_reason"] == "stop"
    assert envelope["model"] == "llama3.2"
    assert envelope["prompt_eval_count"] == 10
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z", envelope["created_at"])
    [recorded] = server.generate_requests
    assert recorded.json == sent
    assert recorded.method == "POST"
    assert recorded.headers["content-type"] == "application/json"
    assert json.loads(recorded.body) == sent


def test_text_reply_with_length_done_reason(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.text('```json\n{"summary": "cut', done_reason="length"))
    envelope = generate(client).json()
    assert envelope["response"] == '```json\n{"summary": "cut'
    assert envelope["done_reason"] == "length"


def test_replies_are_fifo_then_default(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.text("first"), Reply.text("second"))
    assert generate(client).json()["response"] == "first"
    assert generate(client).json()["response"] == "second"

    fallback = generate(client)
    assert fallback.status_code == 500
    assert fallback.json() == {"error": "no scripted reply"}

    server.set_default(Reply.text("default"))
    assert generate(client).json()["response"] == "default"
    assert generate(client).json()["response"] == "default"


def test_validation_errors_do_not_consume_the_script(
    server: ScriptedOllama, client: httpx.Client
) -> None:
    server.script(Reply.text("kept"))

    empty = client.post("/api/generate", content=b"")
    assert empty.status_code == 400
    assert empty.json() == {"error": "missing request body"}

    malformed = client.post("/api/generate", content=b"{not json")
    assert malformed.status_code == 400
    assert malformed.headers["content-type"] == "application/json; charset=utf-8"
    assert malformed.json()["error"].startswith("invalid character ")

    no_model = client.post("/api/generate", json={"prompt": "x", "stream": False})
    assert no_model.status_code == 404
    assert no_model.json() == {"error": "model '' not found"}

    unknown = generate(client, model="mistral")
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "model 'mistral' not found"}

    assert server.pending == 1
    assert len(server.generate_requests) == 4  # rejected requests are still recorded
    assert server.generate_requests[1].body == b"{not json"
    assert server.generate_requests[1].json is None

    tagged = generate(client, model="llama3.2:latest")  # same model, explicit tag
    assert tagged.status_code == 200
    assert tagged.json()["response"] == "kept"


def test_error_reply(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.error(503, "server busy, please try again"))
    response = generate(client)
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == {"error": "server busy, please try again"}


def test_model_not_found_reply(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.model_not_found("phi4"), Reply.model_not_found(""))
    named = generate(client)
    assert named.status_code == 404
    assert named.json() == {"error": "model 'phi4' not found"}
    echoed = generate(client, model="llama3.2:latest")
    assert echoed.status_code == 404
    assert echoed.json() == {"error": "model 'llama3.2:latest' not found"}


def test_raw_body_is_sent_verbatim(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.raw_body(b"<html>bad gateway</html>", status=502, content_type="text/html"))
    response = generate(client)
    assert response.status_code == 502
    assert response.headers["content-type"] == "text/html"
    assert response.content == b"<html>bad gateway</html>"


# ----------------------------------------------------------------- failure modes


def test_hang_times_out_and_stop_is_prompt() -> None:
    server = ScriptedOllama().start()
    try:
        server.script(Reply.hang(30.0))
        timeout = httpx.Timeout(2.0, read=0.3)
        with httpx.Client(base_url=server.url, timeout=timeout) as client:
            started = time.monotonic()
            with pytest.raises(httpx.ReadTimeout):
                generate(client)
            assert time.monotonic() - started < 10.0  # the hang is 30 s
        assert len(server.generate_requests) == 1  # the request was accepted and read
    finally:
        started = time.monotonic()
        server.stop()
        stopped_in = time.monotonic() - started
    assert stopped_in < 10.0  # not the 30 s the handler would hang
    assert server.open_connections == 0  # the hanging handler was released, not abandoned


def test_drop_closes_without_response(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.drop())
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        generate(client)
    assert len(server.generate_requests) == 1


def test_drop_with_reset(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.drop(reset=True))
    # A TCP RST surfaces as ECONNRESET on the client's read, not as a clean EOF.
    with pytest.raises(httpx.ReadError, match="reset"):
        generate(client)


def test_drop_mid_body(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.drop_mid_body())
    with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
        generate(client)


def test_connection_is_reusable_after_failures(server: ScriptedOllama) -> None:
    server.script(Reply.drop(), Reply.drop_mid_body(), Reply.text("fine"))
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            generate(client)
        with pytest.raises(httpx.RemoteProtocolError):
            generate(client)
        assert generate(client).json()["response"] == "fine"


def test_trickle_delivers_whole_body(server: ScriptedOllama, client: httpx.Client) -> None:
    text = json.dumps({"summary": "slow but complete", "consumes": [ULID_A]})
    server.script(Reply.trickle(text, delay=0.002, chunk=16))
    started = time.monotonic()
    response = generate(client)
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert response.json()["response"] == text
    # The envelope is > 300 bytes, so at least ~18 pauses of 2 ms happened.
    assert elapsed >= 0.03


def test_huge_reply(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.huge(5_000_000))
    response = generate(client)
    assert response.status_code == 200
    assert len(response.content) >= 5_000_000
    assert len(response.json()["response"]) == 5_000_000


def test_streaming_form_when_stream_is_omitted(
    server: ScriptedOllama, client: httpx.Client
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    server.script(Reply.text(text))
    response = client.post("/api/generate", json={"model": "llama3.2", "prompt": "hi"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.text.splitlines() if line]
    assert len(lines) >= 3
    assert all(line["done"] is False for line in lines[:-1])
    assert "done_reason" not in lines[0]
    final = lines[-1]
    assert final["done"] is True
    assert final["response"] == ""
    assert final["done_reason"] == "stop"
    assert final["eval_count"] == 42
    assert "".join(line["response"] for line in lines) == text


def test_streaming_trickle(server: ScriptedOllama, client: httpx.Client) -> None:
    server.script(Reply.trickle("abcdefgh", delay=0.001, chunk=32))
    response = generate(client, stream=True)
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert "".join(line["response"] for line in lines) == "abcdefgh"
    assert lines[-1]["done"] is True


# ----------------------------------------------------------------- dynamic replies


def test_responder_sees_parsed_request(server: ScriptedOllama, client: httpx.Client) -> None:
    seen: list[Any] = []

    def echo_ids(request: RecordedRequest) -> Reply:
        seen.append(request.json)
        ids = re.findall(r"^- ([0-9A-Z]{26}): ", request.prompt, flags=re.MULTILINE)
        return Reply.proposal(f"{len(ids)} facts", ids)

    server.set_responder(echo_ids)
    prompt = f"Merge these facts:\n- {ULID_A}: the sky is blue\n- {ULID_B}: grass is green\n"
    envelope = generate(client, prompt).json()
    assert json.loads(envelope["response"])["consumes"] == [ULID_A, ULID_B]
    assert seen == [{"model": "llama3.2", "prompt": prompt, "stream": False}]


def test_queue_beats_responder_which_beats_default(
    server: ScriptedOllama, client: httpx.Client
) -> None:
    server.set_default(Reply.text("default"))
    server.set_responder(lambda request: Reply.text("responder"))
    server.script(Reply.text("queued"))
    assert generate(client).json()["response"] == "queued"
    assert generate(client).json()["response"] == "responder"


def test_callable_default_and_failing_responder(
    server: ScriptedOllama, client: httpx.Client
) -> None:
    server.set_default(lambda request: Reply.text(request.prompt.upper()))
    assert generate(client, "shout").json()["response"] == "SHOUT"

    def broken(request: RecordedRequest) -> Reply:
        raise RuntimeError("boom")

    server.set_responder(broken)
    response = generate(client)
    assert response.status_code == 500
    assert "boom" in response.json()["error"]
    assert [str(error) for error in server.errors] == ["boom"]
    server.errors.clear()


def test_requests_are_recorded_in_order_across_routes(
    server: ScriptedOllama, client: httpx.Client
) -> None:
    server.script(Reply.text("ok"))
    client.get("/")
    client.get("/api/version")
    generate(client)
    client.get("/api/tags")
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/"),
        ("GET", "/api/version"),
        ("POST", "/api/generate"),
        ("GET", "/api/tags"),
    ]


def test_stop_closes_idle_keep_alive_connections() -> None:
    server = ScriptedOllama().start()
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        assert client.get("/").status_code == 200
        server.stop()
        assert server.open_connections == 0
        with pytest.raises(httpx.TransportError):
            client.get("/")
