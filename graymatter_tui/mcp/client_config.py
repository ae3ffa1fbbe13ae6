"""The snippet each MCP client needs to start our server: exact, with absolute paths, so
it can be pasted into the client's configuration as it is."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from graymatter_tui.store_url import StoreUrl

CLIENTS = ("claude-code", "claude-desktop", "cursor", "codex")
SERVER_KEY = "graymatter"

# Where each client reads the snippet from, for the line printed above it.
WHERE = {
    "claude-code": ".mcp.json in your project (or run: claude mcp add-json graymatter '<the "
    "graymatter object>')",
    "claude-desktop": "claude_desktop_config.json (Settings → Developer → Edit Config)",
    "cursor": "~/.cursor/mcp.json, or .cursor/mcp.json in a project",
    "codex": "~/.codex/config.toml",
}


def server_command() -> list[str]:
    """The installed `graymatter-tui` by absolute path; else this Python running the module."""
    # The script beside this Python first: the venv this server runs from, even when
    # that venv is not on PATH.
    beside = Path(sys.executable).parent / "graymatter-tui"
    found = str(beside) if beside.is_file() else shutil.which("graymatter-tui")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "graymatter_tui"]


def server_args(location: StoreUrl, agent: str | None) -> list[str]:
    """The server's arguments: an LMDB store by absolute path; a database by its URL
    without the password (the client's ~/.pgpass or PGPASSWORD gives it)."""
    if location.path is not None:
        args = ["mcp", "--dir", str(location.path.absolute())]
    else:
        args = ["mcp", "--store", location.without_password]
    return [*args, "--agent", agent] if agent else args


def snippet(client: str, location: StoreUrl, agent: str | None = None) -> str:
    command, *lead = server_command()
    args = [*lead, *server_args(location, agent)]
    if client == "codex":
        return (
            f"[mcp_servers.{SERVER_KEY}]\n"
            f"command = {_toml_string(command)}\n"
            f"args = [{', '.join(_toml_string(a) for a in args)}]\n"
        )
    server: dict[str, object] = {"command": command, "args": args}
    if client == "claude-code":
        server = {"type": "stdio", **server}
    return json.dumps({"mcpServers": {SERVER_KEY: server}}, indent=2, ensure_ascii=False) + "\n"


def _toml_string(value: str) -> str:
    # A TOML basic string takes JSON's escapes; control characters must be escaped.
    return json.dumps(value, ensure_ascii=False)
