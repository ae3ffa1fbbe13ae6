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
from typing import TypeVar, cast

from graymatter_tui.core.errors import ReadOnlyStore
from graymatter_tui.core.model import SUMMARY_MARK, Probe, ProbeMove, ProbeResult
from graymatter_tui.recall import ranking as recall
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import ApplyRequest, KeywordIndex, MemoryStore

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
