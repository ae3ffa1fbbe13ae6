"""Editing another program's configuration file: an agent client's settings (Claude
Code's hooks, each client's MCP servers), a project's instruction file (CLAUDE.md).

The rules (ADR 0056), the same for every file:
- Only our own entries change. The file is read, parsed, changed in memory, checked, and
  written whole; everything else in it keeps its value (JSON is written back with the
  file's own indentation; a TOML file keeps every byte outside our table).
- Nothing is written when nothing changes: running a command again is a no-op.
- Before the first change to an existing file, a copy is written beside it
  (`NAME.graymatter.bak`), and its path is in the receipt. It is the file as it was
  before this program ever touched it, and later changes leave it alone (they only ever
  change our own entries); a change that throws away a person's edit (`context-sync
  --force`) also keeps a copy of the file as it was just then
  (`NAME.graymatter-YYYYmmddTHHMMSSZ.bak`).
- The write is atomic (a temporary file renamed over it, `exchange.output_file`): a reader
  sees the old file or the new one, never half of one.
- Refused, with one line and nothing changed: a file that does not parse (not JSON, not
  TOML), whose top level is not an object/table, that is not a regular file, that this
  user may not write (or whose directory does not let it be replaced), or that changed
  between being read and being written.
- A symbolic link is written through: the file it points at is replaced and the link
  stays a link (people keep dotfiles in a repository and link them into place; replacing
  the link with a file would silently fork their configuration). The receipt names the
  target. A link pointing nowhere has its target created, as a shell redirection would."""

from __future__ import annotations

import difflib
import json
import os
import stat
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graymatter_tui.core.errors import InvalidInput, WriteFailed
from graymatter_tui.exchange.output_file import write_output

MAX_CONFIG_BYTES = 16 * 1024 * 1024


class Refused(InvalidInput):
    """A file this program will not change; nothing was written."""


@dataclass(frozen=True)
class Snapshot:
    """A file as it was read: where it is named, where its bytes really are (through a
    link), and its text (None: it does not exist yet)."""

    path: Path
    real: Path
    text: str | None

    @property
    def linked(self) -> bool:
        return self.real != self.path.absolute()


def read(path: Path) -> Snapshot:
    """`path` as it is now, or a refusal saying why it cannot be edited."""
    shown = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        real = Path(os.path.realpath(path))
        return Snapshot(path, real, None)
    except OSError as exc:
        raise Refused(f"{shown}: {exc.strerror or exc}; nothing changed") from None
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{shown} is not a regular file; nothing changed")
    if st.st_size > MAX_CONFIG_BYTES:
        raise Refused(f"{shown} is {st.st_size} bytes, too large for a settings file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise Refused(f"cannot read {shown}: {exc.strerror or exc}; nothing changed") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{shown} is not UTF-8 text; nothing changed") from None
    return Snapshot(path, Path(os.path.realpath(path)), text)


def check_writable(snapshot: Snapshot) -> None:
    """Refuse now if the file (or the directory it is replaced in) may not be written."""
    shown = str(snapshot.path)
    if snapshot.text is not None:
        mode = stat.S_IMODE(os.stat(snapshot.real).st_mode)
        # A file with no write bit was made read-only on purpose: root is refused too.
        if not mode & 0o222 or not os.access(snapshot.real, os.W_OK):
            raise Refused(f"{shown} is read-only (mode {mode:03o}); nothing changed")
        if _read_only_mount(snapshot.real):
            raise Refused(f"{shown} is on a read-only file system; nothing changed")
    directory = snapshot.real.parent
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise Refused(f"{shown} cannot be written: {existing} is read-only for this user")


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# ---- JSON ------------------------------------------------------------------------------


def json_object(snapshot: Snapshot) -> dict[str, Any]:
    """The file's top-level object ({} for a file that does not exist or is empty)."""
    if snapshot.text is None or not snapshot.text.strip():
        return {}
    try:
        data = json.loads(snapshot.text)
    except ValueError as exc:
        raise Refused(
            f"{snapshot.path} is not valid JSON ({exc}); fix it or move it away, nothing changed"
        ) from None
    if not isinstance(data, dict):
        raise Refused(f"{snapshot.path} does not hold a JSON object; nothing changed")
    return data


def _indent_of(text: str | None) -> int | str:
    """The indentation the file uses (two spaces for a new file)."""
    if text:
        for line in text.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                lead = line[: len(line) - len(stripped)]
                return "\t" if lead.startswith("\t") else len(lead)
    return 2


