"""The scripted Messages API itself: what it refuses before the script, and its reply shapes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.anthropic_fake import FakeAnthropic, Message

GOOD_HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
GOOD_BODY = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def post(fake: FakeAnthropic, body: Any = GOOD_BODY, **headers: str) -> httpx.Response:
    sent = {**GOOD_HEADERS, **{k.replace("_", "-"): v for k, v in headers.items()}}
    sent = {k: v for k, v in sent.items() if v}
    with httpx.Client(base_url=fake.url, transport=fake.transport) as client:
        if isinstance(body, bytes):
            return client.post("/v1/messages", content=body, headers=sent)
        return client.post("/v1/messages", json=body, headers=sent)


def test_a_valid_call_gets_the_scripted_message() -> None:
    fake = FakeAnthropic()
    fake.script(Message.text("merged"))
    reply = post(fake)
    assert reply.status_code == 200
    body = reply.json()
    assert (body["type"], body["role"], body["stop_reason"]) == ("message", "assistant", "end_turn")
    assert body["content"] == [{"type": "text", "text": "merged"}]
    assert [r.json for r in fake.message_requests] == [GOOD_BODY]


@pytest.mark.parametrize(
    ("body", "headers", "status", "kind"),
    [
        (GOOD_BODY, {"x_api_key": ""}, 401, "authentication_error"),
        (GOOD_BODY, {"x_api_key": "sk-ant-other"}, 401, "authentication_error"),
        (GOOD_BODY, {"anthropic_version": ""}, 400, "invalid_request_error"),
        (b"{not json", {}, 400, "invalid_request_error"),
        ({**GOOD_BODY, "max_tokens": 0}, {}, 400, "invalid_request_error"),
        ({**GOOD_BODY, "messages": []}, {}, 400, "invalid_request_error"),
        ({**GOOD_BODY, "messages": [{"role": "assistant", "content": "x"}]}, {}, 400, "invalid"),
        ({"max_tokens": 16, "messages": GOOD_BODY["messages"]}, {}, 400, "invalid_request"),
    ],
    ids=[
        "no-key",
        "wrong-key",
        "no-version",
        "malformed",
        "zero-tokens",
        "no-messages",
        "assistant-first",
        "no-model",
    ],
)
def test_refused_calls_never_reach_the_script(
    body: Any, headers: dict[str, str], status: int, kind: str
) -> None:
    fake = FakeAnthropic()
    fake.script(Message.text("kept"))
    refused = post(fake, body, **headers)
    assert refused.status_code == status
    assert refused.json()["type"] == "error"
    assert refused.json()["error"]["type"].startswith(kind)
    assert fake.pending == 1 and fake.message_requests == []


def test_error_replies_have_the_api_shape() -> None:
    fake = FakeAnthropic()
    fake.script(Message.overloaded(), Message.rate_limited())
    overloaded, limited = post(fake), post(fake)
    assert overloaded.status_code == 529
    assert overloaded.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert (limited.status_code, limited.json()["error"]["type"]) == (429, "rate_limit_error")
