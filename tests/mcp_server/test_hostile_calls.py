"""Bad arguments get an error result that names the problem, and change nothing, over stdio
and over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.mcp_server.conftest import Served

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("memory_add", {"agent_id": "a"}, "text is required"),
    ("memory_add", {"text": "x"}, "agent_id is required"),
    ("memory_add", {"agent_id": "a", "text": 42}, "text must be a string, got a number"),
    ("memory_add", {"agent_id": "a", "text": "   "}, "text: text is empty"),
    ("memory_add", {"agent_id": "a", "text": "x" * (64 * 1024 + 1)}, "limit is 65536 bytes"),
    ("memory_add", {"agent_id": "a", "text": "red \x1b[31m alert"}, "U+001B"),
    ("memory_add", {"agent_id": "a", "text": "nul\x00byte"}, "U+0000"),
    ("memory_add", {"agent_id": "a", "text": "evil \u202e txt"}, "U+202E"),
    ("memory_add", {"agent_id": "a\x07b", "text": "x"}, "control character (U+0007)"),
    ("memory_add", {"agent_id": ["a"], "text": "x"}, "agent_id must be a string, got an array"),
    ("memory_search", {"agent_id": "a"}, "query is required"),
    ("memory_search", {"agent_id": "a", "query": "x", "top_k": 0}, "between 1 and 100, got 0"),
    ("memory_search", {"agent_id": "a", "query": "x", "top_k": -3}, "between 1 and 100, got -3"),
    ("memory_search", {"agent_id": "a", "query": "x", "top_k": 10**12}, "between 1 and 100"),
    ("memory_search", {"agent_id": "a", "query": "x", "top_k": 2.5}, "whole number"),
    ("memory_search", {"agent_id": "a", "query": "x", "top_k": True}, "whole number"),
    (
        "memory_search",
        {"agent_id": "a", "query": "x", "explain": "yes"},
        "explain must be true or false",
    ),
    ("memory_search_batch", {"agent_id": "a", "queries": []}, "queries is empty"),
    (
        "memory_search_batch",
        {"agent_id": "a", "queries": ["q"] * 10_000},
        "10000 items; the limit is 32",
    ),
    ("memory_search_batch", {"agent_id": "a", "queries": ["ok", 7]}, "queries[1] must be a string"),
    ("memory_search_batch", {"agent_id": "a", "queries": "one"}, "must be an array"),
    ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
]


async def test_each_bad_call_is_refused_by_name_and_writes_nothing(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=a, text="the one good fact")
        for tool, arguments, expected in CASES:
            mine = {k: a if v == "a" else v for k, v in arguments.items()}
            error = await agent.error(tool, **mine)
            assert expected in error, (tool, arguments, error)
        # The server is still serving after all of that.
        _, structured = await agent.ok("memory_search", agent_id=a, query="good fact")
    assert structured["count"] == 1
    with LmdbStore.open(served.store, read_only=True) as store:
        assert [f.text for f in store.list_facts(a)] == ["the one good fact"]
        # Nor did any refused call write under the agent ids it named.
        assert [f.text for f in store.list_facts("a")] == []
