"""Who wrote it, over MCP: each call writes as `mcp:<the name the client gave when it
connected>`, visible in `show --json` (`fact.source`) and in the activity feed; a hostile
name is stored clipped and cleaned; two clients of one HTTP server are told apart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.provenance import MAX_CLIENT_NAME
from tests.conftest import run_graymatter
from tests.mcp_server.client import connected_http
from tests.mcp_server.conftest import Served

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

HOSTILE_NAME = "\x1b[31mred\x1b]0;pwned\x07 [bold]x[/bold]\u202e" + "A" * 10_240


def _show(store: Path, fact_id: str) -> dict[str, object]:
    done = run_graymatter("show", fact_id, "--dir", str(store), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


async def test_a_client_named_claude_code_writes_as_mcp_claude_code(served: Served) -> None:
    a = served.agent
    async with served.connect(client_name="claude-code") as agent:
        await agent.ok("memory_add", agent_id=a, text="The on-call phone is in the drawer")
        await agent.ok(
            "memory_reflect",
            action="update",
            agent_id=a,
            target="The on-call phone is in the drawer",
            text="The on-call phone is on the shelf",
        )
    with LmdbStore.open(served.store, read_only=True) as store:
        (fact,) = store.list_facts(a)
        feed = [e for e in store.activity() if e.agent_id == a]
    assert fact.source == "mcp:claude-code"
    shown = _show(served.store, fact.id)
    assert shown["fact"]["source"] == "mcp:claude-code"  # type: ignore[index]
    assert len(feed) == 2 and {e.source for e in feed} == {"mcp:claude-code"}
    assert feed[-1].fact_id  # the add names its fact (oldest last: the feed is newest first)


async def test_a_hostile_client_name_is_stored_clipped_and_clean(served: Served) -> None:
    a = served.agent
    async with served.connect(client_name=HOSTILE_NAME) as agent:
        await agent.ok("memory_add", agent_id=a, text="written by a client with a bad name")
    with LmdbStore.open(served.store, read_only=True) as store:
        (fact,) = store.list_facts(a)
        (entry,) = [e for e in store.activity() if e.agent_id == a]
    assert fact.source == entry.source
    assert fact.source is not None and fact.source.startswith("mcp:")
    name = fact.source.removeprefix("mcp:")
    assert 0 < len(name) <= MAX_CLIENT_NAME
    assert all(c.isascii() and c.isprintable() and c not in "[]\x1b" for c in name), name
    done = run_graymatter("show", fact.id, "--dir", str(served.store))
    assert done.returncode == 0 and "\x1b" not in done.stdout
    assert f"source: {fact.source}" in done.stdout


async def test_two_clients_of_one_http_server_are_told_apart(served: Served) -> None:
    if served.transport != "http":
        pytest.skip("one stdio server has exactly one client")
    a = served.agent
    server = served.http_server
    assert server is not None

    async def write_as(name: str) -> None:
        async with connected_http(server.url, server.token, name) as agent:
            for n in range(10):
                await agent.ok("memory_add", agent_id=a, text=f"note {n} from {name}")

    await asyncio.gather(write_as("cursor"), write_as("codex"))  # interleaved on one server
    with LmdbStore.open(served.store, read_only=True) as store:
        facts = store.list_facts(a)
        # the adds; "note 3 from codex" may update "note 2 from codex": review entries
        feed = [e for e in store.activity() if e.agent_id == a and e.action == "add"]
    assert len(facts) == 20
    for fact in facts:
        writer = fact.text.rsplit(" ", 1)[1]
        assert fact.source == f"mcp:{writer}", (fact.text, fact.source)
    assert sorted(e.source for e in feed) == ["mcp:codex"] * 10 + ["mcp:cursor"] * 10
