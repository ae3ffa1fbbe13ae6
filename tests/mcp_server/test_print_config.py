"""`mcp --print-config CLIENT`: a snippet that works when pasted, for each client."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.mcp.client_config import CLIENTS
from graymatter_tui.mcp.http_guard import TOKEN_FILE
from tests.conftest import invoke_graymatter
from tests.mcp_server.client import ROOT, free_port, server_env

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def _print_config(client: str, data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """In this process (the real `main()`): printing starts no server. The tests that
    start what was printed run it as a client would."""
    return invoke_graymatter("mcp", "--print-config", client, "--dir", str(data_dir), *extra)


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
    with LmdbStore.open(data_dir, read_only=True) as store:
        assert [f.text for f in store.list_facts("a")] == ["wired up"]


def test_an_unknown_client_is_refused_with_the_list(tmp_path: Path) -> None:
    done = _print_config("vscode", tmp_path)
    assert done.returncode == 2
    assert all(name in done.stderr for name in CLIENTS)


SERVING_FLAGS = [
    (("--read-only",), ["--read-only"]),
    (("--review", "curation"), ["--review", "curation"]),
    (("--review", "all", "--agent", "ops"), ["--agent", "ops", "--review", "all"]),
    (("--read-only", "--review", "curation"), ["--read-only", "--review", "curation"]),
    (("--review", "off"), []),  # the default is not written
    (("--allow-remote",), ["--allow-remote"]),
]


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("flags", "carried"), SERVING_FLAGS)
def test_every_serving_flag_is_carried_into_the_stdio_snippet(
    tmp_path: Path, client: str, flags: tuple[str, ...], carried: list[str]
) -> None:
    done = _print_config(client, tmp_path / "s", *flags)
    assert done.returncode == 0, done.stderr
    args = _server_entry(client, done.stdout)["args"]
    assert args[args.index("mcp") :] == ["mcp", "--dir", str(tmp_path / "s"), *carried]


async def test_a_read_only_snippet_starts_a_server_that_refuses_writes(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    with LmdbStore.open(data_dir) as store:
        store.put("a", "kept as it is")
    done = _print_config("cursor", data_dir, "--read-only", "--review", "curation")
    entry = _server_entry("cursor", done.stdout)
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=server_env(), cwd=str(ROOT)
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("memory_add", {"agent_id": "a", "text": "sneaked in"})
        assert result.is_error and "read-only" in str(result.content)
    with LmdbStore.open(data_dir, read_only=True) as store:
        assert [f.text for f in store.list_facts("a")] == ["kept as it is"]


HTTP_ENTRIES = {
    "claude-code": lambda url: {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer ${GRAYMATTER_MCP_TOKEN}"},
    },
    "cursor": lambda url: {
        "url": url,
        "headers": {"Authorization": "Bearer ${env:GRAYMATTER_MCP_TOKEN}"},
    },
    "codex": lambda url: {"url": url, "bearer_token_env_var": "GRAYMATTER_MCP_TOKEN"},
}


@pytest.mark.parametrize("client", sorted(HTTP_ENTRIES))
@pytest.mark.parametrize(
    ("bind", "url"),
    [
        ("127.0.0.1:8765", "http://127.0.0.1:8765/mcp"),
        ("[::1]:8765", "http://[::1]:8765/mcp"),
        ("localhost:9000", "http://localhost:9000/mcp"),
    ],
)
def test_with_http_each_client_gets_the_url_and_the_token_from_the_environment(
    tmp_path: Path, client: str, bind: str, url: str
) -> None:
    data_dir = tmp_path / "store"
    done = _print_config(client, data_dir, "--http", bind, "--read-only")
    assert done.returncode == 0, done.stderr
    assert _server_entry(client, done.stdout) == HTTP_ENTRIES[client](url)
    assert str(data_dir / TOKEN_FILE) in done.stderr and "GRAYMATTER_MCP_TOKEN" in done.stderr
    start = _server_start_command(done.stderr)
    assert start[start.index("mcp") :] == [
        *("mcp", "--dir", str(data_dir), "--read-only", "--http", bind)
    ]
    assert not data_dir.exists()  # nothing made, not even the token


def _server_start_command(stderr: str) -> list[str]:
    lead = "start the server the client connects to: "
    (line,) = [line for line in stderr.splitlines() if lead in line]
    return shlex.split(line.split(lead, 1)[1])


@pytest.mark.parametrize("client", ["claude-code", "codex"])
async def test_the_http_snippet_and_the_start_command_work_together(
    tmp_path: Path, client: str
) -> None:
    """The server started by the printed command, reached at the snippet's URL with the
    header the snippet makes from $GRAYMATTER_MCP_TOKEN, holds writes as it was told."""
    data_dir = tmp_path / "store"
    port = free_port()
    done = _print_config(client, data_dir, "--http", f"127.0.0.1:{port}", "--review", "all")
    entry = _server_entry(client, done.stdout)
    server = subprocess.Popen(
        _server_start_command(done.stderr),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=ROOT,
    )
    try:
        _wait_healthy(port, server)
        token = (data_dir / TOKEN_FILE).read_text().strip()
        environment = {"GRAYMATTER_MCP_TOKEN": token}
        if client == "codex":
            header = f"Bearer {environment[entry['bearer_token_env_var']]}"
        else:  # what Claude Code makes of ${VAR}
            header = entry["headers"]["Authorization"].replace(
                "${GRAYMATTER_MCP_TOKEN}", environment["GRAYMATTER_MCP_TOKEN"]
            )
        async with (
            httpx2.AsyncClient(headers={"Authorization": header}, timeout=60) as http,
            streamable_http_client(entry["url"], http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("memory_add", {"agent_id": "a", "text": "wait"})
            assert not result.is_error and "held for review" in str(result.content)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    with LmdbStore.open(data_dir, read_only=True) as store:
        assert store.list_facts("a") == []  # held, not written


def _wait_healthy(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(server.communicate(timeout=30)[1].decode(errors="replace"))


@pytest.mark.parametrize(
    ("client", "flags", "says"),
    [
        ("claude-desktop", ("--http", "127.0.0.1:8765"), "only servers it starts itself"),
        ("cursor", ("--http", "0.0.0.0:8765", "--allow-remote"), "every address"),
        ("codex", ("--http", "[::]:8765", "--allow-remote"), "every address"),
    ],
)
def test_what_a_client_cannot_be_told_is_refused_in_one_line(
    tmp_path: Path, client: str, flags: tuple[str, ...], says: str
) -> None:
    done = _print_config(client, tmp_path / "s", *flags)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("graymatter-tui: error: ") and says in line


def test_a_database_served_over_http_names_its_token_file_and_creates_nothing(
    tmp_path: Path,
) -> None:
    url = "postgresql://u:pw-Secret7@db.example:5432/memory"
    env = {**server_env(), "GRAYMATTER_DIR": str(tmp_path / "local")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "graymatter_tui", "mcp", "--print-config", "codex"),
            *("--store", url, "--http", "127.0.0.1:8765"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "pw-Secret7" not in done.stdout + done.stderr
    assert str(tmp_path / "local" / "mcp-tokens") in done.stderr
    start = _server_start_command(done.stderr)
    assert start[start.index("mcp") :] == [
        *("mcp", "--store", "postgresql://u@db.example:5432/memory", "--http", "127.0.0.1:8765")
    ]
    assert not (tmp_path / "local").exists()
