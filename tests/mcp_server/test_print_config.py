"""`mcp --print-config CLIENT`: a snippet that works when pasted, for each client."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from graymatter_tui.mcp.client_config import CLIENTS
from graymatter_tui.store import Store
from tests.mcp_server.client import ROOT, run_mcp, server_env

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def _print_config(client: str, data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_mcp("--print-config", client, "--dir", str(data_dir), *extra)


def _server_entry(client: str, stdout: str) -> dict[str, Any]:
    if client == "codex":
        return dict(tomllib.loads(stdout)["mcp_servers"]["graymatter"])
    return dict(json.loads(stdout)["mcpServers"]["graymatter"])


@pytest.mark.parametrize("client", CLIENTS)
def test_each_snippet_parses_names_absolute_paths_and_creates_nothing(
    tmp_path: Path, client: str
) -> None:
    data_dir = tmp_path / "memory store"
    done = _print_config(client, data_dir, "--agent", 'ops "west"')
    assert done.returncode == 0, done.stderr
    entry = _server_entry(client, done.stdout)
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-5:] == ["mcp", "--dir", str(data_dir), "--agent", 'ops "west"']
    assert ("type" in entry) == (client == "claude-code")
    assert "paste this into" in done.stderr
    assert not data_dir.exists()


async def test_the_printed_command_serves_the_store(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    entry = _server_entry("claude-desktop", _print_config("claude-desktop", data_dir).stdout)
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=server_env(), cwd=str(ROOT)
    )
    info = types.Implementation(name="claude-desktop", version="1")
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()
        result = await session.call_tool("memory_add", {"agent_id": "a", "text": "wired up"})
        assert not result.is_error
    with Store.open(data_dir, read_only=True) as store:
        assert [f.text for f in store.list_facts("a")] == ["wired up"]


def test_an_unknown_client_is_refused_with_the_list(tmp_path: Path) -> None:
    done = _print_config("vscode", tmp_path)
    assert done.returncode == 2
    assert all(name in done.stderr for name in CLIENTS)
