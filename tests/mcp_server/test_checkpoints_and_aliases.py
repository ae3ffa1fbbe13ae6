"""checkpoint_save / checkpoint_resume and memory_alias as an agent calls them, over stdio
and over HTTP."""

from __future__ import annotations

import json

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.mcp_server.conftest import Served

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


async def test_save_then_resume_returns_the_latest_state(served: Served) -> None:
    a = served.agent
    state = {"task": "migrate billing", "messages": [{"role": "user"}, {"role": "assistant"}]}
    async with served.connect() as agent:
        _, first = await agent.ok("checkpoint_save", agent_id=a, state=json.dumps({"old": 1}))
        text, saved = await agent.ok("checkpoint_save", agent_id=a, state=json.dumps(state))
        assert set(saved) == {"agent_id", "checkpoint_id", "created_at"}
        assert saved["checkpoint_id"] != first["checkpoint_id"]
        assert text == f'Checkpoint "{saved["checkpoint_id"]}" saved for agent "{a}".'
        text, resumed = await agent.ok("checkpoint_resume", agent_id=a)
    assert resumed == {
        "id": saved["checkpoint_id"],
        "created_at": saved["created_at"],
        "state": state,
        "message_count": 2,
    }
    assert text.splitlines()[:3] == [
        f'Checkpoint "{saved["checkpoint_id"]}" restored for agent "{a}".',
        f"Created: {saved['created_at']}",
        "State:",
    ]
    assert json.loads("\n".join(text.splitlines()[3:])) == state  # indented JSON


async def test_state_sent_as_an_object_is_kept_as_its_json_text(served: Served) -> None:
    a = served.agent
    state = {"task": "überprüfen", "messages": [{"role": "user", "n": 1.5}], "done": False}
    async with served.connect() as agent:
        listed = {tool.name: tool for tool in await agent.list_tools()}
        schema = listed["checkpoint_save"].input_schema["properties"]["state"]
        assert {"type": "object"} in schema["anyOf"] and {"type": "string"} in schema["anyOf"]
        assert "state is a JSON object encoded as a string" in listed["checkpoint_save"].description
        _, saved = await agent.ok("checkpoint_save", agent_id=a, state=state)
        _, resumed = await agent.ok("checkpoint_resume", agent_id=a)
        assert resumed["id"] == saved["checkpoint_id"]
        assert resumed["state"] == state and resumed["message_count"] == 1
        with LmdbStore.open(served.store, read_only=True) as store:
            kept = store.latest_checkpoint(a)
        assert kept is not None and kept.state is not None
        assert json.loads(kept.state) == state and "überprüfen" in kept.state  # JSON text
        _, as_text = await agent.ok("checkpoint_save", agent_id=a, state=json.dumps({"x": 1}))
        _, resumed = await agent.ok("checkpoint_resume", agent_id=a)
        assert resumed["id"] == as_text["checkpoint_id"] and resumed["state"] == {"x": 1}
    with LmdbStore.open(served.store, read_only=True) as store:
        latest = store.latest_checkpoint(a)
    assert latest is not None and latest.state == '{"x": 1}'  # a string is kept as given


async def test_resume_with_nothing_saved(served: Served) -> None:
    a, other = served.agent, served.agent + "-other"
    async with served.connect() as agent:
        await agent.ok("checkpoint_save", agent_id=other)
        error = await agent.error("checkpoint_resume", agent_id=a)
        assert "no checkpoint saved" in error and "on_missing" in error
        _, empty = await agent.ok("checkpoint_resume", agent_id=a, on_missing="empty")
        assert empty == {"found": False, "agent_id": a}
        _, bare = await agent.ok("checkpoint_resume", agent_id=other)
        assert "state" not in bare and "message_count" not in bare


async def test_bad_checkpoint_calls(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        for arguments, expected in [
            ({"state": "{}"}, "agent_id is required"),
            ({"agent_id": a, "state": "{not json"}, "state is not valid JSON"),
            ({"agent_id": a, "state": "[1, 2]"}, "must be a JSON object, got an array"),
            ({"agent_id": a, "state": [1, 2]}, "must be a JSON object or a string holding"),
            ({"agent_id": a, "state": 7}, "or a string holding one, got a number"),
            ({"agent_id": a, "state": "x" * (300 * 1024)}, "over the limit"),
            ({"agent_id": a, "state": {"notes": "x" * (300 * 1024)}}, "over the limit"),
        ]:
            assert expected in await agent.error("checkpoint_save", **arguments)
        error = await agent.error("checkpoint_resume", agent_id=a, on_missing="ignore")
        assert 'unknown on_missing "ignore"; expected one of: error, empty' in error
    with LmdbStore.open(served.store, read_only=True) as store:
        assert store.latest_checkpoint(a) is None


async def test_an_alias_widens_later_searches_for_that_agent_only(served: Served) -> None:
    a, b = served.agent, served.agent + "-b"
    with LmdbStore.open(served.store) as store:
        store.put(a, "The Kubernetes cluster runs in eu-west-1")
        store.put(b, "The Kubernetes cluster runs in us-east-2")
    async with served.connect() as agent:
        _, before = await agent.ok("memory_search", agent_id=a, query="k8s region")
        assert before["count"] == 0
        text, structured = await agent.ok(
            "memory_alias", agent_id=a, term="K8s", equivalents=["kubernetes"]
        )
        assert structured == {"agent_id": a, "term": "K8s", "equivalents": ["kubernetes"]}
        assert text == f'Alias saved for agent "{a}": "K8s" also means "kubernetes".'
        _, after = await agent.ok("memory_search", agent_id=a, query="k8s region")
        assert after["facts"] == ["The Kubernetes cluster runs in eu-west-1"]
        _, other = await agent.ok("memory_search", agent_id=b, query="k8s region")
        assert other["count"] == 0
        _, again = await agent.ok(
            "memory_alias", agent_id=a, term="k8s", equivalents=["kube", "kubernetes"]
        )
        assert again["equivalents"] == ["kubernetes", "kube"]  # joined, not replaced
        for arguments, expected in [
            ({"agent_id": a, "term": "k8s", "equivalents": []}, "equivalents is empty"),
            ({"agent_id": a, "term": "k8s"}, "equivalents is required"),
            ({"agent_id": a, "term": "the", "equivalents": ["x"]}, "no searchable words"),
            ({"agent_id": a, "term": "k8s", "equivalents": ["a\x1bb"]}, "U+001B"),
            ({"agent_id": a, "term": "k8s", "equivalents": ["x"] * 33}, "limit is 32"),
        ]:
            assert expected in await agent.error("memory_alias", **arguments)


async def test_an_alias_is_used_for_other_forms_of_its_words(served: Served) -> None:
    a = served.agent
    with LmdbStore.open(served.store) as store:
        store.put(a, "Polar handles billing since March")
    async with served.connect() as agent:
        await agent.ok("memory_alias", agent_id=a, term="payment", equivalents=["Polar"])
        # "payments" and "payment" share a stem: the alias applies to both.
        _, found = await agent.ok("memory_search", agent_id=a, query="payments provider")
    assert found["facts"] == ["Polar handles billing since March"]
