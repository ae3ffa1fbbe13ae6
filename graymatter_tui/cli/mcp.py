"""`mcp`: serve the store to agents over the Model Context Protocol."""

from __future__ import annotations

from pathlib import Path

import click

from graymatter_tui.cli.common import settings_for
from graymatter_tui.cli.output import note
from graymatter_tui.store import Store
from graymatter_tui.textsafe import validate_agent


@click.command(name="mcp")
@click.option(
    "--dir",
    "data_dir",
    type=click.Path(path_type=Path, readable=False),
    default=None,
    help="Data directory (default: $GRAYMATTER_DIR, else the user data dir).",
)
@click.option("--agent", default=None, help="Agent id for calls that give none.")
@click.option("--read-only", is_flag=True, help="Answer searches; refuse every write.")
def mcp(data_dir: Path | None, agent: str | None, read_only: bool) -> None:
    """Serve upstream GrayMatter's memory tools over MCP on stdio (stdout is the protocol)."""
    from graymatter_tui.mcp.memory_tools import Session
    from graymatter_tui.mcp.server import serve_stdio

    if agent is not None:
        validate_agent(agent)
    store = Store.open(settings_for(data_dir).data_dir, read_only=read_only)
    note(f"serving {store.path} over MCP on stdio" + (" (read-only)" if read_only else ""))
    with store:
        serve_stdio(Session(store, read_only=read_only, default_agent=agent))
