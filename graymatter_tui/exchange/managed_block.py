"""A block of an agent's pinned facts kept inside a person's instruction file (CLAUDE.md,
AGENTS.md), between two marker lines, by `context-sync` (ADR 0057).

    <!-- graymatter:begin agent="ops" sha256=0123456789abcdef … -->
    - a pinned fact
    <!-- graymatter:end -->

The begin marker carries a digest of the lines between the markers as they were written.
A block whose lines no longer match it was edited by hand, and is not overwritten unless
the person says so (`--force`): the edit might be the only copy of something. Everything
outside the markers is never changed. Facts are stored text, untrusted: each is one list
item on one line, control characters made visible, and anything that could close or open
a marker (`<!--`, `-->`) escaped, so no fact can end the block early or fake one."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from graymatter_tui.core.errors import Conflict, InvalidInput
from graymatter_tui.core.textsafe import neutralise

BEGIN = "<!-- graymatter:begin"
END = "<!-- graymatter:end -->"
MAX_FACTS = 200
MAX_BODY_BYTES = 32 * 1024
FACT_BYTES = 1000
_DIGEST = re.compile(r"\bsha256=([0-9a-f]{16})\b")


class EditedByHand(Conflict):
    """The block's lines differ from what was last written there."""


@dataclass(frozen=True)
class Synced:
    text: str  # the whole file as it should be
    action: str  # "created" (a new file), "added" (a block added), "updated", "unchanged"
    shown: int  # facts in the block
    left_out: int  # pinned facts beyond the block's limits


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def _item(text: str) -> str:
    flat = " ".join(neutralise(text, one_line=True).replace("\u23ce", " ").split())
    flat = flat.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
    raw = flat.encode("utf-8")
    if len(raw) > FACT_BYTES:
        flat = raw[: FACT_BYTES - 3].decode("utf-8", "ignore").rstrip() + "…"
    return f"- {flat}"


def body_for(agent: str, facts: list[str]) -> tuple[str, int, int]:
    """The block's lines for these fact texts (oldest first): (text, shown, left out)."""
    lines: list[str] = []
    size = 0
    for text in facts[:MAX_FACTS]:
        line = _item(text)
        if size + len(line.encode("utf-8")) + 1 > MAX_BODY_BYTES:
            break
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    left = len(facts) - len(lines)
    if not facts:
        lines.append(f"- (no pinned facts yet: `graymatter-tui pin ID` pins a fact of {agent})")
    if left:
        lines.append(f"- … and {left} more pinned facts (`graymatter-tui list {agent}`)")
    return "".join(line + "\n" for line in lines), len(facts) - left, left


def _begin_line(agent: str, body: str) -> str:
    name = json.dumps(neutralise(agent, one_line=True), ensure_ascii=False)
    name = name.replace("-->", "--&gt;")
    return (
        f"{BEGIN} agent={name} sha256={_digest(body)} (pinned facts, kept by "
        "`graymatter-tui context-sync`: change them in memory, not here) -->\n"
    )


def _find(lines: list[str]) -> tuple[int, int] | None:
    """(begin line, end line) of the block, None when there is none; refused when the
    markers are broken (one without the other, or more than one block)."""
    begins = [i for i, line in enumerate(lines) if line.startswith(BEGIN)]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise InvalidInput(
            "the graymatter markers in the file are broken (a begin without its end, or "
            "more than one block); fix them by hand, nothing was changed"
        )
    return begins[0], ends[0]


def sync(existing: str | None, agent: str, facts: list[str], *, force: bool = False) -> Synced:
    """The file `existing` (None: there is none) with its block holding `facts`."""
    body, shown, left = body_for(agent, facts)
    block = _begin_line(agent, body) + body + END + "\n"
    if existing is None:
        return Synced(block, "created", shown, left)
    lines = existing.splitlines(keepends=True)
    found = _find(lines)
    if found is None:
        if not existing.strip() or existing.endswith("\n\n"):
            glue = ""
        else:
            glue = "\n" if existing.endswith("\n") else "\n\n"
        return Synced(existing + glue + block, "added", shown, left)
    begin, end = found
    current = "".join(lines[begin + 1 : end])
    recorded = _DIGEST.search(lines[begin])
    if not force and (recorded is None or recorded.group(1) != _digest(current)):
        raise EditedByHand(
            "the graymatter block was edited by hand since it was last written; keep the "
            "edit elsewhere, or run again with --force to replace it"
        )
    text = "".join([*lines[:begin], block, *lines[end + 1 :]])
    action = "unchanged" if text == existing else "updated"
    return Synced(text, action, shown, left)
