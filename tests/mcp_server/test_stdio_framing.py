"""What arrives on stdin is not always a well-formed conversation: garbage lines, a frame
cut off mid-way, a client that goes away. The store stays consistent and the server ends
cleanly when its stdin closes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.mcp_server.client import ROOT
from tests.support.suite_env import TEST_DEFAULTS

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def _frame(payload: dict[str, object]) -> bytes:
    return json.dumps(payload).encode() + b"\n"


INITIALIZE = _frame(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
) + _frame({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _add(call_id: int, text: str) -> bytes:
    return _frame(
        {
            "jsonrpc": "2.0",
            "id": call_id,
            "method": "tools/call",
            "params": {"name": "memory_add", "arguments": {"agent_id": "a", "text": text}},
        }
    )


def _serve(store: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_")}
    env.update(TEST_DEFAULTS)
    return subprocess.run(
        [sys.executable, "-m", "graymatter_tui", "mcp", "--dir", str(store)],
        input=stdin,
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_garbage_and_a_cut_frame_change_nothing_and_the_server_exits_cleanly(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    stdin = (
        b"this is not json\n\xff\xfe binary\n"
        + INITIALIZE
        + _add(2, "kept")
        + b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_'
        + b'add", "argu'
    )
    done = _serve(store, stdin)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    # stdout is the protocol: every line on it is a JSON-RPC message.
    assert all(reply.get("jsonrpc") == "2.0" for reply in replies)
    assert any(reply.get("id") == 2 and not reply["result"]["isError"] for reply in replies)
    with LmdbStore.open(store, read_only=True) as opened:
        assert [f.text for f in opened.list_facts("a")] == ["kept"]


def test_a_client_that_leaves_mid_stream_leaves_a_whole_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    stdin = INITIALIZE + b"".join(_add(n, f"fact {n}") for n in range(2, 52))
    done = _serve(store, stdin)  # stdin closes right after the last call is sent
    assert done.returncode == 0
    answered = {json.loads(line).get("id") for line in done.stdout.splitlines() if line.strip()}
    with LmdbStore.open(store, read_only=True) as opened:
        texts = {f.text for f in opened.list_facts("a")}
    # A request sent before the client closed stdin is still answered: the server waits
    # for every request in flight before it stops (the SDK alone cancels them at EOF).
    assert set(range(2, 52)) <= answered
    assert texts == {f"fact {n}" for n in range(2, 52)}
