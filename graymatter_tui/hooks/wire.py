"""What the hook, its runner and its helper agree on: limits, where the helper listens,
the stamp of the code that answers, and the messages between them. Built-in modules only
(`os`, `sys`, `marshal`): the hook imports this on every prompt, and even `json`, `re` or
`pathlib` would be a measurable part of its cold start."""

from __future__ import annotations

import marshal
import os
import sys

# Larger input than this is not read as an event (a prompt of a few MB is still taken).
MAX_INPUT_BYTES = 8 * 1024 * 1024
# The hook gives up (log line, exit 0, no output) after this many seconds, before the
# client's own timeout (`hooks install` writes 10 s) kills it without a word.
DEADLINE_SECONDS = 8.0
SOCKET_NAME = "helper.sock"
# AF_UNIX paths are limited to about 108 bytes; a data dir deeper than this does without.
MAX_SOCKET_PATH = 100


def socket_path(data_dir: str) -> str:
    return os.path.join(data_dir, "hooks", SOCKET_NAME)


def code_stamp() -> str:
    """What the helper must be running to answer for this code: the version and the
    interpreter, and when the hooks' modules last changed (an upgrade or an edit makes a
    running helper stale)."""
    from graymatter_tui import __version__

    newest = 0
    try:
        with os.scandir(os.path.dirname(__file__)) as entries:
            for entry in entries:
                if entry.name.endswith(".py"):
                    newest = max(newest, entry.stat().st_mtime_ns)
    except OSError:
        pass
    return f"{__version__}:{sys.version}:{sys.executable}:{newest}"


def pack(message: dict[str, object]) -> bytes:
    """A message between the hook and its helper (the same interpreter on both ends: the
    stamp says so, and a helper of another one answers "stale")."""
    return marshal.dumps(message)


def unpack(data: bytes) -> dict[str, object] | None:
    try:
        message = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return message if isinstance(message, dict) else None
