"""Answer every request a client sent before it closed stdin.

A piped client may write its calls and close stdin at once. The SDK ends the session at
end of input and cancels the handlers still running, so those requests were never
answered (and a write might or might not have landed). Between the transport and the
server this relay counts the requests read and the replies written, and hands the server
its end of input only once every request read has its reply, or after `DRAIN_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage

DRAIN_SECONDS = 30.0
Incoming = SessionMessage | Exception
Serve = Callable[[ObjectReceiveStream[Incoming], ObjectSendStream[SessionMessage]], Awaitable[None]]


async def serve_draining(
    read: ObjectReceiveStream[Incoming], write: ObjectSendStream[SessionMessage], serve: Serve
) -> None:
    pending: set[types.RequestId] = set()
    idle = anyio.Event()
    idle.set()
    to_server, server_reads = anyio.create_memory_object_stream[Incoming](16)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)

    async def relay_in() -> None:
        nonlocal idle
        async with to_server:
            async for item in read:
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, types.JSONRPCRequest):
                    pending.add(message.id)
                    if idle.is_set():
                        idle = anyio.Event()
                elif isinstance(message, types.JSONRPCNotification) and (
                    message.method == "notifications/cancelled"
                ):
                    # A request the client cancelled is never answered: stop waiting.
                    pending.discard((message.params or {}).get("requestId", ""))
                    if not pending:
                        idle.set()
                await to_server.send(item)
            with anyio.move_on_after(DRAIN_SECONDS):
                await idle.wait()

    async def relay_out() -> None:
        async with from_server, write:  # closing `write` ends the transport's writer
            async for item in from_server:
                await write.send(item)
                if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                    pending.discard(item.message.id)
                    if not pending:
                        idle.set()

    async with anyio.create_task_group() as group:
        group.start_soon(relay_in)
        group.start_soon(relay_out)
        await serve(server_reads, server_writes)
