"""ctrl+c (SIGINT) and SIGTERM are how a person or a supervisor stops a server, on stdio
or HTTP: it stops at once, exits 0 with no error and no traceback, and the accesses its
searches recorded in the background are all written first."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.mcp_server.client import ROOT, connected_http, server_env, start_http

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

SEARCHES = 4
STOP_SECONDS = 20  # a stop that waits for the client's next line would never come


def _request(call_id: int, method: str, params: dict[str, object]) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}).encode()
        + b"\n"
    )


def _call(call_id: int, tool: str, **arguments: object) -> bytes:
    return _request(call_id, "tools/call", {"name": tool, "arguments": arguments})


def _read_replies(process: subprocess.Popen[bytes], count: int) -> list[dict[str, object]]:
    """The first `count` lines the server writes, read from its stdout as they come (the
    server stays running: no read may wait for its end)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    received = b""
    deadline = time.monotonic() + 60
    while received.count(b"\n") < count and time.monotonic() < deadline:
        if select.select([fd], [], [], 1)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, "the server ended before answering"
            received += chunk
    lines = received.splitlines()
    assert len(lines) == count, received
    return [json.loads(line) for line in lines]


def _assert_stopped_cleanly(process: subprocess.Popen[bytes], sig: signal.Signals) -> str:
    process.wait(timeout=STOP_SECONDS)
    assert process.stderr is not None
    stderr = process.stderr.read().decode(errors="replace")
    assert process.returncode == 0, stderr
    assert "error" not in stderr.lower() and "Traceback" not in stderr
    assert stderr.splitlines()[-1] == f"graymatter-tui: note: stopped on {sig.name}"
    return stderr


def _access_count(store: Path) -> int:
    with LmdbStore.open(store, read_only=True) as opened:
        (fact,) = opened.list_facts("a")
    return fact.access_count


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_stdio_server_whose_client_is_still_there(
    tmp_path: Path, sig: signal.Signals
) -> None:
    store = tmp_path / "store"
    process = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "mcp", "--dir", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=server_env(),
    )
    try:
        assert process.stdin is not None
        info = {"name": "raw", "version": "0"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
        process.stdin.write(_request(1, "initialize", hello))
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        process.stdin.write(_call(2, "memory_add", agent_id="a", text="The deploy key rotates"))
        for n in range(SEARCHES):
            process.stdin.write(_call(3 + n, "memory_search", agent_id="a", query="deploy key"))
        process.stdin.flush()
        replies = _read_replies(process, 2 + SEARCHES)
        assert all("error" not in reply for reply in replies)
        process.send_signal(sig)  # stdin stays open: the client is still connected
        _assert_stopped_cleanly(process, sig)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _access_count(store) == SEARCHES


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_stops_an_http_server_and_its_accesses_are_written(
    tmp_path: Path, sig: signal.Signals
) -> None:
    server = start_http(tmp_path / "store")
    try:
        async with connected_http(server.url, server.token) as agent:
            await agent.ok("memory_add", agent_id="a", text="The deploy key rotates")
            for _ in range(SEARCHES):
                await agent.ok("memory_search", agent_id="a", query="deploy key")
            server.process.send_signal(sig)  # while this client's session is still open
            _assert_stopped_cleanly(server.process, sig)
    finally:
        server.stop()
    assert _access_count(server.store) == SEARCHES
