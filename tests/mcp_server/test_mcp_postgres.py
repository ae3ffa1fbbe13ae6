"""The MCP server over a PostgreSQL store: two servers (two hosts' agents) on one database
see each other's memories; the HTTP server keeps its token on this machine, one per
database; no message holds the database password."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.core.store_url import parse_store_url
from graymatter_tui.mcp.http_guard import TOKEN_FILE
from tests.mcp_server.client import (
    ROOT,
    Agent,
    connected_http,
    connected_with,
    free_port,
    server_env,
)

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def password_of(url: str) -> str:
    return unquote(url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1])


def connected_to(url: str, client_name: str) -> AbstractAsyncContextManager[Agent]:
    """A stdio server on the database, chosen by GRAYMATTER_STORE as a client config would."""
    return connected_with([], client_name, {"GRAYMATTER_STORE": url})


async def test_two_hosts_agents_share_one_database(pg_url: str) -> None:
    async with (
        connected_to(pg_url, "laptop") as laptop,
        connected_to(pg_url, "ci-runner") as runner,
    ):
        await laptop.ok("memory_add", agent_id="team", text="The staging cluster moved to eu-west")
        _, found = await runner.ok("memory_search", agent_id="team", query="staging cluster")
        assert found["facts"] == ["The staging cluster moved to eu-west"]
        await runner.ok("memory_add", agent_id="team", text="Release freeze starts on Thursday")
        _, found = await laptop.ok("memory_search", agent_id="team", query="release freeze")
        assert found["facts"] == ["Release freeze starts on Thursday"]
    with PgStore.open(pg_url) as store:
        sources = {f.text: f.source for f in store.all_facts()}
    assert sources == {  # each write names the host's client that made it
        "The staging cluster moved to eu-west": "mcp:laptop",
        "Release freeze starts on Thursday": "mcp:ci-runner",
    }


async def test_http_server_keeps_its_token_per_database_and_never_prints_the_password(
    pg_url: str, tmp_path: Path
) -> None:
    port = free_port()
    data_dir = tmp_path / "local"
    process = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "mcp", "--store", pg_url, "--dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=server_env(),
    )
    # --store and --dir together are a usage error, with no password.
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "give --store or --dir, not both" in err.decode()
    assert password_of(pg_url) not in err.decode()

    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "graymatter_tui", "mcp", "--store", pg_url),
            *("--http", f"127.0.0.1:{port}"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        # The data dir is this machine's (its token lives there); the store is the server.
        env={**server_env(), "GRAYMATTER_DIR": str(data_dir)},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                await asyncio.sleep(0.1)
        assert process.poll() is None, process.communicate()[1].decode()
        tokens = list((data_dir / "mcp-tokens").glob(f"*/{TOKEN_FILE}"))
        assert len(tokens) == 1 and tokens[0].stat().st_mode & 0o777 == 0o600
        token = tokens[0].read_text().strip()
        async with connected_http(f"http://127.0.0.1:{port}/mcp", token) as agent:
            await agent.ok("memory_add", agent_id="ops", text="Over HTTP into the database")
        with PgStore.open(pg_url) as store:
            assert [f.text for f in store.all_facts()] == ["Over HTTP into the database"]
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    said = err.decode()
    assert parse_store_url(pg_url).redacted in said  # names the database it serves
    assert str(tokens[0]) in said
    assert password_of(pg_url) not in said
