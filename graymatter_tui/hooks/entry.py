"""`graymatter-tui-hook`: the process a client starts for each hook event (ADR 0055).

It is started cold on every prompt, and a cold Python that loads the store (msgspec, the
storage values, LMDB) and recall spends most of the prompt hook's budget on imports
alone. So this module loads nothing but the standard library's smallest parts and
first asks the store's hook helper (`helper`: a process of this user, one per data dir,
which has everything loaded and forks a worker per request) over a Unix socket in the
data dir. Only when no helper answers does it do the work itself (`runner`), and then
starts a helper for the next event. Either way the answer is the same: exit 0; stdout
empty or one JSON object as Claude Code reads it; failures only in the hook log.

`GRAYMATTER_HOOK_HELPER=off` turns the helper off (the work is then always done here)."""

from __future__ import annotations

# The C socket module itself: `socket` would also load selectors and enum, a
# measurable part of a cold start, for nothing a Unix socket needs here.
import _socket as socket
import os
import sys
import time

from graymatter_tui.hooks.wire import (
    DEADLINE_SECONDS,
    MAX_INPUT_BYTES,
    MAX_SOCKET_PATH,
    code_stamp,
    pack,
    socket_path,
    unpack,
)

HELPER_VARIABLE = "GRAYMATTER_HOOK_HELPER"
USAGE = (
    "graymatter-tui-hook reads a hook event as JSON on stdin; Claude Code runs it (see "
    "`graymatter-tui hooks install`)"
)


def helper_enabled() -> bool:
    return os.environ.get(HELPER_VARIABLE, "").strip().lower() not in ("off", "0", "no")


def helper_data_dir(argv: list[str]) -> str | None:
    """The LMDB data dir the command names (`--dir`, else GRAYMATTER_DIR when no store
    URL is given), whose helper to ask; None: no helper for this command."""
    named: dict[str, str] = {}
    for position, word in enumerate(argv):
        name, equals, value = word.partition("=")
        if name in ("--dir", "--store"):
            following = argv[position + 1] if position + 1 < len(argv) else ""
            named[name] = value if equals else following
    if "--store" in named:
        return None
    directory = named.get("--dir")
    if directory is None and not os.environ.get("GRAYMATTER_STORE", "").strip():
        directory = os.environ.get("GRAYMATTER_DIR", "").strip() or None
    return os.path.abspath(os.path.expanduser(directory)) if directory else None


def _receive(conn: socket.socket, deadline: float) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            return None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def ask_helper(data_dir: str, argv: list[str], raw: bytes) -> str | None:
    """The helper's answer (what to print), or None when no helper took the event (none
    running, a stale one, a socket path too long). A helper that took it but did not
    answer in time counts as answered: the event is not done twice."""
    path = socket_path(data_dir)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(1.0)
        try:
            conn.connect(path)
        except OSError:
            return None
        request: dict[str, object] = {
            "stamp": code_stamp(),
            "argv": argv,
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "raw": raw,
        }
        conn.sendall(pack(request))
        conn.shutdown(socket.SHUT_WR)
        reply = _receive(conn, time.monotonic() + DEADLINE_SECONDS)
    except OSError:
        return None
    finally:
        conn.close()
    if reply is None:
        from graymatter_tui.hooks import runner

        runner.write_log(runner.gave_up(raw), argv)
        return ""
    answer = unpack(reply)
    if answer is None or answer.get("stale"):
        # No answer (a helper that died mid-way: its worker's transaction never
        # committed) or a stale one: the event is done here instead.
        return None
    text = answer.get("text")
    return text if isinstance(text, str) else ""


def _start_helper(data_dir: str) -> None:
    """A helper for the next events, if the store is there and none answers yet."""
    if not os.path.exists(os.path.join(data_dir, "data.mdb")):
        return
    if len(os.fsencode(socket_path(data_dir))) > MAX_SOCKET_PATH:
        return
    import contextlib
    import subprocess

    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "graymatter_tui.hooks.helper", data_dir],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the client waits for our stdout to close
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


def answer(argv: list[str], raw: bytes) -> str:
    """What to print for this event: from the helper when one answers, else done here
    (and a helper started for next time)."""
    data_dir = helper_data_dir(argv) if helper_enabled() else None
    if data_dir is not None:
        text = ask_helper(data_dir, argv, raw)
        if text is not None:
            return text
    from graymatter_tui.hooks import runner

    text = runner.handle(argv, raw)
    if data_dir is not None:
        _start_helper(data_dir)
    return text


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if sys.stdin is None or sys.stdin.isatty():
        print(USAGE, file=sys.stderr)
        sys.exit(0)
    text = ""
    try:  # nothing here may break the session: whatever happens, exit 0
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        text = answer(args, raw)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
    except BaseException:
        pass
    # Out now: nothing is left to tidy, and the interpreter's teardown would only add to
    # the prompt's wait.
    os._exit(0)
