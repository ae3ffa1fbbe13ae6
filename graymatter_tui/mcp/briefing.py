"""The briefing an agent reads when it connects: the `instructions` of the MCP
`initialize` reply, which clients put in front of the model with the tools (ADR 0053).

A memory server that agents seldom call stays empty, and the tools' own descriptions say
how to call each tool, not when. These few lines say when: search before answering or
redoing work, add what a later session will need (never secrets), reflect when a fact
turned out wrong. Every connected agent pays for them on every request, so they are kept
to a few hundred bytes (tests/mcp_server/test_briefing.py holds the limit), and they
name the agent id and the limits this server was started with, which the model could not
otherwise know."""

from __future__ import annotations

import json

from graymatter_tui.core.review_modes import HELD_BY_MODE

# The most the briefing may take, in bytes of UTF-8 (about 150 tokens), agent name aside.
MAX_BRIEFING_BYTES = 700
SHARED_AGENT = "__shared__"


def briefing(
    *, default_agent: str | None = None, read_only: bool = False, review: str = "none"
) -> str:
    """The `instructions` text for a server started with these options."""
    lines = [
        "Long-term memory that outlives this session.",
        "- memory_search before answering about this project or redoing work: the answer "
        "or an earlier decision may be there.",
    ]
    if read_only:
        lines.append("- This server is read-only: it searches, it stores nothing.")
    else:
        lines += [
            "- memory_add decisions, conventions and facts a later session will need, one "
            "fact a call; never secrets (keys, tokens, passwords).",
            "- memory_reflect when a fact turned out wrong: update it (text = correction, "
            "target = old text) or forget it.",
        ]
        held = HELD_BY_MODE.get(review, frozenset())
        if held:
            what = "New facts and corrections" if "add" in held else "Corrections"
            lines.append(f"- {what} wait for a person's review before they apply.")
    if default_agent is not None:
        lines.append(
            f"- Use agent_id {json.dumps(default_agent, ensure_ascii=False)}; "
            f'"{SHARED_AGENT}" holds facts shared by every agent.'
        )
    else:
        lines.append(f'- agent_id "{SHARED_AGENT}" holds facts shared by every agent.')
    return "\n".join(lines)
