"""A scripted Anthropic Messages API for tests, served through ``httpx.MockTransport``.

``POST /v1/messages`` is checked as the API checks it: the ``x-api-key`` must be the
configured key (else 401 ``authentication_error``), ``anthropic-version`` must be sent, and
the body must carry ``model``, a positive ``max_tokens`` and a non-empty ``messages`` list
starting with a user turn (else 400 ``invalid_request_error``). Valid calls are answered from
the script. Errors have the API's shape: ``{"type": "error", "error": {"type", "message"}}``.

    fake = FakeAnthropic(key="sk-ant-test")
    fake.script(Message.overloaded(), Message.text("All garden notes."))
    AnthropicSummariser("sk-ant-test", fake.url, "claude-x", 2.0, transport=fake.transport)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.support.scripted_http import JSON, Answer, RecordedRequest, ScriptedHttp

__all__ = ["FakeAnthropic", "Message"]

_VERSIONS = frozenset({"2023-01-01", "2023-06-01"})


@dataclass(frozen=True)
class Message:
    """One scripted answer to a valid ``POST /v1/messages``."""

    status: int
    body: bytes

    @classmethod
    def text(cls, text: str, *, stop_reason: str = "end_turn") -> Message:
        body = {
            "id": "msg_01FakeFakeFakeFakeFakeFake",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": len(text) // 4 + 1},
        }
        return cls(200, json.dumps(body).encode())

    @classmethod
    def error(cls, status: int, kind: str, message: str) -> Message:
        return cls(status, _error_body(kind, message))

    @classmethod
    def overloaded(cls) -> Message:
        return cls.error(529, "overloaded_error", "Overloaded")

    @classmethod
    def rate_limited(cls) -> Message:
        return cls.error(429, "rate_limit_error", "Number of requests has exceeded your limit")

    @classmethod
    def raw(cls, body: bytes, *, status: int = 200) -> Message:
        return cls(status, body)


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def _invalid(message: str) -> Answer:
    return Answer(400, JSON, _error_body("invalid_request_error", message))


def _body_problem(body: object) -> str:
    """The API's complaint about a Messages request body, or ``""``."""
    if not isinstance(body, dict):
        return "body: Input should be a valid dictionary"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    tokens = body.get("max_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        return "max_tokens: Field required (an integer of at least 1)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not isinstance(message.get("content"), str | list):
            return f"messages.{i}.content: Field required"
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    return ""


class FakeAnthropic(ScriptedHttp[Message]):
    """The Messages API's request checks, answered from a script."""

    url = "https://anthropic.test"

    def __init__(self, *, key: str = "sk-ant-test") -> None:
        super().__init__(Message.error(500, "api_error", "no scripted reply"))
        self.key = key

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The requests that reached the script (passed every check), in order."""
        return [r for r in self.requests if r.scripted]

    def route(self, request: RecordedRequest) -> Answer:
        if request.route != "/v1/messages":
            return Answer(404, JSON, _error_body("not_found_error", "Not found"))
        if request.method != "POST":
            return Answer(405, JSON, _error_body("invalid_request_error", "Method not allowed"))
        key = request.headers.get("x-api-key", "")
        if not key:
            return Answer(401, JSON, _error_body("authentication_error", "x-api-key required"))
        if key != self.key:
            return Answer(401, JSON, _error_body("authentication_error", "invalid x-api-key"))
        if request.headers.get("anthropic-version") not in _VERSIONS:
            return _invalid("anthropic-version: header is required and must be a known version")
        if not request.headers.get("content-type", "").startswith("application/json"):
            return _invalid("content-type must be application/json")
        if request.json is None:
            return _invalid("There was an error parsing the body as JSON")
        problem = _body_problem(request.json)
        if problem:
            return _invalid(problem)
        reply = self.next_reply(request)
        return Answer(reply.status, JSON, reply.body)
