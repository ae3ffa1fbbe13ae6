"""One store, one agent, two ways in: an MCP client over stdio (the server started as
`init` wires it) and the hooks. Each sees what the other wrote, and the Activity feed
(`graymatter-tui activity`) tells them apart by source."""

from __future__ import annotations

import json
import sys

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.hooks.conftest import ROOT, Hook, run_cli


async def test_tools_and_hooks_share_one_memory_and_the_feed_names_both(hook: Hook) -> None:
    assert (
        run_cli(hook, "init", "--client", "claude-code", "--dir", str(hook.store)).returncode == 0
    )
    server = json.loads((hook.project / ".mcp.json").read_text())["mcpServers"]["graymatter"]
    agent = server["args"][server["args"].index("--agent") + 1]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graymatter_tui", *server["args"]],
        env=hook.env(),
        cwd=str(ROOT),
    )
    info = types.Implementation(name="claude-code", version="2.1")
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        briefing = (await session.initialize()).instructions or ""
        assert f'agent_id "{agent}"' in briefing
        added = await session.call_tool(
            "memory_add", {"agent_id": agent, "text": "The ledgerd service renders invoices"}
        )
        assert not added.is_error

        # The hook, in the same project, recalls what the tool stored...
        start = hook.send("SessionStart", source="startup")
        assert f'agent "{agent}"' in start.context
        recalled = hook.prompt("why does ledgerd render invoices twice?")
        assert "The ledgerd service renders invoices" in recalled.context
        # ...and stores a remember line the tool then finds.
        hook.prompt("remember: ledgerd retries failed renders after 30 seconds")
        found = await session.call_tool(
            "memory_search", {"agent_id": agent, "query": "ledgerd retries"}
        )
        assert not found.is_error
        assert found.structured_content is not None
        assert (
            "ledgerd retries failed renders after 30 seconds" in found.structured_content["facts"]
        )
    feed = run_cli(hook, "activity", "--dir", str(hook.store), "--json")
    assert feed.returncode == 0, feed.stderr
    entries = json.loads(feed.stdout)
    adds = [(e["source"], e["agent_id"], e["text"]) for e in entries if e["action"] == "add"]
    assert ("mcp:claude-code", agent, "The ledgerd service renders invoices") in adds
    assert ("hook:claude-code", agent, "ledgerd retries failed renders after 30 seconds") in adds
    only_hooks = run_cli(hook, "activity", "--dir", str(hook.store), "--source", "hook", "--json")
    sources = {e["source"] for e in json.loads(only_hooks.stdout)}
    assert sources == {"hook:claude-code"}
