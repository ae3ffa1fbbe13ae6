"""Probes checked against a cycle before it is applied (ADR 0039).

Every probe of the agent is ranked twice in one write transaction that is then
abandoned (`MemoryStore.trial_apply`): once on the store as it is, once after the very
apply the cycle would make (live facts minus the consumed ones, plus the summary). The
ranking is `recall.rank` itself in both, on keywords alone (the summary has no vector
until the embedder reaches it), so what a probe is shown here is what keyword recall
would answer.

Each result says what the apply does to the probe's top k:
- `replaced`: consumed facts it found whose summary it finds after;
- `lost`: consumed facts it found whose summary it does not find (nothing the probe
  finds carries them any more): these flag the cycle;
- `displaced`: kept facts that fell below the top k (still live: a larger k finds them);
- `gained`: new in the top k (the summary shows as `SUMMARY_MARK`); `moved`: re-ranked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar, cast

from graymatter_tui.core import clock
from graymatter_tui.core.errors import NotFound, ReadOnlyStore
from graymatter_tui.core.model import SUMMARY_MARK, CycleRecord, Probe, ProbeMove, ProbeResult
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.recall import ranking as recall
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import ApplyRequest, KeywordIndex, MemoryStore, ProbeScore

T = TypeVar("T")


@dataclass(frozen=True)
class ProbeCheck:
    """The probes' results, or why they could not be checked (`note`)."""

    results: list[ProbeResult] = field(default_factory=list)
    note: str = ""

    @property
    def lost(self) -> int:
        return sum(len(r.lost) for r in self.results)


class _OpenIndex:
    """What `recall.rank` reads of a store, answered from the trial's own transaction:
    rank asks only for `read_index`, so the ranking runs unchanged on the trial state."""

    def __init__(self, index: KeywordIndex) -> None:
        self._index = index

    def read_index(self, fn: Callable[[KeywordIndex], T]) -> T:
        return fn(self._index)


def _top(index: KeywordIndex, probes: list[Probe]) -> list[list[str]]:
    # Keywords alone: the summary the trial writes has no vector yet, and asking an
    # embedding server for every probe inside a write transaction would hold the writer.
    view = cast(MemoryStore, _OpenIndex(index))
    return [
        [h.fact.id for h in recall.rank(view, p.agent_id, p.query, k=p.k, vectors=NO_VECTORS)]
        for p in probes
    ]


def compare(
    probe: Probe, before: list[str], after: list[str], consumed: list[str], summary_id: str
) -> ProbeResult:
    """One probe's result from its top k before and after (see the module docstring)."""
    marked = [SUMMARY_MARK if i == summary_id else i for i in after]
    summary_found = SUMMARY_MARK in marked
    taken = set(consumed)
    dropped = [i for i in before if i not in marked]
    moved = [
        ProbeMove(id=i, before=rank, after=marked.index(i) + 1)
        for rank, i in enumerate(before, start=1)
        if i in marked and marked.index(i) + 1 != rank
    ]
    return ProbeResult(
        probe_id=probe.id,
        query=probe.query,
        k=probe.k,
        before=before,
        after=marked,
        lost=[i for i in dropped if i in taken and not summary_found],
        replaced=[i for i in dropped if i in taken and summary_found],
        displaced=[i for i in dropped if i not in taken],
        gained=[i for i in marked if i not in before],
        moved=moved,
    )


def check_probes(store: MemoryStore, request: ApplyRequest) -> ProbeCheck:
    """Every probe of the request's agent, before and after applying it (nothing is
    written). A store that cannot be written, or a proposal gone stale, is not checked;
    `note` says why."""
    probes = store.probes(request.agent_id)
    if not probes:
        return ProbeCheck()
    try:
        trial = store.trial_apply(request, lambda index: _top(index, probes))
    except ReadOnlyStore:
        return ProbeCheck(note="probes not checked: the store is read-only")
    if not trial.applied or trial.after is None:
        return ProbeCheck(note=f"probes not checked: {trial.reason}")
    return ProbeCheck(
        [
            compare(probe, before, after, trial.consumed, trial.summary_id)
            for probe, before, after in zip(probes, trial.before, trial.after, strict=True)
        ]
    )


# ---- probe runs: every probe scored now, kept in the journal -----------------------------
# What asked for a run: the schedule (`probe run --due`, or the MCP server or TUI finding
# a run due), or a person (the CLI's `probe run`, the TUI).
Trigger = Literal["schedule", "cli", "tui"]


def score(store: MemoryStore, probes: list[Probe]) -> list[ProbeScore]:
    """Each probe's top k now, in one read snapshot, ranked exactly as a cycle's review
    ranks them (keyword and recency: the same figure a cycle's probes give)."""
    if not probes:
        return []
    tops = store.read_index(lambda index: _top(index, probes))
    return [ProbeScore(probe=p, found=top) for p, top in zip(probes, tops, strict=True)]


NO_PROBES = "no probes to score: add one with `graymatter-tui probe add AGENT QUERY`"


def runnable(store: MemoryStore, agent: str | None) -> list[Probe]:
    """The probes a run of `agent` (every agent when None) would score; NotFound, saying
    why and what to do, when there are none (nothing is written either way)."""
    if agent is None:
        probes = store.probes()
        if not probes:
            raise NotFound(NO_PROBES)
        return probes
    validate_agent(agent)
    probes = store.probes(agent)
    if not probes:
        if not any(a.agent_id == agent for a in store.agents()):
            raise NotFound(f"no agent {agent!r} in this store")
        raise NotFound(
            f"agent {agent!r} has no probes: add one with `graymatter-tui probe add {agent} QUERY`"
        )
    return probes


def run_probes(
    store: MemoryStore, agent: str | None = None, trigger: Trigger = "cli"
) -> list[CycleRecord]:
    """Score every probe of `agent` (every agent's when None) and journal the results,
    one `probe_run` record per agent, oldest agent name first. An agent that is not in
    the store, or has no probes, is NotFound (with what to do about it)."""
    probes = runnable(store, agent) if agent is not None else store.probes()
    by_agent: dict[str, list[Probe]] = {}
    for probe in probes:
        by_agent.setdefault(probe.agent_id, []).append(probe)
    return [
        store.record_probe_run(name, score(store, mine), trigger, every_agent=agent is None)
        for name, mine in sorted(by_agent.items())
    ]


def run_due(store: MemoryStore) -> list[CycleRecord] | None:
    """The scheduled run, when one is due (None when none is, or there is no schedule):
    of processes asking at once, exactly one runs it. A read-only store runs none."""
    schedule = store.probe_schedule()  # a read first: most checks find nothing due
    if schedule.every is None or schedule.next_due_at > clock.format_time(store.now()):
        return None
    try:
        if not store.claim_probe_run():
            return None
    except ReadOnlyStore:
        return None
    return run_probes(store, None, "schedule")
