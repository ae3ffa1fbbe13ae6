"""The tools as an agent calls them: the SDK's client, our server in a subprocess, a real
store, over stdio and over HTTP (`served`). Texts and structured shapes are upstream's
contract."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import Fact
from graymatter_tui.mcp.tools import MAX_DESCRIPTION, TOOLS
from tests.mcp_server.conftest import Served

VECTORS_OFF = {
    "used": False,
    "reason": "embeddings are off (GRAYMATTER_EMBED=none)",
    "failed": False,
}

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


async def test_the_tools_are_listed_with_upstream_names_and_schemas(served: Served) -> None:
    async with served.connect() as agent:
        listed = {tool.name: tool for tool in await agent.list_tools()}
    assert set(listed) == {tool.name for tool in TOOLS}  # all seven of upstream's
    search = listed["memory_search"]
    assert search.input_schema["required"] == ["agent_id", "query"]
    assert search.input_schema["properties"]["top_k"]["default"] == 8
    assert search.output_schema is not None
    assert set(search.output_schema["required"]) == {"agent_id", "query", "count", "facts"}
    reflect = listed["memory_reflect"].input_schema
    assert reflect["anyOf"] == [{"required": ["agent_id"]}, {"required": ["agent"]}]
    assert reflect["properties"]["action"]["enum"] == [
        "add",
        "update",
        "forget",
        "link",
        "pin",
        "unpin",
    ]
    assert listed["checkpoint_resume"].input_schema["properties"]["on_missing"]["enum"] == [
        "error",
        "empty",
    ]
    assert listed["memory_search_batch"].input_schema["required"] == ["agent_id", "queries"]
    assert listed["memory_alias"].input_schema["required"] == ["agent_id", "term", "equivalents"]


def test_every_description_opens_with_a_verb_names_a_sibling_and_fits() -> None:
    names = {tool.name for tool in TOOLS}
    for tool in TOOLS:
        assert len(tool.description) <= MAX_DESCRIPTION, tool.name
        first = tool.description.split()[0]
        assert first[0].isupper() and not first.endswith("s"), (tool.name, first)
        assert any(other in tool.description for other in names - {tool.name}), tool.name
        assert "Fails" in tool.description and "Returns" in tool.description, tool.name


async def test_add_then_search_finds_it_with_upstream_text(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        text, structured = await agent.ok(
            "memory_add", agent_id=a, text="The deploy key rotates on Fridays"
        )
        assert text == f'Memory stored for agent "{a}".'
        assert structured == {"agent_id": a, "stored": True}
        await agent.ok("memory_add", agent_id=a, text="Lunch is at noon")
        text, structured = await agent.ok(
            "memory_search", agent_id=a, query="when does the deploy key rotate"
        )
    assert (
        text
        == f'Found 1 relevant memories for agent "{a}":\n\n1. The deploy key rotates on Fridays'
    )
    assert structured == {
        "agent_id": a,
        "query": "when does the deploy key rotate",
        "count": 1,
        "facts": ["The deploy key rotates on Fridays"],
        # Added: whether recall's vector signal took part (the suite runs without it).
        "vector": VECTORS_OFF,
    }
    # The server records the search's access just after answering (ADR 0033).
    facts = await accesses_settled(
        served.store, a, lambda f: f["The deploy key rotates on Fridays"]
    )
    assert facts["The deploy key rotates on Fridays"].access_count == 1  # the search was recorded
    assert facts["Lunch is at noon"].access_count == 0


async def accesses_settled(
    path: Path, agent: str, recorded: Callable[[dict[str, Fact]], Fact], timeout: float = 15
) -> dict[str, Fact]:
    """`agent`'s facts by text once `recorded(facts)` shows an access (or the time is up)."""
    deadline = time.monotonic() + timeout
    while True:
        with LmdbStore.open(path, read_only=True) as store:
            facts = {f.text: f for f in store.list_facts(agent)}
        if recorded(facts).access_count or time.monotonic() > deadline:
            return facts
        await asyncio.sleep(0.05)


async def test_an_empty_search_says_so(served: Served) -> None:
    nobody = served.agent + "-nobody"
    async with served.connect() as agent:
        text, structured = await agent.ok("memory_search", agent_id=nobody, query="anything")
    assert text == f'No memories found for agent "{nobody}".'
    assert structured == {
        "agent_id": nobody,
        "query": "anything",
        "count": 0,
        "facts": [],
        "vector": VECTORS_OFF,
    }


async def test_batch_merges_and_lists_each_query(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=a, text="Postgres runs on port 5433")
        await agent.ok("memory_add", agent_id=a, text="Redis runs on port 6380")
        text, structured = await agent.ok(
            "memory_search_batch",
            agent_id=a,
            queries=["postgres port", "redis port", "port"],
            top_k=2,
        )
    assert structured["count"] == 2
    assert sorted(structured["facts"]) == ["Postgres runs on port 5433", "Redis runs on port 6380"]
    assert [r["query"] for r in structured["results"]] == ["postgres port", "redis port", "port"]
    assert structured["results"][0]["facts"][0] == "Postgres runs on port 5433"
    assert structured["results"][2]["count"] == 2
    assert text.startswith(f'Found 2 relevant memories for agent "{a}" across 3 queries:\n\n1. ')
    assert 'Query "redis port": 1 found\n1. Redis runs on port 6380\n\nQuery "port"' in text


