"""The agent id a project's memory lives under, made from the project directory's name.

The hooks and the MCP entry that `init` writes must name the same agent, or the facts a
hook injects and the facts an agent stores through the tools would sit in two memories.
Both take the name from here (ADR 0054):

1. the directory's own name (the caller passes the last part of its resolved path);
2. NFKC-normalised and case-folded, so `MyApp` and `myapp` are one agent;
3. every run of characters other than letters, digits, `.`, `_` and `-` becomes one `-`
   (spaces, slashes, brackets, emoji);
4. leading and trailing `-`, `.` and `_` are dropped (so a name can never be the shared
   namespace `__shared__`, nor a dot-file's name);
5. cut to 64 bytes of UTF-8 on a character boundary;
6. `project` when nothing is left (a root directory, a name of only symbols).

A name given by a person (`--agent`) is used as given instead: it is only checked, never
rewritten."""

from __future__ import annotations

import re
import unicodedata

MAX_DERIVED_BYTES = 64
FALLBACK = "project"
_EDGES = "-._"
_ASCII_OTHER = re.compile(r"[^0-9a-z_.-]+")


def _kept(char: str) -> bool:
    """Letters and digits of any script, their combining marks (a Devanagari vowel sign
    belongs to its word), and `.` `_` `-`."""
    return char.isalnum() or char in "._-" or unicodedata.category(char)[0] == "M"


def agent_from_directory_name(name: str) -> str:
    """The agent id for a project directory called `name` (rules in the module doc)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    if folded.isascii():
        dashed = _ASCII_OTHER.sub("-", folded)
    else:
        dashed = re.sub("-+", "-", "".join(c if _kept(c) else "-" for c in folded))
    dashed = dashed.strip(_EDGES)
    raw = dashed.encode("utf-8")
    if len(raw) > MAX_DERIVED_BYTES:
        dashed = raw[:MAX_DERIVED_BYTES].decode("utf-8", errors="ignore").rstrip(_EDGES)
    return dashed or FALLBACK
