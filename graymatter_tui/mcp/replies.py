"""What a tool answers: the text an agent reads and its structured twin. The wording of
the texts is upstream's; clients and prompts match on it, so change it only together
with `tools.py`'s output schemas and the contract tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graymatter_tui.core.model import ReviewProposal
from graymatter_tui.core.provenance import describe
from graymatter_tui.core.receipts import lineage_summary
from graymatter_tui.recall.explain_fields import signal_summary


@dataclass(frozen=True)
class Reply:
    text: str
    structured: dict[str, Any] = field(default_factory=dict)


def _line(text: str) -> str:
    # One fact a line: a newline inside a fact would read as the start of the next one.
    return " ".join(text.splitlines())


def numbered(facts: list[str]) -> str:
    return "\n".join(f"{n}. {_line(text)}" for n, text in enumerate(facts, start=1))


def search_reply(agent: str, query: str, facts: list[str]) -> Reply:
    structured = {"agent_id": agent, "query": query, "count": len(facts), "facts": facts}
    if not facts:
        return Reply(f'No memories found for agent "{agent}".', structured)
    head = f'Found {len(facts)} relevant memories for agent "{agent}":'
    return Reply(f"{head}\n\n{numbered(facts)}", structured)


def batch_reply(agent: str, per_query: list[tuple[str, list[str]]]) -> Reply:
    merged = list(dict.fromkeys(text for _, facts in per_query for text in facts))
    results = [{"query": q, "count": len(f), "facts": f} for q, f in per_query]
    structured = {"agent_id": agent, "count": len(merged), "facts": merged, "results": results}
    if not merged:
        return Reply(f'No memories found for agent "{agent}".', structured)
    blocks = [
        f'Found {len(merged)} relevant memories for agent "{agent}" across '
        f"{len(per_query)} queries:\n\n{numbered(merged)}"
    ]
    for query, facts in per_query:
        listing = numbered(facts) if facts else "(none)"
        blocks.append(f'Query "{_line(query)}": {len(facts)} found\n{listing}')
    return Reply("\n\n".join(blocks), structured)


def add_reply(agent: str, held: Sequence[ReviewProposal] = ()) -> Reply:
    """Upstream's answer; the structured part also names the review items the fact
    raised (a duplicate or possible update of a live fact), when it raised any."""
    structured: dict[str, Any] = {"agent_id": agent, "stored": True}
    return Reply(f'Memory stored for agent "{agent}".', _with_items(structured, held))


def reflect_reply(
    action: str, agent: str, detail: str, held: Sequence[ReviewProposal] = ()
) -> Reply:
    structured: dict[str, Any] = {"action": action, "agent": agent, "ok": True}
    return Reply(
        f'Reflected "{action}" for agent "{agent}": {detail}.', _with_items(structured, held)
    )


def _with_items(structured: dict[str, Any], held: Sequence[ReviewProposal]) -> dict[str, Any]:
    if held:
        structured["review"] = [
            {"proposal_id": p.id, "kind": p.action, "held_fact_id": p.held_id, "why": p.why}
            for p in held
        ]
    return structured


def held_reflect_reply(action: str, agent: str, proposal_id: str) -> Reply:
    """A curation held for review (`mcp --review`): nothing changed yet."""
    return Reply(
        f'Reflect "{action}" for agent "{agent}" held for review as {proposal_id}: '
        "nothing changes until a person approves it.",
        {"action": action, "agent": agent, "ok": True, "held": True, "proposal_id": proposal_id},
    )


def held_add_reply(agent: str, proposal_id: str) -> Reply:
    """A new fact held for review (`mcp --review all`): not stored yet."""
    return Reply(
        f'Memory for agent "{agent}" held for review as {proposal_id}: it is stored once '
        "a person approves it.",
        {"agent_id": agent, "stored": False, "held": True, "proposal_id": proposal_id},
    )


def alias_reply(agent: str, term: str, equivalents: list[str]) -> Reply:
    listed = ", ".join(f'"{e}"' for e in equivalents)
    return Reply(
        f'Alias saved for agent "{agent}": "{term}" also means {listed}.',
        {"agent_id": agent, "term": term, "equivalents": equivalents},
    )


def checkpoint_saved_reply(agent: str, checkpoint_id: str, created_at: str) -> Reply:
    return Reply(
        f'Checkpoint "{checkpoint_id}" saved for agent "{agent}".',
        {"agent_id": agent, "checkpoint_id": checkpoint_id, "created_at": created_at},
    )


def checkpoint_reply(
    agent: str, checkpoint_id: str, created_at: str, state: dict[str, Any] | None
) -> Reply:
    structured: dict[str, Any] = {"id": checkpoint_id, "created_at": created_at}
    lines = [
        f'Checkpoint "{checkpoint_id}" restored for agent "{agent}".',
        f"Created: {created_at}",
    ]
    if state is not None:
        structured["state"] = state
        messages = state.get("messages")
        if isinstance(messages, list):
            structured["message_count"] = len(messages)
        body = json.dumps(state, indent=2, ensure_ascii=False)
        lines += ["State:", *("  " + line for line in body.splitlines())]
    return Reply("\n".join(lines), structured)


def no_checkpoint_reply(agent: str) -> Reply:
    return Reply(f'No checkpoint saved for agent "{agent}".', {"found": False, "agent_id": agent})


def explained_reply(reply: Reply, why: list[dict[str, Any]]) -> Reply:
    """A search reply with, per fact, why it ranked where it did (`explain: true`)."""
    lines = [
        f"{n}. id {w['fact_id']} · {signal_summary(w)} · "
        f"score {w['score']} · weight {w['weight']:.3f} · "
        f"written {w['written_at']} by {describe(w['source'])} · "
        f"{lineage_summary(w)}"
        for n, w in enumerate(why, start=1)
    ]
    text = reply.text + ("\n\nWhy:\n" + "\n".join(lines) if lines else "")
    return Reply(text, {**reply.structured, "explain": why})
