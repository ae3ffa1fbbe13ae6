"""Driving `graymatter-tui mcp` the way agents do: the official SDK client, talking to the
server in a subprocess over stdio."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from graymatter_tui.mcp.http_guard import TOKEN_FILE
from tests.support.suite_env import TEST_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


class Agent:
    """One connected client, with results unpacked for assertions."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> types.CallToolResult:
        return await self.session.call_tool(tool, arguments)

    async def list_tools(self) -> list[types.Tool]:
        return (await self.session.list_tools()).tools

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
    env.update(TEST_DEFAULTS)
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
    async with connected_with(["--dir", str(data_dir), *options], client_name) as agent:
        yield agent


@asynccontextmanager
async def connected_with(
    args: list[str], client_name: str, env: dict[str, str] | None = None
) -> AsyncIterator[Agent]:
    """A stdio server started with `mcp ARGS` (and `env` added to its environment)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graymatter_tui", "mcp", *args],
        env={**server_env(), **(env or {})},
        cwd=str(ROOT),
    )
    info = types.Implementation(name=client_name, version="1.0")
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()
        yield Agent(session)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """`graymatter-tui mcp --http` in a subprocess, answering /healthz."""

    def __init__(self, store: Path, port: int, process: subprocess.Popen[bytes]) -> None:
        self.store, self.port, self.process = store, port, process
        self.url = f"http://127.0.0.1:{port}/mcp"

    @property
    def token(self) -> str:
        return (self.store / TOKEN_FILE).read_text().strip()

    def stderr(self) -> str:
        self.process.terminate()
        _, err = self.process.communicate(timeout=30)
        return err.decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=30)


def start_http(store: Path, *options: str) -> HttpServer:
    """Start a server on a free loopback port and wait until it answers (or fail with its
    stderr)."""
    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "graymatter_tui", "mcp", "--dir", str(store)),
            *("--http", f"127.0.0.1:{port}", *options),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=server_env(),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return HttpServer(store, port, process)
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(process.communicate()[1].decode(errors="replace"))


class BackgroundAgent(Agent):
    """One stdio server and its SDK session, kept open on an event loop in a thread of its
    own, so that the tests of a module (each on a loop of its own) can share it: starting
    a server costs seconds, a call milliseconds. The session's streams and task groups stay
    on their loop; a test's call is handed over and its result handed back."""

    def __init__(self, data_dir: Path, client_name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        ready: asyncio.Future[ClientSession] | None = None
        stop: asyncio.Event | None = None

        async def serve() -> None:
            async with connected(data_dir, client_name=client_name) as agent:
                assert ready is not None and stop is not None
                ready.set_result(agent.session)
                await stop.wait()

        async def start() -> ClientSession:
            nonlocal ready, stop
            ready, stop = self._loop.create_future(), asyncio.Event()
            self._stop = stop
            self._main = self._loop.create_task(serve())
            await asyncio.wait({ready, self._main}, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done():
                self._main.result()  # the server never came up: raise why
            return ready.result()

        session = asyncio.run_coroutine_threadsafe(start(), self._loop).result(timeout=120)
        super().__init__(session)

    async def call(self, tool: str, **arguments: Any) -> types.CallToolResult:
        handed = asyncio.run_coroutine_threadsafe(
            self.session.call_tool(tool, arguments), self._loop
        )
        return await asyncio.wrap_future(handed)

    async def list_tools(self) -> list[types.Tool]:
        handed = asyncio.run_coroutine_threadsafe(self.session.list_tools(), self._loop)
        return (await asyncio.wrap_future(handed)).tools

    def close(self) -> None:
        """End the session (the server exits when its stdin closes) and the thread."""

        async def finished() -> None:
            self._stop.set()
            await self._main

        asyncio.run_coroutine_threadsafe(finished(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
