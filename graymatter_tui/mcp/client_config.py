"""What an MCP client's entry for our server is, and how each client spells it.

An entry is a small value, the same for every client: `Launch` (the client starts the
server itself: this command, these arguments) or `Remote` (the client reaches a server
already listening: this URL, with the bearer token from this environment variable).
`entry()` builds it from the serving flags; `client_entry()` spells it for one client as
the object that client keeps under the server's name (what gets merged into its own
config file); `snippet()` is the paste-ready text around that object. Paths are
absolute, so a snippet works as it is pasted."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.store_url import StoreUrl
from graymatter_tui.mcp.http_guard import address_text, is_wildcard, url_of

CLIENTS = ("claude-code", "claude-desktop", "cursor", "codex")
SERVER_KEY = "graymatter"
# The variable a client reads the HTTP server's bearer token from: a token never lands
# in a config file that may be committed.
TOKEN_VARIABLE = "GRAYMATTER_MCP_TOKEN"

# Where each client reads the snippet from, for the line printed above it.
WHERE = {
    "claude-code": ".mcp.json in your project (or run: claude mcp add-json graymatter '<the "
    "graymatter object>')",
    "claude-desktop": "claude_desktop_config.json (Settings → Developer → Edit Config)",
    "cursor": "~/.cursor/mcp.json, or .cursor/mcp.json in a project",
    "codex": "~/.codex/config.toml",
}


# Clients whose file belongs to one project (its agent is the project's by default).
PROJECT_CLIENTS = ("claude-code",)


def claude_desktop_config() -> Path:
    """Claude Desktop's config file on this system (`Settings → Developer → Edit Config`)."""
    name = "claude_desktop_config.json"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / name
    if sys.platform == "win32":
        return (
            Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "Claude" / name
        )
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(config) if config else Path.home() / ".config") / "Claude" / name


def config_file(client: str, project: Path | None) -> Path:
    """The file `client` reads its MCP servers from: Claude Code's `.mcp.json` in the
    project (the current directory when none is named); Cursor's project
    `.cursor/mcp.json` when a project is named, else `~/.cursor/mcp.json`; Codex's
    `config.toml` in `$CODEX_HOME` (default `~/.codex`); Claude Desktop's own."""
    if client == "claude-code":
        return (project or Path.cwd()).absolute() / ".mcp.json"
    if client == "cursor":
        if project is not None:
            return project.absolute() / ".cursor" / "mcp.json"
        return Path.home() / ".cursor" / "mcp.json"
    if client == "codex":
        home = os.environ.get("CODEX_HOME", "").strip()
        return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"
    if client == "claude-desktop":
        return claude_desktop_config()
    raise ValueError(f"unknown client {client!r}")


def detected(client: str) -> bool:
    """Whether `client` looks installed for this user (its own directory exists, or for
    Claude Code its command is on PATH)."""
    if client == "claude-code":
        return (Path.home() / ".claude").is_dir() or shutil.which("claude") is not None
    if client == "cursor":
        return (Path.home() / ".cursor").is_dir()
    if client == "codex":
        return config_file("codex", None).parent.is_dir()
    if client == "claude-desktop":
        return claude_desktop_config().parent.is_dir()
    return False


class NotExpressible(InvalidInput):
    """A server that this client's configuration has no way to name."""


@dataclass(frozen=True)
class Serving:
    """How `mcp` is to serve, as its flags say (review "none" is the default, holding
    nothing)."""

    location: StoreUrl
    agent: str | None = None
    read_only: bool = False
    review: str = "none"
    bind: tuple[str, int] | None = None
    allow_remote: bool = False

    def args(self) -> list[str]:
        """`mcp` and the flags that start this server: an LMDB store by absolute path; a
        database by its URL without the password (~/.pgpass or PGPASSWORD gives it)."""
        if self.location.path is not None:
            args = ["mcp", "--dir", str(self.location.path.absolute())]
        else:
            args = ["mcp", "--store", self.location.without_password]
        if self.agent:
            args += ["--agent", self.agent]
        if self.read_only:
            args.append("--read-only")
        if self.review != "none":
            args += ["--review", self.review]
        if self.bind is not None:
            args += ["--http", address_text(*self.bind)]
        if self.allow_remote:
            args.append("--allow-remote")
        return args


