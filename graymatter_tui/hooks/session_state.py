"""A session's small state between hook runs: a file per session under the data dir.

It keeps what one prompt's hook must know of the one before: the digest of the recall
block it injected (so an identical block is not injected twice in a row), the facts
recalled since the last checkpoint (their accesses are written in one transaction at
PreCompact or SessionEnd, not on every prompt: a durable write costs more than the
ranking; ADR 0055), and the ids `remember:` stored. It is advisory: a lost or damaged
file only means a block shown once more or an access not counted, so it is replaced
atomically but not synced, and an unreadable one reads as empty.

Files of sessions that never ended (a killed client) are picked up at a later
SessionStart: their accesses written, the file removed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from graymatter_tui.hooks.hook_log import log_dir, private_dir

SESSIONS_DIR = "sessions"
MAX_ACCESSED = 2000
MAX_REMEMBERED = 200
# A session whose file has not changed for this long is over (its client never said so).
STALE_SECONDS = 24 * 3600
MAX_STALE_PER_START = 10
_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


@dataclass
class SessionState:
    agent: str = ""
    last_block: str = ""
    prompts: int = 0
    accessed: dict[str, int] = field(default_factory=dict)
    remembered: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(
            {
                "agent": self.agent,
                "last_block": self.last_block,
                "prompts": self.prompts,
                "accessed": dict(list(self.accessed.items())[-MAX_ACCESSED:]),
                "remembered": self.remembered[-MAX_REMEMBERED:],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SessionState:
        try:
            raw = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(raw, dict):
            return cls()
        accessed = raw.get("accessed")
        remembered = raw.get("remembered")
        return cls(
            agent=raw["agent"] if isinstance(raw.get("agent"), str) else "",
            last_block=raw["last_block"] if isinstance(raw.get("last_block"), str) else "",
            prompts=raw["prompts"] if isinstance(raw.get("prompts"), int) else 0,
            accessed={
                k: v
                for k, v in (accessed.items() if isinstance(accessed, dict) else ())
                if isinstance(k, str) and isinstance(v, int) and v > 0
            },
            remembered=[
                item
                for item in (remembered if isinstance(remembered, list) else ())
                if isinstance(item, str)
            ],
        )


def block_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sessions_dir(data_dir: Path) -> Path:
    return log_dir(data_dir) / SESSIONS_DIR


def state_path(data_dir: Path, session_id: object) -> Path:
    """The file of session `session_id` (any string a client sends: a safe one is used
    as it is, anything else by its digest)."""
    raw = session_id if isinstance(session_id, str) else ""
    key = raw if _SAFE_ID.fullmatch(raw) and raw not in (".", "..") else ""
    if not key:
        key = "h-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return sessions_dir(data_dir) / f"{key}.json"


def load(path: Path) -> SessionState:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return SessionState.from_json(fh.read(1024 * 1024))
    except OSError:
        return SessionState()


def save(path: Path, state: SessionState) -> None:
    """Replace the file in one rename (a reader sees the old state or the new one)."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(state.to_json())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def stale_sessions(data_dir: Path, keep: Path | None = None) -> list[tuple[Path, SessionState]]:
    """Sessions whose file has not changed for a day (at most a few per call), oldest
    first; `keep` (the session starting now) is never among them."""
    directory = sessions_dir(data_dir)
    cutoff = time.time() - STALE_SECONDS
    found: list[tuple[float, Path]] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if not entry.name.endswith(".json") or entry.name.startswith("."):
                    continue
                path = Path(entry.path)
                if keep is not None and path == keep:
                    continue
                with contextlib.suppress(OSError):
                    modified = entry.stat(follow_symlinks=False).st_mtime
                    if modified < cutoff:
                        found.append((modified, path))
    except OSError:
        return []
    found.sort()
    return [(path, load(path)) for _, path in found[:MAX_STALE_PER_START]]
