"""Quality and size over time (`status --history`, the Status tab's history): one point
per journal record of an agent, read from the journal alone.

At each point: the probes' hit rate where probes were scored there (a probe run, or a
consolidation cycle's review), the agent's live facts and tombstones where the record
counted them (probe runs), and the agent's running totals up to and including that
record: consolidations applied, facts they consumed, reverts, review decisions.

A probe *hits* when its top k holds at least one fact: recall answers only with facts
that share a word (or, with embeddings, a meaning) with the query, so a probe that
finds nothing is a question the memory can no longer answer. At a cycle the figure is
the store as the cycle left it: after the apply when it applied, before it otherwise.
"""

from __future__ import annotations

from typing import TypedDict

from graymatter_tui.core.errors import NotFound
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.storage import MemoryStore


class HistoryPoint(TypedDict):
    """`status --history --json`: a list of these, oldest first."""

    at: str  # RFC 3339 UTC: when the record finished (a cycle: when it started, if not)
    agent_id: str
    record_id: str  # the journal record (`journal show ID`)
    event: str  # probe_run, consolidate, revert, review
    outcome: str
    trigger: str  # probe runs: schedule, cli, tui; otherwise ""
    probes: int  # probes scored at this point (0: none were)
    probe_hits: int
    probe_hit_rate: float | None  # probe_hits / probes; None where none were scored
    probes_lost: int  # facts a cycle's probes would lose (0 for every other record)
    live_facts: int | None  # None where the record did not count them
    tombstones: int | None
    consolidations: int  # running totals of this agent, this record included
    facts_consumed: int
    reverts: int
    review_decisions: int


class _Totals:
    __slots__ = ("consolidations", "facts_consumed", "reverts", "review_decisions")

    def __init__(self) -> None:
        self.consolidations = self.facts_consumed = self.reverts = self.review_decisions = 0

    def add(self, record: CycleRecord) -> None:
        if record.kind == "consolidate" and record.outcome == "applied":
            self.consolidations += 1
            self.facts_consumed += len(record.consumed)
        elif record.kind == "revert":
            self.reverts += 1
        elif record.kind == "review" and record.outcome:
            self.review_decisions += 1


def _hits(record: CycleRecord) -> int:
    if record.kind == "consolidate" and record.outcome == "applied":
        return sum(1 for p in record.probes if p.after)
    return sum(1 for p in record.probes if p.before)


def point(record: CycleRecord, totals: _Totals) -> HistoryPoint:
    probes = len(record.probes)
    hits = _hits(record)
    counted = record.kind == "probe_run"
    return {
        "at": record.finished_at or record.started_at,
        "agent_id": record.agent_id,
        "record_id": record.cycle_id,
        "event": record.kind,
        "outcome": record.outcome,
        "trigger": record.trigger,
        "probes": probes,
        "probe_hits": hits,
        "probe_hit_rate": round(hits / probes, 4) if probes else None,
        "probes_lost": record.probes_lost if record.kind == "consolidate" else 0,
        "live_facts": record.live_facts if counted else None,
        "tombstones": record.tombstones if counted else None,
        "consolidations": totals.consolidations,
        "facts_consumed": totals.facts_consumed,
        "reverts": totals.reverts,
        "review_decisions": totals.review_decisions,
    }


def series(records: list[CycleRecord]) -> list[HistoryPoint]:
    """The points of these journal records (any order; a cycle still running, or whose
    process died before it ended, is no point yet), oldest first."""
    totals: dict[str, _Totals] = {}
    out: list[HistoryPoint] = []
    for record in sorted(records, key=lambda r: r.cycle_id):
        if not record.outcome or record.outcome == "dry_run":
            continue
        mine = totals.setdefault(record.agent_id, _Totals())
        mine.add(record)
        out.append(point(record, mine))
    return out


def history(store: MemoryStore, agent: str | None = None) -> list[HistoryPoint]:
    """Every point of `agent` (every agent's when None), oldest first. An agent the store
    does not know (no facts, no journal records, no probes) is NotFound."""
    if agent is not None:
        validate_agent(agent)
    records = store.records(agent)
    if agent is not None and not records and not known(store, agent):
        raise NotFound(f"no agent {agent!r} in this store")
    return series(records)


def known(store: MemoryStore, agent: str) -> bool:
    return any(a.agent_id == agent for a in store.agents()) or bool(store.probes(agent))


def agents_of(points: list[HistoryPoint]) -> list[str]:
    """The agents these points are of, in name order."""
    return sorted({p["agent_id"] for p in points})


# ---- the table people read (`status --history`, the Status tab's table) ------------------
# (title, width): 80 columns in all, so a terminal of 80 shows one row a line.
COLUMNS: tuple[tuple[str, int], ...] = (
    ("time (UTC)", 16),
    ("event", 16),
    ("hits", 5),
    ("live", 6),
    ("tombs", 6),
    ("applied", 7),
    ("used", 4),
    ("revert", 6),
    ("review", 6),
)
LEGEND = (
    "hits: probes that find something / probes scored (– none scored there)\n"
    "live, tombs: the agent's facts, counted at probe runs (– not counted)\n"
    "applied, used, revert, review: running totals of consolidations applied,\n"
    "the facts they consumed, reverts and review decisions"
)
DASH = "–"


def event_label(p: HistoryPoint) -> str:
    if p["event"] == "probe_run":
        return "probe run"
    if p["event"] == "revert":
        return "revert"
    if p["event"] == "review":
        return f"review {p['outcome']}"
    return f"cycle {p['outcome']}"


def when(p: HistoryPoint) -> str:
    return p["at"][:16].replace("T", " ")


def hits_text(p: HistoryPoint) -> str:
    return f"{p['probe_hits']}/{p['probes']}" if p["probes"] else DASH


def cells(p: HistoryPoint) -> list[str]:
    """The point's row, one string a column of `COLUMNS`."""

    def count(value: int | None) -> str:
        return DASH if value is None else str(value)

    return [
        when(p),
        event_label(p),
        hits_text(p),
        count(p["live_facts"]),
        count(p["tombstones"]),
        str(p["consolidations"]),
        str(p["facts_consumed"]),
        str(p["reverts"]),
        str(p["review_decisions"]),
    ]


def history_table(points: list[HistoryPoint]) -> list[str]:
    """Lines of a plain-text table of one agent's points, oldest first."""

    def line(values: list[str]) -> str:
        out = []
        for index, (value, (_title, width)) in enumerate(zip(values, COLUMNS, strict=True)):
            out.append(value.ljust(width) if index < 2 else value.rjust(width))
        return " ".join(out).rstrip()

    return [line([title for title, _width in COLUMNS]), *(line(cells(p)) for p in points)]
