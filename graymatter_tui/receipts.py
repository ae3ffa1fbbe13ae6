"""Receipt chains: a tombstone's `superseded_by` names the fact that replaced it, which
may itself have been replaced, and so on. A sound chain stays within one agent and ends
at a live fact, a retired one, or a pruned one whose copy is in the journal.

Pure functions over a lookup, shared by import (the file's facts over the store's) and
by `doctor` (the whole store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from graymatter_tui.model import Fact

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
