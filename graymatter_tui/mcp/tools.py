"""The seven tools as upstream GrayMatter's clients know them: names, argument names,
defaults, descriptions and the shape of each structured result. Keep them exact: agents
already wired to upstream call these without changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graymatter_tui.core.confidence import CONFIDENCES, MAX_WEIGHT
from graymatter_tui.core.review_modes import REFLECT_ACTIONS
from graymatter_tui.mcp.arguments import DEFAULT_TOP_K, MAX_QUERIES, MAX_TOP_K

MAX_DESCRIPTION = 800


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


def _obj(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, **extra}


_STR = {"type": "string"}
_AGENT = {
    "type": "string",
    "description": "The agent whose memory this is (`__shared__` is shared).",
}
_TOP_K = {
    "type": "integer",
    "description": f"How many facts to return (default {DEFAULT_TOP_K}).",
    "default": DEFAULT_TOP_K,
    "minimum": 1,
    "maximum": MAX_TOP_K,
}
_TEXTS = {"type": "array", "items": _STR}
# Upstream's clients send checkpoint state as a string holding a JSON object; recent ones
# send the object itself. Both are taken (and stored as the object's JSON text).
_STATE = {
    "anyOf": [{"type": "string"}, {"type": "object"}],
    "description": "The working state: a JSON object, or a string holding one.",
}
# Confidence (upstream's ADR-016), optional everywhere and off unless given.
_LEVELS = list(reversed(CONFIDENCES))  # highest first, as people read them
_CONFIDENCE = {
    "type": "string",
    "enum": _LEVELS,
    "description": "How sure the writer is: verified (checked), inferred (reasoned), "
    "unverified (heard). Leave it out when unknown.",
}
_MIN_CONFIDENCE = {
    "type": "string",
    "enum": _LEVELS,
    "description": "Only facts at least this sure; facts with no confidence pass only unverified.",
}
_CONFIDENCE_WEIGHT = {
    "type": "number",
    "minimum": 0,
    "maximum": MAX_WEIGHT,
    "default": 0,
    "description": "Rank by confidence too: a fact's score times 1 + w (verified), 1 - w "
    "(unverified), 1 (inferred, or no confidence). 0, the default, leaves ranking as is.",
}
_SEARCH_CONFIDENCE = {"min_confidence": _MIN_CONFIDENCE, "confidence_weight": _CONFIDENCE_WEIGHT}
# Present when a server run with --review held the write for a person (ADR 0027).
_HELD = {"held": {"type": "boolean"}, "proposal_id": _STR}
# The review items a fact just written raised: a duplicate or possible update of a live
# fact of the agent, waiting for a person (`graymatter-tui review`).
_RAISED = {
    "review": {
        "type": "array",
        "items": _obj(
            {"proposal_id": _STR, "kind": _STR, "held_fact_id": _STR, "why": _STR},
            ["proposal_id", "kind", "held_fact_id", "why"],
        ),
    }
}

MEMORY_SEARCH = ToolSpec(
    "memory_search",
    "Search an agent's memory for the facts most relevant to a query, ranked by keywords "
    "and recency. Returns a numbered list of fact texts (and a structured twin), or a "
    "'No memories found' notice when nothing matches. Use memory_search_batch for several "
    "queries at once; store facts with memory_add. Fails when agent_id or query is missing "
    "or top_k is outside 1-100.",
    _obj(
        {
            "agent_id": _AGENT,
            "query": _STR,
            "top_k": _TOP_K,
            "explain": {
                "type": "boolean",
                "default": False,
                "description": "Also say why each fact ranked (signal ranks, fused score, "
                "weight, source) and what it superseded, transitively (its lineage).",
            },
            **_SEARCH_CONFIDENCE,
        },
        ["agent_id", "query"],
    ),
    _obj(
        {
            "agent_id": _STR,
            "query": _STR,
            "count": {"type": "integer"},
            "facts": _TEXTS,
            "explain": {"type": "array", "items": {"type": "object"}},
            # Whether recall's vector signal took part; if not, why, and whether the
            # embedder failed (then the ranking is keyword and recency only).
            "vector": _obj(
                {"used": {"type": "boolean"}, "reason": _STR, "failed": {"type": "boolean"}},
                ["used"],
            ),
        },
        ["agent_id", "query", "count", "facts"],
    ),
)

MEMORY_SEARCH_BATCH = ToolSpec(
    "memory_search_batch",
    "Search an agent's memory for several queries in one call. Returns one merged, "
    "de-duplicated list of facts, then the list each query found. Use memory_search for a "
    f"single query. Fails when agent_id or queries is missing, queries is empty or has "
    f"more than {MAX_QUERIES} items, or top_k is outside 1-100.",
    _obj(
        {"agent_id": _AGENT, "queries": _TEXTS, "top_k": _TOP_K, **_SEARCH_CONFIDENCE},
        ["agent_id", "queries"],
    ),
    _obj(
        {
            "agent_id": _STR,
            "count": {"type": "integer"},
            "facts": _TEXTS,
            "results": {
                "type": "array",
                "items": _obj(
                    {"query": _STR, "count": {"type": "integer"}, "facts": _TEXTS},
                    ["query", "count", "facts"],
                ),
            },
        },
        ["agent_id", "count", "facts", "results"],
    ),
)

MEMORY_ADD = ToolSpec(
    "memory_add",
    "Store a new fact in an agent's memory. Returns a confirmation once it is durably "
    "written. Find facts again with memory_search; correct or retire them with "
    "memory_reflect. Fails when agent_id or text is missing, text is empty, over 64 KiB, "
    "or holds control or bidi characters.",
    _obj({"agent_id": _AGENT, "text": _STR, "confidence": _CONFIDENCE}, ["agent_id", "text"]),
    _obj(
        {"agent_id": _STR, "stored": {"type": "boolean"}, **_HELD, **_RAISED},
        ["agent_id", "stored"],
    ),
)

MEMORY_ALIAS = ToolSpec(
    "memory_alias",
    "Teach an agent's memory that a term means the same as other words, so later "
    "memory_search and memory_search_batch queries with the term also find facts that use "
    "its equivalents. Returns a confirmation naming the term and its equivalents. Fails "
    "when agent_id, term or equivalents is missing or equivalents is empty.",
    _obj(
        {"agent_id": _AGENT, "term": _STR, "equivalents": _TEXTS},
        ["agent_id", "term", "equivalents"],
    ),
    _obj(
        {"agent_id": _STR, "term": _STR, "equivalents": _TEXTS}, ["agent_id", "term", "equivalents"]
    ),
)

CHECKPOINT_SAVE = ToolSpec(
    "checkpoint_save",
    "Save a checkpoint of an agent's working state so a later session can pick up where "
    "this one stopped with checkpoint_resume. state is a JSON object encoded as a string. "
    "Returns the checkpoint's id and time. Fails when agent_id is missing or state is not "
    "a valid JSON object.",
    _obj({"agent_id": _AGENT, "state": _STATE}, ["agent_id"]),
    _obj(
        {"agent_id": _STR, "checkpoint_id": _STR, "created_at": _STR},
        ["agent_id", "checkpoint_id", "created_at"],
    ),
)

CHECKPOINT_RESUME = ToolSpec(
    "checkpoint_resume",
    "Restore an agent's latest checkpoint, saved by checkpoint_save. Returns its id, time "
    'and state. When none is saved it fails, unless on_missing is "empty": then it '
    "succeeds with found: false. Fails when agent_id is missing or on_missing is not "
    '"error" or "empty".',
    _obj(
        {
            "agent_id": _AGENT,
            "on_missing": {"type": "string", "enum": ["error", "empty"], "default": "error"},
        },
        ["agent_id"],
    ),
    {
        "type": "object",
        "properties": {
            "id": _STR,
            "created_at": _STR,
            "state": {"type": "object"},
            "message_count": {"type": "integer"},
            "found": {"type": "boolean"},
            "agent_id": _STR,
        },
    },
)

MEMORY_REFLECT = ToolSpec(
    "memory_reflect",
    "Curate an agent's memory: add a fact, update one (text is the correction, target the "
    "old fact's exact text; the old one becomes a tombstone pointing at it), forget, pin or "
    "unpin facts (target or text holds the exact text; every live match is changed), or "
    "link two entities (text to target). Returns a confirmation. Use memory_add for plain "
    "writes and memory_search to find exact texts. Fails on an unknown action, a missing "
    "agent_id (or agent), text or target, or when no live fact matches.",
    {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(REFLECT_ACTIONS)},
            "agent_id": _AGENT,
            "agent": {"type": "string", "description": "Deprecated: use agent_id."},
            "text": _STR,
            "target": _STR,
            "confidence": {
                **_CONFIDENCE,
                "description": "add and update: how sure the writer is (verified, inferred, "
                "unverified). An update without one takes the lowest of the facts it replaces.",
            },
        },
        "required": ["action"],
        "anyOf": [{"required": ["agent_id"]}, {"required": ["agent"]}],
    },
    _obj(
        {"action": _STR, "agent": _STR, "ok": {"type": "boolean"}, **_HELD, **_RAISED},
        ["action", "agent", "ok"],
    ),
)

TOOLS: tuple[ToolSpec, ...] = (
    MEMORY_SEARCH,
    MEMORY_SEARCH_BATCH,
    MEMORY_ADD,
    MEMORY_ALIAS,
    CHECKPOINT_SAVE,
    CHECKPOINT_RESUME,
    MEMORY_REFLECT,
)