@dataclass(frozen=True)
class Launch:
    """A server the client starts itself, speaking MCP on its stdin and stdout."""

    command: str
    args: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


@dataclass(frozen=True)
class Remote:
    """A server already listening, reached at `url` with `Authorization: Bearer <token>`,
    the token read from the environment variable `token_variable`. `server` is how a
    person starts that server (the client does not)."""

    url: str
    token_variable: str
    server: Launch


Entry = Launch | Remote


def server_command() -> list[str]:
    """The installed `graymatter-tui` by absolute path; else this Python running the module."""
    # The script beside this Python first: the venv this server runs from, even when
    # that venv is not on PATH.
    beside = Path(sys.executable).parent / "graymatter-tui"
    found = str(beside) if beside.is_file() else shutil.which("graymatter-tui")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "graymatter_tui"]


def entry(serving: Serving) -> Entry:
    """The entry for a server started with `serving`'s flags: over stdio, the client
    starts it; with --http, the client connects to it."""
    command, *lead = server_command()
    launch = Launch(command, (*lead, *serving.args()))
    if serving.bind is None:
        return launch
    host, port = serving.bind
    if is_wildcard(host):
        raise NotExpressible(
            f"--http {host} listens on every address, so it names none a client can "
            "connect to; give this machine's address or name (with --allow-remote)"
        )
    return Remote(url_of(host, port), TOKEN_VARIABLE, server=launch)


def client_entry(client: str, wired: Entry) -> dict[str, object]:
    """`wired` as `client` spells it: the object its config keeps under our server's name."""
    if isinstance(wired, Launch):
        server: dict[str, object] = {"command": wired.command, "args": list(wired.args)}
        return {"type": "stdio", **server} if client == "claude-code" else server
    if client == "claude-code":  # .mcp.json expands ${VAR} in url and headers
        bearer = {"Authorization": f"Bearer ${{{wired.token_variable}}}"}
        return {"type": "http", "url": wired.url, "headers": bearer}
    if client == "cursor":  # mcp.json expands ${env:VAR} in url and headers
        bearer = {"Authorization": f"Bearer ${{env:{wired.token_variable}}}"}
        return {"url": wired.url, "headers": bearer}
    if client == "codex":  # streamable HTTP; Codex sends the variable's value as the bearer
        return {"url": wired.url, "bearer_token_env_var": wired.token_variable}
    if client == "claude-desktop":
        raise NotExpressible(
            "claude-desktop's config file takes only servers it starts itself (stdio), not "
            "a URL: leave out --http and Claude Desktop starts the server"
        )
    raise ValueError(f"unknown client {client!r}")


def snippet(client: str, wired: Entry) -> str:
    """The text to paste into `client`'s configuration: JSON, or a TOML table for Codex."""
    server = client_entry(client, wired)
    if client == "codex":
        lines = [f"{key} = {_toml_value(value)}\n" for key, value in server.items()]
        return f"[mcp_servers.{SERVER_KEY}]\n" + "".join(lines)
    return json.dumps({"mcpServers": {SERVER_KEY: server}}, indent=2, ensure_ascii=False) + "\n"


def _toml_value(value: object) -> str:
    if isinstance(value, list):
        return f"[{', '.join(_toml_string(str(item)) for item in value)}]"
    return _toml_string(str(value))


def _toml_string(value: str) -> str:
    # A TOML basic string takes JSON's escapes; control characters must be escaped.
    return json.dumps(value, ensure_ascii=False)
