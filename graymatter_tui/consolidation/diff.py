"""The proposal diff as data: what the TUI and `journal show` draw for one cycle.

Built from a CycleRecord alone, so a cycle's diff can be replayed from the journal long
after its facts have changed or been pruned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graymatter_tui.consolidation.review import read_proposal
from graymatter_tui.model import CycleRecord

RowKind = Literal["consumed", "kept", "guarded", "summary", "ignored", "contradiction"]
# The outcome of a diff drawn between propose and review: nothing is decided yet.
PROPOSED = "proposed"
# Read like a diff: what goes (−), what replaces it (+), then what stayed and why.
_ORDER = {"consumed": 0, "summary": 1, "guarded": 2, "ignored": 3, "contradiction": 4, "kept": 5}


@dataclass(frozen=True)
class DiffRow:
    kind: RowKind
    id: str
    text: str
    note: str = ""

    @property
    def sign(self) -> str:
        return {"consumed": "−", "summary": "+", "guarded": "!", "ignored": "?"}.get(self.kind, " ")


@dataclass(frozen=True)
class Diff:
    rows: list[DiffRow]
    consumed: int
    kept: int
    guarded: int
    ignored: int

    outcome: str = "applied"

    @property
    def counts_line(self) -> str:
        if self.outcome == PROPOSED:
            return (
                f"as proposed, before review: {self.consumed} named for consumption · "
                f"{self.kept} not named · {self.ignored} ids outside the batch"
            )
        if self.outcome == "applied":
            verb = "consumed"
        elif not self.outcome:
            verb = "to consume"  # at review, before apply
        else:
            verb = f"proposed for consumption, not applied ({self.outcome})"
        return (
            f"{self.consumed} {verb} · {self.kept} kept · {self.guarded} kept by the guard · "
            f"{self.ignored} ids ignored"
        )


def build_diff(record: CycleRecord) -> Diff:
    consumed = set(record.consumed) if record.outcome == "applied" else set()
    planned = {v.id for v in record.verdicts if v.consumed}
    if record.outcome != "applied":
        consumed = planned
    guarded = {v.id: v.missing for v in record.verdicts if not v.consumed}
    rows: list[DiffRow] = []
    for item in record.batch_facts:
        if item.id in consumed:
            rows.append(DiffRow("consumed", item.id, item.text, f"weight {item.weight:.3f}"))
        elif item.id in guarded:
            missing = ", ".join(guarded[item.id][:6])
            rows.append(DiffRow("guarded", item.id, item.text, f"kept: summary lacks {missing}"))
        else:
            rows.append(DiffRow("kept", item.id, item.text, "not consumed"))
    if record.summary_text:
        note = f"summary {record.summary_id}" if record.summary_id else "proposed summary"
        rows.append(DiffRow("summary", record.summary_id, record.summary_text, note))
    for ignored in record.ignored:
        rows.append(DiffRow("ignored", ignored.id, "", ignored.reason))
    for note in record.contradictions:
        rows.append(DiffRow("contradiction", "", note, "contradiction noted by the summariser"))
    rows.sort(key=lambda r: _ORDER[r.kind])
    return Diff(
        rows=rows,
        consumed=sum(1 for r in rows if r.kind == "consumed"),
        kept=sum(1 for r in rows if r.kind == "kept"),
        guarded=len(guarded),
        ignored=len(record.ignored),
        outcome=record.outcome,
    )


def build_proposal_diff(record: CycleRecord, raw: str, *, structured: bool) -> Diff:
    """What the summariser proposed, before review: its summary and every id it named for
    consumption, as it named them (review then keeps only batch ids and runs the guard).
    Parsed by review's own parser; raises review.InvalidProposal when review would
    discard the answer unread."""
    proposal = read_proposal(raw, record.batch_facts, structured=structured)
    batch = {item.id for item in record.batch_facts}
    named: list[str] = []
    rows: list[DiffRow] = []
    for fact_id in proposal.consumes:
        shown = fact_id[:64]
        if fact_id in named:
            rows.append(DiffRow("ignored", shown, "", "named twice"))
        elif fact_id not in batch:
            rows.append(DiffRow("ignored", shown, "", "not in the batch shown to the summariser"))
        else:
            named.append(fact_id)
    for item in record.batch_facts:
        if item.id in named:
            rows.append(DiffRow("consumed", item.id, item.text, "named for consumption"))
        else:
            rows.append(DiffRow("kept", item.id, item.text, "not named"))
    rows.append(DiffRow("summary", "", proposal.summary, "proposed summary"))
    for note in proposal.contradictions:
        rows.append(DiffRow("contradiction", "", note, "contradiction noted by the summariser"))
    rows.sort(key=lambda r: _ORDER[r.kind])
    return Diff(
        rows=rows,
        consumed=len(named),
        kept=len(record.batch_facts) - len(named),
        guarded=0,
        ignored=sum(1 for r in rows if r.kind == "ignored"),
        outcome=PROPOSED,
    )
