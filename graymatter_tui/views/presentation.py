"""How a fact is described to a person, shared by `show` and the TUI's detail screen.
Values are stored text as it is: the CLI's `say` and the TUI's `literal` make them safe
where they are shown."""

from __future__ import annotations

from graymatter_tui.core import provenance
from graymatter_tui.core.confidence import shown
from graymatter_tui.core.model import Fact
from graymatter_tui.core.retirement import Retirement
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore


def fact_state(fact: Fact, retirement: Retirement | None = None) -> str:
    """Live, replaced, or retired, and by what: a revert or an approved review names its
    journal record (`retirement`), anything else was retired by an agent or by hand."""
    if fact.is_live:
        return "live, pinned" if fact.pinned else "live"
    if retirement is not None:
        return f"tombstone ({retirement.describe()}, no replacement)"
    if fact.is_retired:
        return "tombstone (retired by agent, no replacement)"
    return f"tombstone (superseded by {fact.superseded_by})"


def fact_fields(fact: Fact, retirement: Retirement | None = None) -> list[tuple[str, str]]:
    """(label, value) rows for every field of a fact."""
    return [
        ("id", fact.id),
        ("agent", fact.agent_id),
        ("state", fact_state(fact, retirement)),
        ("weight", f"{fact.weight:.4f}"),
        ("created", fact.created_at),
        ("accessed", f"{fact.accessed_at} ({counted(fact.access_count, 'time')})"),
        ("pinned at", fact.pinned_at or "—"),
        ("cycle", fact.cycle_id or "—"),
        ("source", provenance.describe(fact.source)),
        # Only for a fact that has one: an unlabelled fact's rows are as they were.
        *([("confidence", shown(fact.confidence))] if fact.confidence is not None else []),
    ]


def store_badges(store: MemoryStore, read_only: bool) -> str:
    """The TUI top bar's badges: read-only (and read without LMDB's reader lock, ADR 0012),
    and the demo's own store (ADR 0011)."""
    badges = []
    if read_only:
        badges.append("[READ-ONLY]")
    if store.lockless:
        badges.append("[NO LOCK]")
    if store.is_demo():
        badges.append("[DEMO]")
    pending = store.pending_count()
    if pending:  # agents' changes wait for a person (Review tab, ADR 0027)
        badges.append(f"[{pending} TO REVIEW]")
    return "".join(f" {badge}" for badge in badges)
