"""Serving the tools over MCP with the official SDK's low-level server: we declare the
tools ourselves (upstream's exact schemas) and answer every call with text plus its
structured twin, or with an error result. Progress and errors go to stderr: stdout is
the protocol.

SIGINT (ctrl+c) and SIGTERM are the normal way to stop either transport: serving ends,
the accesses recorded in the background are written, and the serve function returns the
signal that stopped it (None when the client closed stdin)."""

from __future__ import annotations

import os
import signal
import socket
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

from graymatter_tui import __version__
from graymatter_tui.core import provenance
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.textsafe import neutralise
from graymatter_tui.mcp.arguments import Arguments
from graymatter_tui.mcp.briefing import briefing
from graymatter_tui.mcp.deferred_accesses import DeferredAccesses
from graymatter_tui.mcp.draining import serve_draining
from graymatter_tui.mcp.errors import ToolError
from graymatter_tui.mcp.http_guard import MAX_BODY_BYTES, guarded
from graymatter_tui.mcp.memory_tools import HANDLERS, Session
from graymatter_tui.mcp.replies import Reply
from graymatter_tui.mcp.tools import TOOLS
from graymatter_tui.recall.probe_schedule import DueProbeRuns

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
        # When to use the tools, read by the model with them (ADR 0053).
        instructions=briefing(
            default_agent=session.default_agent,
            read_only=session.read_only,
            review=session.review,
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_http(
    session: Session, listening: list[socket.socket], host: str, token: str
) -> signal.Signals | None:
    """Serve the streamable HTTP transport at /mcp behind the bearer token, on the sockets
    already `listening` on `host`, until a signal stops it."""
    from graymatter_tui.mcp import http_run  # only the HTTP transport needs uvicorn

    with _recording_accesses(session) as serving:
        server = build_server(serving)
        app = server.streamable_http_app(host=host, max_request_body_size=MAX_BODY_BYTES)
        return http_run.run(guarded(app, token), listening)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def serve_stdio(session: Session) -> signal.Signals | None:
    """Serve until the client closes our stdin, or a signal stops the server."""
    stopped_by: signal.Signals | None = None

    async def run(serving: Session) -> None:
        server = build_server(serving)
        options = server.create_initialization_options()

        async def serve(read: Any, write: Any) -> None:
            await server.run(read, write, options)

        async def stop_on_signal(scope: anyio.CancelScope) -> None:
            nonlocal stopped_by
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for received in signals:
                    stopped_by = signal.Signals(received)
                    scope.cancel()
                    return

        async with anyio.create_task_group() as group:
            group.start_soon(stop_on_signal, group.cancel_scope)
            async with stdio_server(stdin=_stdin()) as (read, write):
                await serve_draining(read, write, serve)
            group.cancel_scope.cancel()

    with _recording_accesses(session) as serving:
        anyio.run(run, serving)
    return stopped_by


class _Lines(anyio.AsyncFile[str]):
    """stdin as the SDK reads it, except that a read waiting for the next line gives way
    when serving is cancelled: a signal must not wait for the client to write. (The
    thread blocked in that read stays blocked; see `cli.mcp`, which ends the process.)"""

    async def readline(self) -> str:
        return await anyio.to_thread.run_sync(self.wrapped.readline, abandon_on_cancel=True)


def _stdin() -> anyio.AsyncFile[str] | None:
    """Our own descriptor for stdin, read as UTF-8 with undecodable bytes replaced (as the
    SDK reads it); None (the SDK's own reader) when there is no stdin to duplicate. fd 0
    itself stays as it is: nothing in the server reads it."""
    try:
        duplicate = os.dup(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return _Lines(os.fdopen(duplicate, "r", encoding="utf-8", errors="replace"))


@contextmanager
def _recording_accesses(session: Session) -> Iterator[Session]:
    """The session with searches' accesses written in the background (not when the
    server is read-only: it records none), and written out when serving stops. A
    writable server also makes the scheduled probe runs that fall due while it serves."""
    if session.read_only or session.accesses is not None:
        yield session
        return
    accesses = DeferredAccesses(session.store)
    due_runs = DueProbeRuns(session.store, failed=_probe_run_failed)
    try:
        yield replace(session, accesses=accesses)
    finally:
        due_runs.close()
        accesses.close()


def _probe_run_failed(exc: GraymatterError) -> None:
    said = neutralise(str(exc), one_line=True)
    print(f"graymatter-tui mcp: scheduled probe run failed: {said}", file=sys.stderr, flush=True)