async def test_a_multi_line_fact_is_one_line_of_the_list(served: Served) -> None:
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=served.agent, text="Release steps:\ntag\npush")
        text, structured = await agent.ok(
            "memory_search", agent_id=served.agent, query="release steps"
        )
    assert text.endswith("1. Release steps: tag push")
    assert structured["facts"] == ["Release steps:\ntag\npush"]


async def test_default_agent_and_read_only(served: Served) -> None:
    ops = served.agent
    with LmdbStore.open(served.store) as store:
        store.put(ops, "The pager rota changes on Monday")
    async with served.connect("--agent", ops, "--read-only") as agent:
        _, structured = await agent.ok("memory_search", query="pager rota")
        assert structured["agent_id"] == ops and structured["count"] == 1
        error = await agent.error("memory_add", text="should not land")
    assert "read-only" in error
    with LmdbStore.open(served.store, read_only=True) as store:
        facts = store.list_facts(ops)
    assert [f.text for f in facts] == ["The pager rota changes on Monday"]
    assert facts[0].access_count == 0  # a read-only server records no access


async def test_explain_says_why_each_fact_ranked(served: Served) -> None:
    a = served.agent
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=a, text="The deploy key rotates on Fridays")
        await agent.ok("memory_add", agent_id=a, text="The deploy runs on Mondays")
        for other in ("Lunch is at noon", "Backups run nightly"):  # "deploy" stays rare
            await agent.ok("memory_add", agent_id=a, text=other)
        plain_text, plain = await agent.ok("memory_search", agent_id=a, query="deploy key")
        text, structured = await agent.ok(
            "memory_search", agent_id=a, query="deploy key", explain=True
        )
    assert "explain" not in plain
    assert {k: v for k, v in structured.items() if k != "explain"} == plain
    why = structured["explain"]
    assert [w["keyword_rank"] for w in why] == [1, 2]
    assert why[0]["score"] > why[1]["score"]
    assert set(why[0]) == {
        "fact_id",
        "written_at",
        "vector_rank",
        "vector_score",
        "keyword_rank",
        "keyword_score",
        "recency_rank",
        "age",
        "age_seconds",
        "score",
        "weight",
        "pinned",
        "source",
        "lineage",
        "lineage_capped",
        "lineage_cycle",
        # Added with the weighted fusion: each signal's part of the score.
        "keyword_normalised",
        "recency",
        "vector_part",
        "keyword_part",
        "recency_part",
        "vector_stand_in",
        # Added with the date prior (ADR 0069): null and 0 for a query naming no date.
        "date_match",
        "date_part",
    }
    # Without vectors the best keyword match scores 1 and the parts sum to the score.
    assert (why[0]["keyword_part"], why[0]["score"]) == (1.0, 1.0)
    assert why[1]["keyword_part"] == why[1]["score"] == why[1]["keyword_normalised"] < 1.0
    assert why[0]["source"] == "mcp:test-client"
    assert why[0]["lineage"] == [] and not why[0]["lineage_capped"]
    # No embedder in this server: the vector signal is absent, the keyword one present.
    assert why[0]["vector_rank"] is None and why[0]["vector_score"] is None
    assert why[0]["keyword_score"] > why[1]["keyword_score"] > 0
    assert isinstance(why[0]["age_seconds"], int) and why[0]["age"]
    assert text.startswith(plain_text + "\n\nWhy:\n1. id " + why[0]["fact_id"])
    assert "by mcp:test-client · replaced nothing" in text.splitlines()[-2]


async def test_explain_gives_the_lineage_of_what_each_fact_superseded(served: Served) -> None:
    a = served.agent
    v1, v2, v3 = (f"The staging database listens on port {p}" for p in (5432, 5433, 5434))
    async with served.connect() as agent:
        await agent.ok("memory_add", agent_id=a, text=v1)
        await agent.ok("memory_reflect", action="update", agent_id=a, target=v1, text=v2)
        await agent.ok("memory_reflect", action="update", agent_id=a, target=v2, text=v3)
        await agent.ok("memory_add", agent_id=a, text="The staging database is retired soon")
        await agent.ok(
            "memory_reflect",
            action="forget",
            agent_id=a,
            target="The staging database is retired soon",
        )
        text, structured = await agent.ok(
            "memory_search", agent_id=a, query="staging database port", explain=True
        )
        (why,) = structured["explain"]
        assert [(step["text"], step["depth"]) for step in why["lineage"]] == [(v2, 1), (v1, 2)]
        assert {step["source"] for step in why["lineage"]} == {"mcp:test-client"}
        assert why["lineage"][0]["replaced_by"] == why["fact_id"]
        assert not why["lineage_cycle"] and not why["lineage_capped"]
        assert text.endswith("· replaced 2 facts (2 deep)")
        # Corrupt receipts (written behind the server's back) close a cycle of ids: the
        # walk stops there and says so, instead of looping.
        v2_id = why["lineage"][0]["fact_id"]
        with LmdbStore.open(served.store) as store:
            store.write(lambda tx: tx.put_receipts(v2_id, [why["fact_id"]]))
        text, structured = await agent.ok(
            "memory_search", agent_id=a, query="staging database port", explain=True
        )
    (why,) = structured["explain"]
    assert [step["text"] for step in why["lineage"]] == [v2, v1]
    assert why["lineage_cycle"]
    assert "stopped at a cycle of ids" in text
