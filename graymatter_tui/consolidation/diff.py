"""The proposal diff as data: what the TUI and `journal show` draw for one cycle.

Built from a CycleRecord alone, so a cycle's diff can be replayed from the journal long
after its facts have changed or been pruned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graymatter_tui.consolidation.review import read_proposal
from graymatter_tui.core.model import CycleRecord, ReviewProposal
from graymatter_tui.core.words import counted

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
    # Said instead of the cycle's counts (a held change's diff, which has no batch).
    summary_line: str = ""

    @property
    def counts_line(self) -> str:
        if self.summary_line:
            return self.summary_line
        if self.outcome == PROPOSED:
            return (
                f"as proposed, before review: {self.consumed} named for consumption · "
                f"{self.kept} not named · {counted(self.ignored, 'id')} outside the batch"
            )
        if self.outcome == "applied":
            verb = "consumed"
        elif not self.outcome:
            verb = "to consume"  # at review, before apply
        else:
            verb = f"proposed for consumption, not applied ({self.outcome})"
        return (
            f"{self.consumed} {verb} · {self.kept} kept · {self.guarded} kept by the guard · "
            f"{counted(self.ignored, 'id')} ignored"
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


# What each held action does to the facts it matched, for a person deciding on it.
_HELD_EFFECT = {
    "update": "superseded by the new text",
    "forget": "forgotten (a tombstone, no replacement)",
    "pin": "pinned",
    "unpin": "unpinned",
}


def build_review_diff(proposal: ReviewProposal) -> Diff:
    """A held change drawn like a consolidation's proposal: the facts it would make
    tombstones (−), the text it would write (+), the facts whose pin it would change."""
    if proposal.is_pair:
        return _pair_diff(proposal)
    rows: list[DiffRow] = []
    gone = proposal.action in ("update", "forget")
    for match in proposal.matches:
        effect = _HELD_EFFECT[proposal.action]
        kind: RowKind = "consumed" if gone else "kept"
        rows.append(DiffRow(kind, match.id, match.text, effect))
    if proposal.action in ("add", "update"):
        note = "new fact" if proposal.action == "add" else "replacement"
        rows.append(DiffRow("summary", "", proposal.text, note))
    n = len(proposal.matches)
    facts = counted(n, "fact")
    verb = {"pending": "would be", "approved": "were"}.get(proposal.status, "would have been")
    line = {
        "add": f"1 new fact {'was' if proposal.status == 'approved' else 'would be'} written",
        "update": f"{facts} {verb} superseded by 1 new fact",
        "forget": f"{facts} {verb} forgotten",
        "pin": f"{facts} {verb} pinned",
        "unpin": f"{facts} {verb} unpinned",
    }[proposal.action]
    return Diff(
        rows=rows,
        consumed=n if gone else 0,
        kept=0 if gone else n,
        guarded=0,
        ignored=0,
        outcome=proposal.status,
        summary_line=f"{line} · {proposal.status}",
    )


def _pair_diff(proposal: ReviewProposal) -> Diff:
    """A pair item: the fact an approval would make a tombstone (−), pointing at the one
    it keeps ( ), each named by id, with the reason the pair was raised."""
    texts = {m.id: m.text for m in proposal.matches}
    update = proposal.action == "possible_update"
    dropped, kept = proposal.dropped_id, proposal.kept_id
    rows = [
        DiffRow(
            "consumed",
            dropped,
            texts.get(dropped, ""),
            f"superseded by {kept}, the {'newer' if update else 'held'} fact",
        ),
        DiffRow("kept", kept, texts.get(kept, ""), "kept" + ("" if update else "; says it all")),
    ]
    verb = {"pending": "would be", "approved": "was"}.get(proposal.status, "would have been")
    line = (
        f"the held fact {verb} superseded by the newer one"
        if update
        else f"the newer copy {verb} superseded by the held fact"
    )
    return Diff(
        rows=rows,
        consumed=1,
        kept=1,
        guarded=0,
        ignored=0,
        outcome=proposal.status,
        summary_line=f"{line} · {proposal.status}",
    )
