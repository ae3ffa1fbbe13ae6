"""`served`: each tool test runs once over stdio and once over HTTP. Starting a server
costs seconds, so tests share them: one stdio server per module and client name (kept on
a loop in a thread of its own, `BackgroundAgent`) and one HTTP server for the session.
Every test therefore works on an agent id of its own. A test that needs server options
(`--read-only`, `--agent`) gets a server of its own on the same store."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from tests.mcp_server.client import (
    Agent,
    BackgroundAgent,
    HttpServer,
    connected,
    connected_http,
    start_http,
)


class StdioServers:
    """The module's stdio servers on one store, one per client name, started on first use."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self._agents: dict[str, BackgroundAgent] = {}

    def agent(self, client_name: str) -> BackgroundAgent:
        if client_name not in self._agents:
            self._agents[client_name] = BackgroundAgent(self.store, client_name)
        return self._agents[client_name]

    def close(self) -> None:
        for agent in self._agents.values():
            agent.close()


class Served:
    """Where a test's server keeps its store, the agent id the test owns there, and how to
    connect a client (with server options: a server of their own, on the same store)."""

    def __init__(
        self,
        transport: str,
        store: Path,
        agent: str,
        shared: HttpServer | None = None,
        stdio: StdioServers | None = None,
    ):
        self.transport, self.store, self.agent, self._shared = transport, store, agent, shared
        self._stdio = stdio

    @property
    def http_server(self) -> HttpServer | None:
        """The shared HTTP server (None over stdio), for tests that connect several clients."""
        return self._shared

    def connect(
        self, *options: str, client_name: str = "test-client"
    ) -> AbstractAsyncContextManager[Agent]:
        if self.transport == "stdio":
            if options or self._stdio is None:
                return connected(self.store, *options, client_name=client_name)
            return self._shared_stdio(client_name)
        return self._over_http(options, client_name)

    @asynccontextmanager
    async def _shared_stdio(self, client_name: str) -> AsyncIterator[Agent]:
        assert self._stdio is not None
        yield self._stdio.agent(client_name)

    @asynccontextmanager
    async def _over_http(self, options: tuple[str, ...], client_name: str) -> AsyncIterator[Agent]:
        if not options and self._shared is not None:
            async with connected_http(self._shared.url, self._shared.token, client_name) as a:
                yield a
            return
        server = start_http(self.store, *options)
        try:
            async with connected_http(server.url, server.token, client_name) as agent:
                yield agent
        finally:
            server.stop()


@pytest.fixture(scope="session")
def shared_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    server = start_http(tmp_path_factory.mktemp("shared-http") / "store")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared_stdio_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServers]:
    servers = StdioServers(tmp_path_factory.mktemp("shared-stdio") / "store")
    try:
        yield servers
    finally:
        servers.close()


@pytest.fixture(params=["stdio", "http"])
def served(request: pytest.FixtureRequest) -> Served:
    agent = "agent-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]
    if request.param == "stdio":
        stdio: StdioServers = request.getfixturevalue("shared_stdio_servers")
        return Served("stdio", stdio.store, agent, stdio=stdio)
    shared: HttpServer = request.getfixturevalue("shared_http_server")
    return Served("http", shared.store, agent, shared)
