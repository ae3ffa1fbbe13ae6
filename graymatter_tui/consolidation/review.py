"""Review: pure code that turns a summariser's untrusted answer into an apply plan.

Nothing here touches the store; `lookup` only explains why an ID outside the batch was
ignored (unknown, pinned, tombstone, another agent's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from graymatter_tui.consolidation import guard
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import ApplyPlan, BatchItem, Fact, GuardVerdict, IgnoredId, Proposal
from graymatter_tui.core.textsafe import validate_text


class InvalidProposal(Exception):
    """The answer is not a usable proposal; the message says why."""


@dataclass(frozen=True)
class Review:
    proposal: Proposal | None
    plan: ApplyPlan


def strip_code_fence(raw: str) -> str:
    """Remove surrounding ``` / ```json fences, repeatedly, as models like to add them."""
    text = raw.strip()
    while True:
        if text.startswith("```"):
            text = text[3:].lstrip(" \t")
            if text[:4].lower() == "json":
                text = text[4:]
            text = text.strip()
        elif text.endswith("```"):
            text = text[:-3].strip()
        else:
            return text


def parse_proposal(raw: str) -> Proposal:
    text = strip_code_fence(raw)
    if not text:
        raise InvalidProposal("the response is empty")
    try:
        obj: Any = msgspec.json.decode(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidProposal("the response is not valid UTF-8") from None
    except msgspec.DecodeError as exc:
        raise InvalidProposal(f"the response is not valid JSON ({exc})") from None
    except RecursionError:
        raise InvalidProposal("the response is JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise InvalidProposal(f"the response is JSON but not an object ({type(obj).__name__})")
    summary = obj.get("summary")
    consumes = obj.get("consumes")
    contradictions = obj.get("contradictions", [])
    if not isinstance(summary, str):
        raise InvalidProposal("'summary' is missing or not a string")
    if not isinstance(consumes, list) or not all(isinstance(i, str) for i in consumes):
        raise InvalidProposal("'consumes' is missing or not a list of strings")
    if contradictions is None:
        contradictions = []
    if not isinstance(contradictions, list) or not all(isinstance(c, str) for c in contradictions):
        raise InvalidProposal("'contradictions' is not a list of strings")
    if not summary.strip():
        raise InvalidProposal("the summary is empty")
    if not consumes:
        raise InvalidProposal("'consumes' is empty")
    try:
        validate_text(summary.strip())
    except InvalidInput as exc:
        raise InvalidProposal(f"the summary is unusable: {exc}") from None
    return Proposal(summary=summary.strip(), consumes=consumes, contradictions=contradictions)


def _why_ignored(fact_id: str, agent: str, lookup: Callable[[str], Fact | None]) -> str:
    fact = lookup(fact_id) if len(fact_id) <= 64 else None
    if fact is None:
        return "unknown id (not a fact in the store)"
    if fact.agent_id != agent:
        return "belongs to another agent"
    if fact.pinned:
        return "pinned (pinned facts are never consumed)"
    if fact.is_tombstone:
        return "already a tombstone"
    return "not in the batch shown to the summariser"


def plan(
    proposal: Proposal,
    batch: list[BatchItem],
    *,
    agent: str,
    guard_mode: str,
    lookup: Callable[[str], Fact | None],
) -> ApplyPlan:
    """Clamp `consumes` to the batch, then let the coverage guard keep facts whose key
    details the summary lost. Every ID left out is reported with its reason."""
    texts = {item.id: item.text for item in batch}
    ignored: list[IgnoredId] = []
    chosen: list[str] = []
    for fact_id in proposal.consumes:
        shown = fact_id[:64]
        if fact_id in chosen:
            ignored.append(IgnoredId(id=shown, reason="duplicate"))
        elif fact_id not in texts:
            ignored.append(IgnoredId(id=shown, reason=_why_ignored(fact_id, agent, lookup)))
        else:
            chosen.append(fact_id)
    verdicts: list[GuardVerdict] = [
        guard.check(fact_id, texts[fact_id], proposal.summary, guard_mode) for fact_id in chosen
    ]
    consume = [v.id for v in verdicts if v.consumed]
    reason = ""
    if not chosen:
        reason = "nothing to consume: every id in the proposal was ignored"
    elif not consume:
        reason = "nothing to consume: the coverage guard kept every fact (details missing)"
    return ApplyPlan(
        summary=proposal.summary,
        consume=consume,
        ignored=ignored,
        verdicts=verdicts,
        contradictions=proposal.contradictions,
        guard_mode=guard_mode,
        discard_reason=reason,
    )


def review(
    raw: str,
    batch: list[BatchItem],
    *,
    structured: bool,
    agent: str,
    guard_mode: str,
    lookup: Callable[[str], Fact | None],
) -> Review:
    """Parse, clamp and guard the summariser's answer. A structured answer is JSON; a
    plain-text summary (the Anthropic path) consumes the whole batch: that path predates
    structured proposals, and upstream GrayMatter keeps its meaning the same way."""
    try:
        proposal = parse_proposal(raw) if structured else _text_proposal(raw, batch)
    except InvalidProposal as exc:
        return Review(None, _discarded(str(exc), guard_mode))
    return Review(
        proposal, plan(proposal, batch, agent=agent, guard_mode=guard_mode, lookup=lookup)
    )


def _text_proposal(raw: str, batch: list[BatchItem]) -> Proposal:
    summary = raw.strip()
    if not summary:
        raise InvalidProposal("the summariser returned an empty summary")
    try:
        validate_text(summary)
    except InvalidInput as exc:
        raise InvalidProposal(f"the summary is unusable: {exc}") from None
    return Proposal(summary=summary, consumes=[item.id for item in batch])


def read_proposal(raw: str, batch: list[BatchItem], *, structured: bool) -> Proposal:
    """The proposal as the summariser made it, before review: the same parsing review
    does, without clamping its ids to the batch or running the guard. Raises
    InvalidProposal when review would discard the answer unread."""
    return parse_proposal(raw) if structured else _text_proposal(raw, batch)


def _discarded(reason: str, guard_mode: str) -> ApplyPlan:
    return ApplyPlan(summary="", consume=[], guard_mode=guard_mode, discard_reason=reason)
