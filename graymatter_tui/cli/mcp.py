"""`mcp`: serve the store to agents over the Model Context Protocol."""

from __future__ import annotations

from pathlib import Path

import click

from graymatter_tui.cli.common import dir_option, settings_for, store_option
from graymatter_tui.cli.output import note
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.cli.progress import open_upgrading
from graymatter_tui.errors import InvalidInput
from graymatter_tui.mcp.client_config import CLIENTS, WHERE, snippet
from graymatter_tui.mcp.http_guard import parse_bind
from graymatter_tui.mcp.tools import REVIEW_MODES
from graymatter_tui.textsafe import validate_agent


def _bind_form(value: str) -> str:
    """HOST:PORT as given, once its form is checked (where it may listen is checked with
    --allow-remote in hand)."""
    parse_bind(value, allow_remote=True)
    return value


@click.command(name="mcp")
@dir_option()
@store_option
@click.option(
    "--agent",
    default=None,
    callback=checked_by(validate_agent),
    help="Agent id for calls that give none.",
)
@click.option("--read-only", is_flag=True, help="Answer searches; refuse every write.")
@click.option(
    "--review",
    type=click.Choice(("off", *REVIEW_MODES)),
    default="off",
    show_default=True,
    help="Hold agents' writes for a person: curation (update/forget/pin/unpin) or all "
    "(add too); off (or none) holds nothing. See `graymatter-tui review`.",
)
@click.option(
    "--http",
    "bind",
    metavar="HOST:PORT",
    default=None,
    callback=checked_by(_bind_form),
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (bearer token).",
)
@click.option("--allow-remote", is_flag=True, help="Let --http listen on a non-loopback address.")
@click.option(
    "--print-config",
    "client",
    type=click.Choice(CLIENTS),
    default=None,
    help="Print the snippet that wires this server into CLIENT, and exit.",
)
def mcp(
    data_dir: Path | None,
    agent: str | None,
    read_only: bool,
    review: str,
    bind: str | None,
    allow_remote: bool,
    client: str | None,
) -> None:
    """Serve upstream GrayMatter's memory tools over MCP: on stdio (stdout is the
    protocol), or with --http on HTTP, where every request needs the bearer token kept in
    the data dir's mcp-token file."""
    from graymatter_tui.embedding import background
    from graymatter_tui.embedding.query import from_env
    from graymatter_tui.mcp.http_guard import TOKEN_FILE, load_or_create_token, token_dir
    from graymatter_tui.mcp.memory_tools import Session
    from graymatter_tui.mcp.server import serve_http, serve_stdio

    if client is not None:
        note(f"paste this into {WHERE[client]}")
        settings = settings_for(data_dir)
        click.echo(snippet(client, settings.location, agent), nl=False)
        if settings.location.path is None:
            note(
                "the snippet names the database without its password: give it in "
                "~/.pgpass or PGPASSWORD in the client's environment"
            )
        return
    review = "none" if review == "off" else review  # DESIGN.md names it off; 0.4.0 none
    try:
        where = parse_bind(bind, allow_remote=allow_remote) if bind is not None else None
    except InvalidInput as exc:  # a non-loopback address without --allow-remote
        raise usage_error(str(exc)) from None
    settings = settings_for(data_dir)
    store = open_upgrading(settings, read_only=read_only)
    mode = " (read-only)" if read_only else ""
    if review != "none" and not read_only:
        mode = f" (holding {review} writes for review)"
    with store, background.running(store) as embedder:
        if embedder is not None:
            note(f"embedding new facts in the background with {embedder.model}")
        session = Session(
            store,
            read_only=read_only,
            default_agent=agent,
            review=review,
            vectors=from_env(store, cache=True),  # a server answers many queries
        )
        if where is None:
            note(f"serving {store.location} over MCP on stdio{mode}")
            serve_stdio(session)
            return
        token_home = token_dir(settings.location, settings.data_dir)
        token = load_or_create_token(token_home)
        host, port = where
        shown = f"[{host}]" if ":" in host else host
        note(
            f"serving {store.location} over MCP at http://{shown}:{port}/mcp{mode}; "
            f"the bearer token is in {token_home / TOKEN_FILE}"
        )
        serve_http(session, host, port, token)
