"""Confidence over MCP, as an agent calls it (stdio and HTTP): `confidence` on memory_add
and memory_reflect add/update, `min_confidence` and `confidence_weight` on both search
tools, the factor in `explain`; a bad value is a tool error that names the argument and
writes nothing; without them every reply is as upstream's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.mcp_server.client import connected
from tests.mcp_server.conftest import Served

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

TEXTS = {
    None: "The deploy window opens Monday",
    "unverified": "The deploy window opens Tuesday",
    "inferred": "The deploy window opens Wednesday",
    "verified": "The deploy window opens Thursday",
}
FILLER = ("Lunch is at noon", "Backups run nightly", "The VPN is slow", "Tea is in the kitchen")


def _labels(store_path: Path, agent: str) -> dict[str, str | None]:
    with LmdbStore.open(store_path, read_only=True) as store:
        return {f.text: f.confidence for f in store.list_facts(agent, "all")}


async def _seed(agent: Any, a: str) -> None:
    for label, text in TEXTS.items():
        extra = {"confidence": label} if label else {}
        _, structured = await agent.ok("memory_add", agent_id=a, text=text, **extra)
        # The four are possible updates of each other: `review` names the held pair.
        stored = {k: v for k, v in structured.items() if k != "review"}
        assert stored == {"agent_id": a, "stored": True}
    for text in FILLER:  # "deploy" and "window" stay rare terms
        await agent.ok("memory_add", agent_id=a, text=text)


async def test_memory_add_and_reflect_write_the_label(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=a, text="Port 5432", confidence="verified")
        await agent.ok("memory_add", agent_id=a, text="Port 6379")
        await agent.ok(
            "memory_reflect", action="add", agent_id=a, text="Port 80", confidence="inferred"
        )
        text, structured = await agent.ok(
            "memory_reflect", action="update", agent_id=a, target="Port 5432", text="Port 5433"
        )
        assert text == f'Reflected "update" for agent "{a}": 1 fact superseded.'
        assert structured == {"action": "update", "agent": a, "ok": True}
        await agent.ok(
            "memory_reflect",
            action="update",
            agent_id=a,
            target="Port 80",
            text="Port 8080",
            confidence="unverified",
        )
    assert _labels(served.store, a) == {
        "Port 5432": "verified",
        "Port 5433": "verified",  # an update without one: the lowest it replaced
        "Port 6379": None,
        "Port 80": "inferred",
        "Port 8080": "unverified",  # given: taken
    }


async def test_search_without_the_options_is_as_upstream(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        await _seed(agent, a)
        text, plain = await agent.ok("memory_search", agent_id=a, query="deploy window")
        _, explained = await agent.ok(
            "memory_search", agent_id=a, query="deploy window", explain=True
        )
    assert plain["facts"] == list(TEXTS.values())  # labels play no part: oldest first
    assert text.startswith(f'Found 4 relevant memories for agent "{a}":')
    for why in explained["explain"]:
        assert "confidence" not in why and "confidence_factor" not in why


async def test_search_weighs_filters_and_explains_by_confidence(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        await _seed(agent, a)
        text, weighed = await agent.ok(
            "memory_search", agent_id=a, query="deploy window", confidence_weight=0.3, explain=True
        )
        _, sure = await agent.ok(
            "memory_search", agent_id=a, query="deploy window", min_confidence="inferred"
        )
        _, batch = await agent.ok(
            "memory_search_batch",
            agent_id=a,
            queries=["deploy window", "deploy"],
            min_confidence="verified",
            confidence_weight=0.1,
        )
    assert weighed["facts"] == [TEXTS[k] for k in ("verified", None, "inferred", "unverified")]
    assert text.splitlines()[2] == f"1. {TEXTS['verified']}"
    why = weighed["explain"]
    assert [w["confidence"] for w in why] == ["verified", None, "inferred", "unverified"]
    assert [w["confidence_factor"] for w in why] == [1.3, 1.0, 1.0, 0.7]
    assert [w["score"] for w in why] == [1.3, 1.0, 1.0, 0.7]
    assert sure["facts"] == [TEXTS["inferred"], TEXTS["verified"]]
    assert batch["facts"] == [TEXTS["verified"]]
    assert [r["facts"] for r in batch["results"]] == [[TEXTS["verified"]]] * 2


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        (
            "memory_add",
            {"text": "Port 1", "confidence": "sure"},
            "confidence must be verified, inferred or unverified, got 'sure'",
        ),
        ("memory_add", {"text": "Port 1", "confidence": 1}, "confidence must be a string"),
        (
            "memory_reflect",
            {"action": "add", "text": "Port 1", "confidence": "VERIFIED"},
            "confidence must be verified",
        ),
        (
            "memory_reflect",
            {"action": "update", "target": "Port 0", "text": "Port 1", "confidence": "likely"},
            "got 'likely'",
        ),
        (
            "memory_reflect",
            {"action": "forget", "target": "Port 0", "confidence": "verified"},
            "confidence is for add and update",
        ),
        (
            "memory_search",
            {"query": "port", "min_confidence": "high"},
            "min_confidence must be verified, inferred or unverified",
        ),
        (
            "memory_search",
            {"query": "port", "confidence_weight": 0.75},
            "confidence_weight must be a number from 0 to 0.5, got 0.75",
        ),
        ("memory_search", {"query": "port", "confidence_weight": -1}, "got -1"),
        (
            "memory_search",
            {"query": "port", "confidence_weight": "0.2"},
            "confidence_weight must be a number from 0 to 0.5, got a string",
        ),
        ("memory_search", {"query": "port", "confidence_weight": True}, "got a boolean"),
        (
            "memory_search_batch",
            {"queries": ["port"], "confidence_weight": 0.6},
            "confidence_weight must be",
        ),
        (
            "memory_search_batch",
            {"queries": ["port"], "min_confidence": "x"},
            "min_confidence must be",
        ),
    ],
)
async def test_a_bad_confidence_argument_is_a_tool_error_and_writes_nothing(
    served: Served, tool: str, arguments: dict[str, Any], said: str
) -> None:
    a = served.agent
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=a, text="Port 0")
        error = await agent.error(tool, agent_id=a, **arguments)
    assert said in error
    assert _labels(served.store, a) == {"Port 0": None}


async def test_the_schemas_offer_the_options_without_requiring_them(served: Served) -> None:
    async with served.connect() as agent:
        listed = {tool.name: tool.input_schema for tool in await agent.list_tools()}
    levels = ["verified", "inferred", "unverified"]
    for name in ("memory_search", "memory_search_batch"):
        properties = listed[name]["properties"]
        assert properties["min_confidence"]["enum"] == levels
        weight = properties["confidence_weight"]
        assert (weight["type"], weight["minimum"], weight["maximum"]) == ("number", 0, 0.5)
        assert weight["default"] == 0
    for name in ("memory_add", "memory_reflect"):
        assert listed[name]["properties"]["confidence"]["enum"] == levels
    assert listed["memory_add"]["required"] == ["agent_id", "text"]
    assert listed["memory_search"]["required"] == ["agent_id", "query"]
    assert listed["memory_reflect"]["required"] == ["action"]


async def test_a_held_add_and_update_keep_their_label_until_approved(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LmdbStore.open(path) as store:
        store.put("a", "Port 5432", confidence="inferred")
    async with connected(path, "--review", "all") as agent:
        _, added = await agent.ok("memory_add", agent_id="a", text="Port 80", confidence="verified")
        _, updated = await agent.ok(
            "memory_reflect", action="update", agent_id="a", target="Port 5432", text="Port 5433"
        )
        _, given = await agent.ok(
            "memory_reflect",
            action="update",
            agent_id="a",
            target="Port 5432",
            text="Port 5434",
            confidence="unverified",
        )
    assert added["held"] and updated["held"] and given["held"]
    assert _labels(path, "a") == {"Port 5432": "inferred"}
    with LmdbStore.open(path) as store:
        held = {p.id: p for p in store.proposals("a")}
        assert held[added["proposal_id"]].confidence == "verified"
        assert held[updated["proposal_id"]].confidence is None
        store.approve_proposal(added["proposal_id"])
        store.approve_proposal(given["proposal_id"])
    assert _labels(path, "a") == {
        "Port 80": "verified",
        "Port 5432": "inferred",
        "Port 5434": "unverified",
    }
