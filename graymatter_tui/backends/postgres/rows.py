"""A fact as a row of the `facts` table and back. The text column cannot hold NUL, which
a fact's text may (the LMDB store keeps it): such a text is kept exactly in `text_raw`,
and `text` holds it with U+FFFD for each NUL so the column stays readable."""

from __future__ import annotations

from typing import Any

from graymatter_tui.core.model import Fact

COLUMNS = (
    "id, agent_id, text, text_raw, created_at, accessed_at, access_count, weight, "
    "superseded_by, pinned, pinned_at, cycle_id, confidence, kind, source"
)
# Where a fact's columns are read from: its row and its weight (ADR 0041).
FACTS = "facts JOIN weights ON weights.fact_id = facts.id"
# The `facts` table's own columns: every column but the weight.
ROW_COLUMNS = COLUMNS.replace(" weight,", "")
SET_ROW = ", ".join(f"{name} = EXCLUDED.{name}" for name in ROW_COLUMNS.split(", ") if name != "id")
ROW_PLACEHOLDERS = ", ".join(["%s"] * len(ROW_COLUMNS.split(", ")))


def to_row_and_weight(fact: Fact) -> tuple[tuple[Any, ...], float]:
    """The `facts` row (no weight) and the weight, for writing."""
    row = to_row(fact)
    return row[:7] + row[8:], fact.weight


def to_row(fact: Fact) -> tuple[Any, ...]:
    text, raw = fact.text, None
    if "\x00" in text:
        text, raw = text.replace("\x00", "\ufffd"), text.encode("utf-8")
    return (
        fact.id,
        fact.agent_id,
        text,
        raw,
        fact.created_at,
        fact.accessed_at,
        fact.access_count,
        fact.weight,
        fact.superseded_by,
        fact.pinned,
        fact.pinned_at,
        fact.cycle_id,
        fact.confidence,
        fact.kind,
        fact.source,
    )


def from_row(row: tuple[Any, ...]) -> Fact:
    (fid, agent, text, raw, created, accessed, count, weight, by, pinned, pinned_at,
     cycle, confidence, kind, source) = row  # fmt: skip
    return Fact(
        id=fid,
        agent_id=agent,
        text=text if raw is None else bytes(raw).decode("utf-8"),
        created_at=created,
        accessed_at=accessed,
        access_count=count,
        weight=weight,
        superseded_by=by,
        pinned=pinned,
        pinned_at=pinned_at,
        cycle_id=cycle,
        confidence=confidence,
        kind=kind,
        source=source,
    )
