"""The hook helper: one process per data dir, with the store's code loaded, that answers
hook events handed over a Unix socket so that each prompt's hook process need not load it
(ADR 0055). `python -m graymatter_tui.hooks.helper DATA_DIR`; the hook starts it.

- It listens on `DATA_DIR/hooks/helper.sock` (0600, in a 0700 directory) and answers only
  this user (the peer's uid is checked where the system says it). One helper per data dir:
  it holds `helper.lock` while it runs, and a second one leaves at once.
- Each request (the hook's argv, environment, working directory and the event's bytes) is
  handled in a forked worker with that environment and directory, exactly as the hook
  would have handled it itself (`runner`), so nothing of one request reaches the next. The
  helper itself never opens the store (an LMDB environment must not cross a fork).
- A worker gets `DEADLINE_SECONDS` and a margin; then the system kills it (its transaction
  never commits). The hook stops waiting at the deadline in any case.
- A request from other code (an upgrade, an edit: `entry.code_stamp`) is answered "stale",
  and the helper leaves; the hook then does the work itself and starts a new one.
- It leaves after `GRAYMATTER_HOOK_HELPER_IDLE` seconds without a request (default 900),
  or when its data dir is gone."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

# Everything a worker needs, loaded once here, so a forked worker starts warm.
import graymatter_tui.hooks.events  # noqa: F401
from graymatter_tui.hooks import hook_log, runner
from graymatter_tui.hooks.wire import (
    DEADLINE_SECONDS,
    MAX_INPUT_BYTES,
    code_stamp,
    pack,
    socket_path,
    unpack,
)

IDLE_VARIABLE = "GRAYMATTER_HOOK_HELPER_IDLE"
DEFAULT_IDLE_SECONDS = 900.0
LOCK_NAME = "helper.lock"
PID_NAME = "helper.pid"
READ_SECONDS = 5.0


def _idle_seconds() -> float:
    try:
        return max(float(os.environ.get(IDLE_VARIABLE, "") or DEFAULT_IDLE_SECONDS), 1.0)
    except ValueError:
        return DEFAULT_IDLE_SECONDS


def _same_user(conn: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # not Linux: the socket's mode and its directory's keep others out
        return True
    raw = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())


def _read_request(conn: socket.socket) -> tuple[dict[str, object], bytes] | None:
    conn.settimeout(READ_SECONDS)
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := conn.recv(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_INPUT_BYTES + 1024 * 1024:
                return None
    except OSError:
        return None
    request = unpack(b"".join(chunks))
    raw = request.get("raw", b"") if request is not None else None
    if request is None or not isinstance(raw, bytes):
        return None
    return request, raw


def _work(conn: socket.socket, request: dict[str, object], raw: bytes) -> None:
    """In the forked worker: the request's environment and directory, the hook's own
    handling, the answer sent back."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.alarm(int(DEADLINE_SECONDS) + 5)  # the system ends a worker that hangs
    given = request.get("argv")
    argv = [str(a) for a in given] if isinstance(given, list) else []
    env = request.get("env")
    if isinstance(env, dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
    with contextlib.suppress(OSError, TypeError):
        os.chdir(str(request.get("cwd")))
    outcome = runner.outcome_here(argv, io.BytesIO(raw))
    runner.write_log(outcome, argv)
    text = outcome.get("text") if isinstance(outcome.get("text"), str) else ""
    with contextlib.suppress(OSError):
        conn.sendall(pack({"text": text}))


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def serve(data_dir: Path) -> None:
    hooks = hook_log.private_dir(hook_log.log_dir(data_dir))
    lock = open(hooks / LOCK_NAME, "a")  # noqa: SIM115 - held for the helper's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another helper serves this data dir
    path = Path(socket_path(str(data_dir)))
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        listener.bind(os.fspath(path))
    finally:
        os.umask(old_mask)
    listener.listen(16)
    bound = os.stat(path).st_ino
    (hooks / PID_NAME).write_text(f"{os.getpid()}\n")
    stamp = code_stamp()
    idle = _idle_seconds()
    last = time.monotonic()
    try:
        while True:
            _reap()
            ready, _, _ = select.select([listener], [], [], 1.0)
            if not ready:
                if time.monotonic() - last > idle or not data_dir.is_dir():
                    break
                continue
            conn, _ = listener.accept()
            last = time.monotonic()
            with conn:
                if not _same_user(conn):
                    continue
                got = _read_request(conn)
                if got is None:
                    continue
                request, raw = got
                if request.get("stamp") != stamp:
                    with contextlib.suppress(OSError):
                        conn.sendall(pack({"stale": True}))
                    break
                if os.fork() == 0:
                    listener.close()
                    try:
                        _work(conn, request, raw)
                    finally:
                        os._exit(0)
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == bound:
                path.unlink()
        with contextlib.suppress(OSError):
            (hooks / PID_NAME).unlink()
        lock.close()


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python -m graymatter_tui.hooks.helper DATA_DIR", file=sys.stderr)
        sys.exit(2)
    # A helper that fails only costs speed: the hook does the work itself.
    with contextlib.suppress(Exception):
        serve(Path(sys.argv[1]).absolute())
    os._exit(0)


if __name__ == "__main__":
    main()
