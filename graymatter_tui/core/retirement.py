"""What retired a fact that has no replacement (`superseded_by` "agent"), read from the
journal so a person auditing later can tell a revert, or an approved review, from an
agent's own retirement.

Nothing extra is stored: upstream's `superseded_by` stays "agent", and the journal
already says it. A summary retired by a revert still names (`cycle_id`) the cycle that
wrote it, whose record names the revert (`reverted_by`); a fact an approved `forget`
retired names the review's record, which lists it among what it consumed. So stores of
every release answer alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graymatter_tui.core.model import CycleRecord, Fact


@dataclass(frozen=True)
class Retirement:
    """The journal record that retired a fact: a revert (`undone` is the cycle or review
    it undid) or an approved review whose `forget` retired it (`undone` is None)."""

    record: CycleRecord
    undone: CycleRecord | None = None

    @property
    def by_revert(self) -> bool:
        return self.record.kind == "revert"

    @property
    def restored(self) -> list[str]:
        """For a revert: the facts it made live again (what the summary had consumed)."""
        return list(self.record.restored) if self.by_revert else []

    def short(self) -> str:
        """`retired by revert R`, for a row with little room."""
        return f"retired by {'revert' if self.by_revert else 'review'} {self.record.cycle_id}"

    def describe(self) -> str:
        """`retired by revert R of cycle C`, for people (ids and names, no stored text)."""
        record = self.record
        if self.by_revert and self.undone is not None:
            what = "review" if self.undone.kind == "review" else "cycle"
            return f"retired by revert {record.cycle_id} of {what} {self.undone.cycle_id}"
        asked = f" asked by {record.asked_by}" if record.asked_by else ""
        return (
            f"retired by review {record.cycle_id} ({record.action}{asked}, "
            f"approved by {record.decided_by or 'a person'})"
        )


def retirement_of(
    fact: Fact, find_record: Callable[[str], CycleRecord | None]
) -> Retirement | None:
    """The record that retired `fact`, or None (live, replaced, retired by hand or by an
    agent's own forget, or a journal that no longer holds the record)."""
    if not fact.is_retired or not fact.cycle_id:
        return None
    origin = find_record(fact.cycle_id)
    if origin is None:
        return None
    if origin.reverted_by and origin.summary_id == fact.id:
        revert = find_record(origin.reverted_by)
        return Retirement(revert, origin) if revert is not None else None
    if (
        origin.kind == "review"
        and origin.outcome == "applied"
        and not origin.reverted_by
        and fact.id in origin.consumed
    ):
        return Retirement(origin)
    return None


def retirement_key(retirement: Retirement | None) -> dict[str, str]:
    """The key a fact's JSON gains when the journal retired it: `retired_by`, the id of
    that record (only added, so every other key keeps its meaning)."""
    return {} if retirement is None else {"retired_by": retirement.record.cycle_id}
