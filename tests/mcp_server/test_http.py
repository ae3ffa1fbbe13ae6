"""The HTTP transport: the SDK's client over 127.0.0.1 with the bearer token, and every
way in without it refused."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import InvalidInput, StoreError
from graymatter_tui.mcp.http_guard import (
    MAX_BODY_BYTES,
    TOKEN_FILE,
    load_or_create_token,
    parse_bind,
)
from tests.mcp_server.client import HttpServer, connected_http, run_mcp, start_http

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = start_http(tmp_path / "store")
    try:
        yield server
    finally:
        server.stop()


async def test_the_sdk_client_adds_and_searches_over_http(http_server: HttpServer) -> None:
    async with connected_http(http_server.url, http_server.token) as agent:
        text, structured = await agent.ok("memory_add", agent_id="a", text="The VPN needs MFA")
        assert text == 'Memory stored for agent "a".'
        _, structured = await agent.ok("memory_search", agent_id="a", query="vpn mfa")
        assert structured["facts"] == ["The VPN needs MFA"]
        error = await agent.error("memory_search", agent_id="a")
        assert "query is required" in error


def test_the_token_file_is_private(http_server: HttpServer) -> None:
    mode = (http_server.store / TOKEN_FILE).stat().st_mode & 0o777
    assert mode == 0o600
    assert len(http_server.token) >= 32


def test_without_the_right_token_nothing_gets_through_and_nothing_is_logged(
    http_server: HttpServer,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    token = http_server.token
    attempts = [
        httpx.post(http_server.url, json=body),
        httpx.post(http_server.url, json=body, headers={"Authorization": "Bearer wrong"}),
        httpx.post(http_server.url, json=body, headers={"Authorization": token}),
        httpx.post(f"{http_server.url}?token={token}", json=body),
        httpx.post(f"{http_server.url}?access_token={token}", json=body),
    ]
    assert [r.status_code for r in attempts] == [401] * len(attempts)
    assert all(token not in r.text for r in attempts)
    assert httpx.get(f"http://127.0.0.1:{http_server.port}/healthz").json() == {"status": "ok"}
    assert token not in http_server.stderr()


def test_a_body_over_the_limit_is_413(http_server: HttpServer) -> None:
    headers = {"Authorization": f"Bearer {http_server.token}", "Content-Type": "application/json"}
    big = b"[" + b" " * (MAX_BODY_BYTES + 1) + b"]"
    assert httpx.post(http_server.url, content=big, headers=headers).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    assert httpx.post(http_server.url, content=chunks(), headers=headers).status_code == 413
    with LmdbStore.open(http_server.store, read_only=True) as store:
        assert store.list_facts(None) == []


def test_a_non_loopback_bind_is_refused_at_start(tmp_path: Path) -> None:
    done = run_mcp("--dir", str(tmp_path / "s"), "--http", "0.0.0.0:8765")
    assert done.returncode == 2  # a usage error: the flags as given are refused
    assert "not a loopback address" in done.stderr and "--allow-remote" in done.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was created


@pytest.mark.parametrize("bind", ["192.0.2.1:8765", "example.com:80", "[2001:db8::1]:80"])
def test_only_loopback_without_allow_remote(bind: str) -> None:
    with pytest.raises(InvalidInput, match="not a loopback address"):
        parse_bind(bind, allow_remote=False)
    assert parse_bind(bind, allow_remote=True)[1] in (8765, 80)


@pytest.mark.parametrize("bind", ["127.0.0.1:8765", "localhost:1", "[::1]:443"])
def test_loopback_binds_are_taken(bind: str) -> None:
    host, port = parse_bind(bind, allow_remote=False)
    assert host in ("127.0.0.1", "localhost", "::1") and port > 0


@pytest.mark.parametrize(
    "bind", ["8765", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", ":80", "a:b"]
)
def test_a_malformed_bind_is_refused(bind: str) -> None:
    with pytest.raises(InvalidInput, match="HOST:PORT"):
        parse_bind(bind, allow_remote=True)


def test_a_token_file_that_is_not_a_private_regular_file_is_refused(tmp_path: Path) -> None:
    first = load_or_create_token(tmp_path)
    assert load_or_create_token(tmp_path) == first  # made once, then reused
    token = tmp_path / TOKEN_FILE
    token.chmod(0o644)
    with pytest.raises(StoreError, match="other users"):
        load_or_create_token(tmp_path)
    token.unlink()
    os.mkfifo(token)
    with pytest.raises(StoreError, match="not a regular file"):
        load_or_create_token(tmp_path)  # refused at once, not blocked on the FIFO
    token.unlink()
    (tmp_path / "elsewhere").write_text("x" * 40)
    token.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StoreError, match="cannot read"):
        load_or_create_token(tmp_path)
    assert (tmp_path / "elsewhere").read_text() == "x" * 40  # the link's target untouched


def test_a_port_in_use_is_one_line_naming_the_address_and_nothing_is_announced(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_mcp("--dir", str(tmp_path / "s"), "--http", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"graymatter-tui: error: cannot listen on 127.0.0.1:{port}: address already in use"
    ]
    assert not (tmp_path / "s").exists()  # refused before the store or the token was made
