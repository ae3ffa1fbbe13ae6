"""Receipt chains: a tombstone's `superseded_by` names the fact that replaced it, which
may itself have been replaced, and so on. A sound chain stays within one agent and ends
at a live fact, a retired one, or a pruned one whose copy is in the journal.

Pure functions over a lookup, shared by import (the file's facts over the store's) and
by `doctor` (the whole store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from graymatter_tui.core.model import Fact
from graymatter_tui.core.words import counted

ProblemKind = Literal["absent", "other-agent", "loop"]


@dataclass(frozen=True)
class ChainProblem:
    fact_id: str
    kind: ProblemKind
    target: str  # the id its superseded_by names
    detail: str


def chain_problems(
    starts: Iterable[Fact], lookup: Callable[[str], Fact | None]
) -> list[ChainProblem]:
    """What is wrong with the receipt of each tombstone in `starts`: its replacement is
    absent, belongs to another agent, or the chain from it comes back on itself.

    `lookup` finds a fact (or its pruned copy) by id. Each fact is walked at most once
    across all starts, so checking a whole store is linear in its size."""
    problems: list[ChainProblem] = []
    sound: set[str] = set()  # facts whose chain is known to end
    for start in starts:
        if not start.is_tombstone or start.is_retired:
            continue
        target = lookup(start.superseded_by)
        if target is None:
            problems.append(
                ChainProblem(
                    start.id,
                    "absent",
                    start.superseded_by,
                    f"fact {start.id} is superseded by {start.superseded_by}, which does not exist",
                )
            )
            continue
        if target.agent_id != start.agent_id:
            problems.append(
                ChainProblem(
                    start.id,
                    "other-agent",
                    start.superseded_by,
                    f"fact {start.id} of agent {start.agent_id!r} is superseded by "
                    f"{target.id}, a fact of agent {target.agent_id!r}",
                )
            )
        loop = _walk(start, target, lookup, sound)
        if loop:
            problems.append(
                ChainProblem(
                    start.id,
                    "loop",
                    start.superseded_by,
                    f"the replacements of fact {start.id} run in a loop: {' → '.join(loop)}",
                )
            )
    return problems


def _walk(
    start: Fact, target: Fact, lookup: Callable[[str], Fact | None], sound: set[str]
) -> list[str]:
    """Follow the chain from `start`; the ids of the loop it runs into, or [] if it ends."""
    path = [start.id]
    position = {start.id: 0}
    current: Fact | None = target
    while current is not None and current.id not in sound:
        if current.id in position:
            return [*path[position[current.id] :], current.id]
        if not current.is_tombstone or current.is_retired:
            break
        position[current.id] = len(path)
        path.append(current.id)
        current = lookup(current.superseded_by)
    sound.update(path)
    return []


# ---- lineage: what a fact replaced, followed backwards ------------------------------------

# A revision chain or a summary of summaries is rarely more than a few deep; the caps keep
# one explained search bounded on a store with long histories (or corrupt ones).
MAX_LINEAGE_DEPTH = 16
MAX_LINEAGE_FACTS = 64


@dataclass(frozen=True)
class Ancestor:
    """A fact that `replaced_by` superseded; `fact` is None when it was pruned (its copy is
    in the journal)."""

    fact_id: str
    replaced_by: str
    depth: int  # 1 for what the fact itself replaced, 2 for what those replaced, …
    fact: Fact | None


@dataclass(frozen=True)
class Lineage:
    ancestors: list[Ancestor]
    capped: bool  # stopped at MAX_LINEAGE_DEPTH or MAX_LINEAGE_FACTS; there is more
    cycle: bool  # an id came back (corrupt receipts); the walk stopped there


def lineage(
    fact_id: str,
    predecessors: Callable[[str], Iterable[str]],
    lookup: Callable[[str], Fact | None],
    *,
    max_depth: int = MAX_LINEAGE_DEPTH,
    max_facts: int = MAX_LINEAGE_FACTS,
) -> Lineage:
    """Everything `fact_id` superseded, transitively, breadth first (nearest first).

    `predecessors` names the facts one id replaced (tombstones whose superseded_by is that
    id, and a summary's receipts). A retired fact (superseded_by "agent") has no successor,
    so it is never anyone's predecessor and nothing chains through it. Each id is visited
    once: an id met again is a cycle (corrupt data) or a shared ancestor, never re-walked."""
    ancestors: list[Ancestor] = []
    seen = {fact_id}
    on_path: dict[str, frozenset[str]] = {fact_id: frozenset({fact_id})}
    frontier = [fact_id]
    capped = cycle = False
    depth = 0
    while frontier:
        depth += 1
        following: list[str] = []
        for current in frontier:
            for previous in dict.fromkeys(predecessors(current)):
                if previous in on_path[current]:
                    cycle = True  # the chain comes back to an id it started from
                    continue
                if previous in seen:
                    continue
                if depth > max_depth or len(ancestors) >= max_facts:
                    capped = True
                    break
                seen.add(previous)
                fact = lookup(previous)
                if fact is not None and fact.is_retired:
                    continue  # corrupt receipt to a retired fact: no lineage through "agent"
                ancestors.append(Ancestor(previous, current, depth, fact))
                on_path[previous] = on_path[current] | {previous}
                following.append(previous)
        frontier = following
    return Lineage(ancestors, capped, cycle)


def lineage_fields(found: Lineage) -> dict[str, Any]:
    """The lineage as JSON keys, shared by `recall --explain --json` and MCP's explain."""
    return {
        "lineage": [
            {
                "fact_id": a.fact_id,
                "replaced_by": a.replaced_by,
                "depth": a.depth,
                "pruned": a.fact is None,
                "text": None if a.fact is None else a.fact.text,
                "source": None if a.fact is None else a.fact.source,
                "written_at": None if a.fact is None else a.fact.created_at,
                "cycle_id": None if a.fact is None else (a.fact.cycle_id or None),
            }
            for a in found.ancestors
        ],
        "lineage_capped": found.capped,
        "lineage_cycle": found.cycle,
    }


def lineage_summary(fields: Mapping[str, Any]) -> str:
    """One line for people from `lineage_fields`: how many facts it replaced, how deep,
    and why the walk stopped early. Ids and counts only, nothing stored."""
    ancestors: list[dict[str, Any]] = fields["lineage"]
    if not ancestors and not fields["lineage_cycle"]:
        return "replaced nothing"
    depth = max((a["depth"] for a in ancestors), default=0)
    parts = [f"replaced {counted(len(ancestors), 'fact')} ({depth} deep)"]
    if fields["lineage_capped"]:
        parts.append(
            f"capped at {MAX_LINEAGE_FACTS} facts, {MAX_LINEAGE_DEPTH} deep: there is more"
        )
    if fields["lineage_cycle"]:
        parts.append("stopped at a cycle of ids (corrupt receipts, see doctor)")
    return "; ".join(parts)
