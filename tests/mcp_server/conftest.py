"""`served`: each tool test runs once over stdio and once over HTTP. Stdio starts a server
per connection on the test's own store; HTTP shares one server (one store) for the whole
session, which is much faster, so every test works on an agent id of its own."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from tests.mcp_server.client import Agent, HttpServer, connected, connected_http, start_http


class Served:
    """Where a test's server keeps its store, the agent id the test owns there, and how to
    connect a client (with server options: a server of their own, on the same store)."""

    def __init__(self, transport: str, store: Path, agent: str, shared: HttpServer | None):
        self.transport, self.store, self.agent, self._shared = transport, store, agent, shared

    @property
    def http_server(self) -> HttpServer | None:
        """The shared HTTP server (None over stdio), for tests that connect several clients."""
        return self._shared

    def connect(
        self, *options: str, client_name: str = "test-client"
    ) -> AbstractAsyncContextManager[Agent]:
        if self.transport == "stdio":
            return connected(self.store, *options, client_name=client_name)
        return self._over_http(options, client_name)

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


@pytest.fixture(params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    agent = "agent-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]
    if request.param == "stdio":
        return Served("stdio", tmp_path / "store", agent, None)
    shared: HttpServer = request.getfixturevalue("shared_http_server")
    return Served("http", shared.store, agent, shared)
