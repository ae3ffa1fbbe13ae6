"""Who is writing: every fact records the source that wrote it, and every write leaves an
activity entry naming it. A process names itself once (`cli`, `tui`, …); an MCP server
names each call after the client that made it (`mcp:<client name>`), so one HTTP server
shared by two clients still tells them apart. A hook a coding agent's client runs on its
own (a `remember:` line, a checkpoint before compaction) writes as `hook:<client>`.

The current source is read at the start of each store write, in the writing thread: a
context variable for the per-call name, falling back to the process's own name (worker
threads start with an empty context, so a context variable alone would lose it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

CLI = "cli"
TUI = "tui"
IMPORT = "import"
CONSOLIDATION = "consolidation"
DEMO = "demo"
LIBRARY = "api"  # code that uses the package without naming itself
MCP_PREFIX = "mcp:"
HOOK_PREFIX = "hook:"
# Shown for facts written before the store recorded sources (schema 3).
UNRECORDED = "not recorded"

MAX_CLIENT_NAME = 48
_CLIENT_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")

_process_source = LIBRARY
_call_source: ContextVar[str | None] = ContextVar("graymatter_source", default=None)


def name_process(source: str) -> None:
    """Name what this process writes as (`cli`, `tui`, `mcp:…`), once, at start."""
    global _process_source
    _process_source = source


def current() -> str:
    return _call_source.get() or _process_source


@contextmanager
def writing_as(source: str) -> Iterator[None]:
    """Writes in this block (this thread or task) are recorded as `source`."""
    token = _call_source.set(source)
    try:
        yield
    finally:
        _call_source.reset(token)


def mcp_source(client_name: object) -> str:
    """`mcp:<client name>` from what the client said in its initialize handshake, made
    safe to store and show: a client may send any string, or none."""
    name = client_name if isinstance(client_name, str) else ""
    cleaned = _CLIENT_UNSAFE.sub("-", name).strip("-")[:MAX_CLIENT_NAME]
    return MCP_PREFIX + (cleaned or "unnamed-client")


def hook_source(client: str) -> str:
    """`hook:<client>`: what a client's hook (not the model through a tool) wrote."""
    cleaned = _CLIENT_UNSAFE.sub("-", client).strip("-")[:MAX_CLIENT_NAME]
    return HOOK_PREFIX + (cleaned or "unnamed-client")


KNOWN = frozenset({CLI, TUI, IMPORT, CONSOLIDATION, DEMO, LIBRARY})
_SAFE_NAME = re.compile(rf"[A-Za-z0-9._@+-]{{1,{MAX_CLIENT_NAME}}}")


def is_valid(source: str) -> bool:
    """Whether `source` is one this program writes: a file to import may claim any."""
    if source in KNOWN:
        return True
    for prefix in (MCP_PREFIX, HOOK_PREFIX):
        name = source.removeprefix(prefix)
        if name != source:
            return _SAFE_NAME.fullmatch(name) is not None
    return False


def describe(source: str | None, cycle_id: str = "") -> str:
    """One line for people: the source, with the cycle of a consolidation's summary."""
    if not source:
        return UNRECORDED
    if source == CONSOLIDATION and cycle_id:
        return f"{source} (cycle {cycle_id})"
    return source