def json_text(data: dict[str, Any], like: str | None) -> str:
    """`data` as the file would hold it, indented as `like` (the old text) was."""
    return json.dumps(data, indent=_indent_of(like), ensure_ascii=False) + "\n"


# ---- TOML (a table of our own in a file that is otherwise left byte for byte) ----------


def _header_names(line: str) -> list[str] | None:
    """The dotted name of a `[table]` or `[[array]]` header line, or None."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    inner = stripped.lstrip("[").split("]", 1)[0]
    try:
        parsed = tomllib.loads(f"[{inner}]\n")
    except tomllib.TOMLDecodeError:
        return None
    names: list[str] = []
    node: Any = parsed
    while isinstance(node, dict) and len(node) == 1:
        key = next(iter(node))
        names.append(key)
        node = node[key]
    return names


def with_toml_table(text: str | None, path: list[str], table: str | None) -> str:
    """`text` with the table at `path` (and its sub-tables) replaced by `table` (TOML
    text starting with its header), or removed when `table` is None; everything else
    kept as it was. Appended at the end when the file has no such table."""
    lines = (text or "").splitlines(keepends=True)
    out: list[str] = []
    inside = False
    placed = False
    for line in lines:
        names = _header_names(line)
        if names is not None:
            inside = names[: len(path)] == path
            if inside and not placed and table is not None:
                out.append(table if table.endswith("\n") else table + "\n")
                placed = True
        if not inside:
            out.append(line)
    if table is not None and not placed:
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        if out and out[-1].strip():
            out.append("\n")
        out.append(table if table.endswith("\n") else table + "\n")
    return "".join(out)


def toml_document(snapshot: Snapshot) -> dict[str, Any]:
    if snapshot.text is None:
        return {}
    try:
        return tomllib.loads(snapshot.text)
    except tomllib.TOMLDecodeError as exc:
        raise Refused(f"{snapshot.path} is not valid TOML ({exc}); nothing changed") from None


def without(document: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """A copy of `document` without the entry at `path`, and without the tables on the
    way to it that this leaves empty (so a file that had none compares equal)."""
    copy: dict[str, Any] = json.loads(json.dumps(document, default=str))
    nodes = [copy]
    for key in path[:-1]:
        node = nodes[-1].get(key)
        if not isinstance(node, dict):
            return copy
        nodes.append(node)
    nodes[-1].pop(path[-1], None)
    for parent, key in zip(reversed(nodes[:-1]), reversed(path[:-1]), strict=True):
        if parent.get(key) == {}:
            del parent[key]
    return copy


# ---- writing ---------------------------------------------------------------------------


def diff(snapshot: Snapshot, new_text: str) -> str:
    """A unified diff from the file as read to `new_text`."""
    old = (snapshot.text or "").splitlines(keepends=True)
    new = new_text.splitlines(keepends=True)
    before = str(snapshot.path) if snapshot.text is not None else "/dev/null"
    lines = difflib.unified_diff(old, new, before, str(snapshot.path))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def backup_path(path: Path) -> Path:
    """Where the copy of the file as it was before our first change is kept."""
    return path.with_name(f"{path.name}.graymatter.bak")


def stamped_backup_path(path: Path, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    candidate = path.with_name(f"{path.name}.graymatter-{stamp}.bak")
    count = 1
    while candidate.exists():
        count += 1
        candidate = path.with_name(f"{path.name}.graymatter-{stamp}-{count}.bak")
    return candidate


def write(snapshot: Snapshot, new_text: str, *, keep_current: bool = False) -> Path | None:
    """Write `new_text` over the file read as `snapshot`: refused if it changed since,
    backed up first if it existed and has no backup of ours yet (with `keep_current`,
    a timestamped copy of it as it is now as well). Returns the path of the backup that
    holds the file as it was before our first change (None: a new file)."""
    check_writable(snapshot)
    now = read(snapshot.path)
    if now.text != snapshot.text:
        raise Refused(f"{snapshot.path} changed while it was being edited; run the command again")
    backup: Path | None = None
    if snapshot.text is not None:
        backup = backup_path(snapshot.path)
        copies = [stamped_backup_path(snapshot.path)] if keep_current else []
        if not os.path.lexists(backup):
            copies.append(backup)
        for copy in copies:
            try:
                write_output(snapshot.text.encode("utf-8"), copy)
            except WriteFailed as exc:
                raise Refused(f"cannot back up {snapshot.path} ({exc}); nothing changed") from None
        if keep_current:
            backup = copies[0]
    snapshot.real.parent.mkdir(parents=True, exist_ok=True)
    write_output(new_text.encode("utf-8"), snapshot.path)
    return backup
