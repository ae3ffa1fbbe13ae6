"""The hook's log: one line per failure or notable write, under the data dir, bounded.

A hook must never speak on its own stdout or stderr when something goes wrong (the
client would show it, or block on it), so this file is where a person finds out:
`graymatter-tui hooks status` and `doctor` read it. Each line is
`TIME EVENT OUTCOME: DETAIL`, the detail on one line and cut short. When the file passes
`MAX_LOG_BYTES` it is moved to `hook.log.1` (replacing the one before), so the two
together never hold more than twice that."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

LOG_DIR = "hooks"
LOG_FILE = "hook.log"
MAX_LOG_BYTES = 256 * 1024
MAX_DETAIL = 400
FAILED = "failed"


def log_dir(data_dir: Path) -> Path:
    return data_dir / LOG_DIR


def log_path(data_dir: Path) -> Path:
    return log_dir(data_dir) / LOG_FILE


def private_dir(path: Path) -> Path:
    """`path` made if missing, with every directory this makes private (0700): the data
    dir holds the store, and the hook's files say what a person asked."""
    missing: list[Path] = []
    at = path
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
    return path


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    cleaned = "".join(c if c.isprintable() else "?" for c in flat)
    return cleaned if len(cleaned) <= MAX_DETAIL else cleaned[: MAX_DETAIL - 1] + "…"


def write(data_dir: Path, event: str, outcome: str, detail: str = "") -> None:
    """Append one line; never raises (a hook that cannot log still must not fail)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {_one_line(event) or '-'} {outcome}"
    if detail:
        line += f": {_one_line(detail)}"
    path = log_path(data_dir)
    try:
        private_dir(path.parent)
        try:
            if path.stat().st_size > MAX_LOG_BYTES:
                os.replace(path, path.with_name(LOG_FILE + ".1"))
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


@dataclass(frozen=True)
class LogSummary:
    path: Path
    lines: list[str]  # the newest lines, oldest first
    failures: int  # failure lines among them
    last_failure: str | None


def read_tail(data_dir: Path, limit: int = 20, *, since: float | None = None) -> LogSummary:
    """The newest `limit` lines of the log (and how many of them are failures; with
    `since`, an epoch time, only lines written since then count)."""
    path = log_path(data_dir)
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(size - 64 * 1024, 0))
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return LogSummary(path, [], 0, None)
    lines = [line for line in raw.splitlines() if line.strip()][-limit:]
    if since is not None:
        cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
        counted = [line for line in lines if line[:20] >= cutoff]
    else:
        counted = lines
    failures = [line for line in counted if outcome_of(line) == FAILED]
    return LogSummary(path, lines, len(failures), failures[-1] if failures else None)


def outcome_of(line: str) -> str:
    """The OUTCOME word of a log line (`TIME EVENT OUTCOME: DETAIL`)."""
    parts = line.split(" ", 3)
    return parts[2].rstrip(":") if len(parts) > 2 else ""
