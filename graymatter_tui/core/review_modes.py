"""What `mcp --review` holds for a person instead of applying (ADR 0027): the modes and
the `memory_reflect` actions each holds. The MCP server acts on them; the TUI's Review
tab and the CLI name them."""

from __future__ import annotations

# upstream's `memory_reflect` actions, in its order
REFLECT_ACTIONS = ("add", "update", "forget", "link", "pin", "unpin")
REVIEW_MODES = ("none", "curation", "all")
HELD_BY_MODE: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "curation": frozenset({"update", "forget", "pin", "unpin"}),
    "all": frozenset({"add", "update", "forget", "pin", "unpin"}),
}
