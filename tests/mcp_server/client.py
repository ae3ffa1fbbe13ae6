"""Driving `graymatter-tui mcp` the way agents do: the official SDK client, talking to the
server in a subprocess over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]


class Agent:
    """One connected client, with results unpacked for assertions."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> types.CallToolResult:
        return await self.session.call_tool(tool, arguments)

    async def ok(self, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
        result = await self.call(tool, **arguments)
        assert not result.is_error, text_of(result)
        assert result.structured_content is not None
        return text_of(result), dict(result.structured_content)

    async def error(self, tool: str, **arguments: Any) -> str:
        result = await self.call(tool, **arguments)
        assert result.is_error, text_of(result)
        return text_of(result)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_mcp(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m graymatter_tui mcp ARGS` from the checkout, run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "graymatter_tui", "mcp", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=server_env(),
        timeout=60,
        check=False,
    )


@asynccontextmanager
async def connected_http(
    url: str, token: str, client_name: str = "http-client"
) -> AsyncIterator[Agent]:
    headers = {"Authorization": f"Bearer {token}"}
    info = types.Implementation(name=client_name, version="1.0")
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()
        yield Agent(session)


@asynccontextmanager
async def connected(
    data_dir: Path, *options: str, client_name: str = "test-client"
) -> AsyncIterator[Agent]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graymatter_tui", "mcp", "--dir", str(data_dir), *options],
        env=server_env(),
        cwd=str(ROOT),
    )
    info = types.Implementation(name=client_name, version="1.0")
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()
        yield Agent(session)
