"""Serving the tools over MCP with the official SDK's low-level server: we declare the
tools ourselves (upstream's exact schemas) and answer every call with text plus its
structured twin, or with an error result. Progress and errors go to stderr: stdout is
the protocol."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from graymatter_tui import __version__, provenance
from graymatter_tui.deferred_accesses import DeferredAccesses
from graymatter_tui.errors import GraymatterError
from graymatter_tui.mcp.arguments import Arguments
from graymatter_tui.mcp.draining import serve_draining
from graymatter_tui.mcp.errors import ToolError
from graymatter_tui.mcp.http_guard import MAX_BODY_BYTES, guarded
from graymatter_tui.mcp.memory_tools import HANDLERS, Session
from graymatter_tui.mcp.replies import Reply
from graymatter_tui.mcp.tools import TOOLS

SERVER_NAME = "graymatter-tui"


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _result(reply: Reply) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=reply.text)],
        structured_content=reply.structured,
    )


def call(session: Session, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one tool call to completion: every failure is an error result, never a crash."""
    handler = HANDLERS.get(name)
    if handler is None:
        known = ", ".join(t.name for t in TOOLS if t.name in HANDLERS)
        return _error(f"unknown tool {name!r}; this server offers: {known}")
    try:
        return _result(handler(session, Arguments(arguments)))
    except ToolError as exc:
        return _error(str(exc))
    except GraymatterError as exc:
        return _error(f"{name} failed: {exc}")
    except Exception:  # a bug: the agent gets an error, the person a traceback on stderr
        traceback.print_exc(file=sys.stderr)
        return _error(f"{name} failed with an internal error; nothing was written")


def _client_name(ctx: Any) -> object:
    """The name the client gave in its initialize handshake (None when it gave none)."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None)


def build_server(session: Session) -> Server[Any]:
    async def list_tools(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=spec.input_schema,
                    output_schema=spec.output_schema,
                )
                for spec in TOOLS
                if spec.name in HANDLERS
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # Store calls take milliseconds and LMDB transactions belong to one thread, so
        # calls run one after another on the loop's thread. Each write records the
        # client that asked for it, by the name it gave when it connected.
        with provenance.writing_as(provenance.mcp_source(_client_name(ctx))):
            return call(session, params.name, dict(params.arguments or {}))

    return Server(
        SERVER_NAME,
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_http(session: Session, host: str, port: int, token: str) -> None:
    """Serve the streamable HTTP transport at /mcp behind the bearer token, until stopped."""
    import uvicorn  # only the HTTP transport needs it

    with _recording_accesses(session) as serving:
        server = build_server(serving)
        app = server.streamable_http_app(host=host, max_request_body_size=MAX_BODY_BYTES)
        _run_uvicorn(uvicorn, app, host, port, token)


def _run_uvicorn(uvicorn: Any, app: Any, host: str, port: int, token: str) -> None:
    config = uvicorn.Config(
        guarded(app, token),
        host=host,
        port=port,
        # An access log line holds the URL, and a client may have put its token there.
        access_log=False,
        log_level="warning",
        lifespan="on",
    )
    uvicorn.Server(config).run()


def serve_stdio(session: Session) -> None:
    """Serve until the client closes our stdin."""

    async def run(serving: Session) -> None:
        server = build_server(serving)
        options = server.create_initialization_options()

        async def serve(read: Any, write: Any) -> None:
            await server.run(read, write, options)

        async with stdio_server() as (read, write):
            await serve_draining(read, write, serve)

    with _recording_accesses(session) as serving:
        anyio.run(run, serving)


@contextmanager
def _recording_accesses(session: Session) -> Iterator[Session]:
    """The session with searches' accesses written in the background (not when the
    server is read-only: it records none), and written out when serving stops."""
    if session.read_only or session.accesses is not None:
        yield session
        return
    accesses = DeferredAccesses(session.store)
    try:
        yield replace(session, accesses=accesses)
    finally:
        accesses.close()
