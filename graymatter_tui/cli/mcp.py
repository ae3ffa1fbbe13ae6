"""`mcp`: serve the store to agents over the Model Context Protocol."""

from __future__ import annotations

import gc
import os
import shlex
import signal
import socket
import sys
from pathlib import Path

import click

from graymatter_tui.cli.common import dir_option, settings_for, store_option
from graymatter_tui.cli.output import fail, note
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.cli.progress import open_upgrading
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.review_modes import REVIEW_MODES
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.mcp.client_config import (
    CLIENTS,
    WHERE,
    NotExpressible,
    Remote,
    Serving,
    entry,
    snippet,
)
from graymatter_tui.mcp.http_guard import parse_bind


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
    help="Print the snippet that wires this server, with every flag given, into CLIENT, "
    "and exit (with --http: the URL, and the token from $GRAYMATTER_MCP_TOKEN).",
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
    the data dir's mcp-token file. ctrl+c or SIGTERM stops the server (exit 0)."""
    from graymatter_tui.mcp.http_guard import listen

    review = "none" if review == "off" else review  # DESIGN.md names it off; 0.4.0 none
    try:
        where = parse_bind(bind, allow_remote=allow_remote) if bind is not None else None
    except InvalidInput as exc:  # a non-loopback address without --allow-remote
        raise usage_error(str(exc)) from None
    if client is not None:
        settings = settings_for(data_dir)
        serving = Serving(settings.location, agent, read_only, review, where, allow_remote)
        _print_config(client, serving, settings)
        return
    # Bound before anything is created or announced: a port in use is one line, exit 1.
    listening = listen(*where) if where is not None else None
    try:
        stopped_by = _serve(data_dir, agent, read_only, review, where, listening)
    finally:
        for sock in listening or []:
            sock.close()
    if stopped_by is not None:
        note(f"stopped on {stopped_by.name}")
        if where is None:
            _exit_now()


def _print_config(client: str, serving: Serving, settings: Settings) -> None:
    """The snippet on stdout; on stderr, where it goes and (with --http) how to start the
    server and hand the client its token. Nothing is created."""
    from graymatter_tui.mcp.http_guard import TOKEN_FILE, token_home

    try:
        wired = entry(serving)
        text = snippet(client, wired)
    except NotExpressible as exc:
        fail(str(exc), 2)
    note(f"paste this into {WHERE[client]}")
    click.echo(text, nl=False)
    if isinstance(wired, Remote):
        note(f"start the server the client connects to: {shlex.join(wired.server.argv)}")
        token = token_home(settings.location, settings.data_dir) / TOKEN_FILE
        made = "" if token.exists() else " (the server makes that file when it first starts)"
        note(
            f"the client sends the bearer token from ${wired.token_variable}; set it in "
            f'the environment the client starts from: export {wired.token_variable}="$(cat '
            f'{shlex.quote(str(token))})"{made}'
        )
    if serving.location.path is None:
        remote = isinstance(wired, Remote)
        note(
            f"{'that command' if remote else 'the snippet'} names the database without its "
            "password: give it in ~/.pgpass or PGPASSWORD in the "
            f"{'server' if remote else 'client'}'s environment"
        )


def _serve(
    data_dir: Path | None,
    agent: str | None,
    read_only: bool,
    review: str,
    where: tuple[str, int] | None,
    listening: list[socket.socket] | None,
) -> signal.Signals | None:
    from graymatter_tui.embedding import background
    from graymatter_tui.embedding.query import from_env
    from graymatter_tui.embedding.settings import answer_queries
    from graymatter_tui.mcp.http_guard import TOKEN_FILE, load_or_create_token, token_dir, url_of
    from graymatter_tui.mcp.memory_tools import Session
    from graymatter_tui.mcp.server import serve_http, serve_stdio
    from graymatter_tui.recall.keyword_cache import KeywordCache

    answer_queries()  # the model on two threads: a search waits on its query's embedding
    settings = settings_for(data_dir)
    store = open_upgrading(settings, read_only=read_only)
    mode = " (read-only)" if read_only else ""
    if review != "none" and not read_only:
        mode = f" (holding {review} writes for review)"
    with store, background.running(store) as embedder:
        if embedder is not None:
            note(f"embedding new facts in the background with {embedder.model}")
        # A server answers many queries: it keeps the vectors in RAM, and what it holds
        # for its whole life (modules, the store, each agent's vector copy once built)
        # is frozen out of the cycle collector's full passes, which otherwise walk it at
        # random queries (12-20 ms a pass at 100k facts; ADR 0072).
        vectors = from_env(store, cache=True, on_cache_built=gc.freeze)
        if vectors is not None:
            vectors.warm()
        gc.freeze()
        session = Session(
            store,
            read_only=read_only,
            default_agent=agent,
            review=review,
            vectors=vectors,
            keywords=KeywordCache(),
        )
        if where is None or listening is None:
            note(f"serving {store.location} over MCP on stdio{mode}")
            return serve_stdio(session)
        token_home = token_dir(settings.location, settings.data_dir)
        token = load_or_create_token(token_home)
        host, port = where
        note(
            f"serving {store.location} over MCP at {url_of(host, port)}{mode}; "
            f"the bearer token is in {token_home / TOKEN_FILE}"
        )
        return serve_http(session, listening, host, token)


def _exit_now() -> None:
    """End the process now that serving stopped and everything is written and closed.
    stdin is read in a worker thread that stays blocked in read() until the client's next
    line or end of input, and Python's exit would wait for it: a stop must not need one."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
