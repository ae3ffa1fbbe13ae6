"""Moving a whole store to another, on either backend (ADR 0046): one read of the source,
one transaction on the target (all of it or nothing), then a check that the target holds
what the source holds and keeps the invariants. Embedding vectors of the same model come
along and are compared fact by fact (ADR 0058); nothing is embedded again.

The source is only read. A target that already holds an identical copy (a migration
stopped after its commit, run again) is verified and left as it is.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core.errors import InvalidInput, StoreError
from graymatter_tui.core.model import Fact
from graymatter_tui.core.progress import Report
from graymatter_tui.core.words import counted
from graymatter_tui.storage import (
    MemoryStore,
    StoreSnapshot,
    TargetNotEmpty,
    VectorLoad,
    vector_ops,
)

# What the verification compares, as the report names it.
VERIFIED = (
    "facts per agent and state",
    "every fact's fields",
    "journal",
    "counters",
    "receipts",
    "probes",
    "checkpoints",
    "aliases",
    "review queue",
    "graph and watermark",
    "activity feed",
    "embedding vectors",
    "invariants I-1…I-6",
)


@dataclass(frozen=True)
class AgentCount:
    agent_id: str
    live: int
    tombstones: int
    pinned: int


@dataclass(frozen=True)
class MigrationReport:
    """What was copied and verified; `seconds` times each phase."""

    source: str
    target: str
    already_copied: bool  # the target held this copy already: verified, nothing written
    facts: int
    records: int
    probes: int
    rows: dict[str, int]  # per copied table: receipts, checkpoints, aliases, ...
    activity: int  # feed entries copied (0: the target had a feed of its own)
    counters: dict[str, int]
    agents: list[AgentCount]
    verified: tuple[str, ...] = VERIFIED
    inherited: list[str] = field(default_factory=list)  # violations the source has too
    seconds: dict[str, float] = field(default_factory=dict)
    # What became of the source's vectors (None: the target held this copy already).
    vectors: VectorLoad | None = None


class MigrationUnverified(StoreError):
    """The copy was written but does not match the source (or breaks an invariant)."""


def agent_counts(facts: list[Fact]) -> list[AgentCount]:
    """Facts per agent and state, counted from the facts themselves."""
    live: Counter[str] = Counter()
    tombs: Counter[str] = Counter()
    pinned: Counter[str] = Counter()
    for fact in facts:
        if fact.is_live:
            live[fact.agent_id] += 1
            pinned[fact.agent_id] += fact.pinned
        else:
            tombs[fact.agent_id] += 1
    return [
        AgentCount(agent, live[agent], tombs[agent], pinned[agent])
        for agent in sorted(live.keys() | tombs.keys())
    ]


def migrate(
    source: MemoryStore,
    target: MemoryStore,
    *,
    allow_non_empty: bool = False,
    progress: Report | None = None,
    embed_model: str | None = None,
) -> MigrationReport:
    """Copy everything `source` holds into `target` and verify the copy (module
    docstring). Refuses the same store twice and a non-empty target (TargetNotEmpty)
    unless `allow_non_empty`; raises MigrationUnverified when the check fails.
    `embed_model`: the model the target's embedder will use (GRAYMATTER_EMBED), when
    set; a target that would otherwise take another model's vectors starts on it."""
    if source is target or source.location == target.location:
        raise InvalidInput(f"the source and the target are the same store ({source.location})")
    if target.read_only_reason is not None:
        raise StoreError(
            f"the target {target.location} cannot be written: {target.read_only_reason}"
        )
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    snap = source.snapshot()
    before = target.snapshot()
    seconds["read"] = time.perf_counter() - started
    already = not before.empty and _same_content(snap, before)
    if not before.empty and not already and not allow_non_empty:
        raise TargetNotEmpty(_described(before))
    activity = 0
    vectors: VectorLoad | None = None
    if not already:
        started = time.perf_counter()
        result = target.load_snapshot(
            snap,
            allow_non_empty=allow_non_empty,
            origin=source.location,
            progress=progress,
            embed_model=embed_model,
        )
        activity = len(snap.activity) if result.activity_copied else 0
        vectors = result.vectors
        seconds["write"] = time.perf_counter() - started
    started = time.perf_counter()
    if progress is not None:
        progress("verifying", 0, 1)
    after = target.snapshot()
    _verify(snap, before if not already else _nothing_like(before), after, copied_feed=activity > 0)
    if vectors is not None:
        _verify_vectors(snap, before, after, vectors)
    inherited = _check_target_invariants(source, target)
    if progress is not None:
        progress("verifying", 1, 1)
    seconds["verify"] = time.perf_counter() - started
    return MigrationReport(
        source=source.location,
        target=target.location,
        already_copied=already,
        facts=len(snap.facts),
        records=len(snap.records),
        probes=len(snap.probes),
        rows={table: len(rows) for table, rows in snap.rows.items()},
        activity=activity,
        counters=dict(snap.counters),
        agents=agent_counts(snap.facts),
        verified=tuple(
            v
            for v in VERIFIED
            if (v != "activity feed" or activity) and (v != "embedding vectors" or vectors)
        ),
        inherited=inherited,
        seconds=seconds,
        vectors=vectors,
    )


def _same_content(a: StoreSnapshot, b: StoreSnapshot) -> bool:
    """Whether two stores hold the same (the activity feed and its counter aside)."""
    counters = [n for n in a.counters if n != "activity_seq"]
    return (
        a.facts == b.facts
        and a.records == b.records
        and a.probes == b.probes
        and a.rows == b.rows
        and all(a.counters[n] == b.counters[n] for n in counters)
    )


def _nothing_like(snap: StoreSnapshot) -> StoreSnapshot:
    """An empty store of `snap`'s language: what an already-copied target held before."""
    return StoreSnapshot(
        stem_language=snap.stem_language,
        demo=None,
        counters=dict.fromkeys(snap.counters, 0),
        facts=[],
        records=[],
        probes=[],
        rows={table: [] for table in snap.rows},
        activity=[],
    )


def _described(snap: StoreSnapshot) -> str:
    parts = [
        counted(len(items), noun)
        for items, noun in (
            (snap.facts, "fact"),
            (snap.records, "journal record"),
            (snap.probes, "probe"),
        )
        if items
    ]
    parts += [f"{table.replace('_', ' ')} rows" for table, rows in snap.rows.items() if rows]
    return ", ".join(parts)


def _verify(
    source: StoreSnapshot, before: StoreSnapshot, after: StoreSnapshot, *, copied_feed: bool
) -> None:
    """The target now holds what it held before plus everything of the source, unchanged."""
    problems: list[str] = []

    def same(name: str, wanted: dict[object, object], found: dict[object, object]) -> None:
        if wanted != found:
            off = sum(1 for key, value in wanted.items() if found.get(key) != value)
            problems.append(
                f"{name} differ ({len(wanted)} expected, {len(found)} found, "
                f"{off} missing or changed)"
            )

    same(
        "facts",
        {f.id: f for f in [*before.facts, *source.facts]},
        {f.id: f for f in after.facts},
    )
    if agent_counts(after.facts) != agent_counts([*before.facts, *source.facts]):
        problems.append("facts per agent and state differ")
    same(
        "journal records",
        {r.cycle_id: r for r in [*before.records, *source.records]},
        {r.cycle_id: r for r in after.records},
    )
    same(
        "probes",
        {p.id: p for p in [*before.probes, *source.probes]},
        {p.id: p for p in after.probes},
    )
    for table, rows in source.rows.items():
        shown = f"{table.replace('_', ' ')} rows"
        same(shown, dict([*before.rows[table], *rows]), dict(after.rows[table]))
    for name, value in source.counters.items():
        if name == "activity_seq":
            continue
        if after.counters[name] != before.counters[name] + value:
            problems.append(
                f"counter {name} is {after.counters[name]}, expected "
                f"{before.counters[name] + value}"
            )
    if copied_feed:
        last = source.counters["activity_seq"]
        copied = [e for e in after.activity if e.seq <= last]
        if copied != source.activity[len(source.activity) - len(copied) :]:
            problems.append("the activity feed differs from the source's")
    if problems:
        raise MigrationUnverified(f"the copy does not match the source: {'; '.join(problems)}")


def _verify_vectors(
    source: StoreSnapshot, before: StoreSnapshot, after: StoreSnapshot, load: VectorLoad
) -> None:
    """The target's vectors are what `load.mode` promised: copied ones equal the
    source's fact by fact (and the target's own are untouched), with the queue; queued
    ones wait for the target's model and hold no vector of the source's."""
    problems: list[str] = []
    found = vector_ops.vector_digests(after.vectors)
    queue = set(after.vectors.queue)
    live = {(f.agent_id, f.id) for f in source.facts if f.is_live}
    if load.mode == "copy":
        wanted = vector_ops.vector_digests(before.vectors) | vector_ops.vector_digests(
            source.vectors
        )
        if after.vectors.model != source.vectors.model:
            problems.append(
                f"the target's embedding model is {after.vectors.model!r}, expected "
                f"{source.vectors.model!r}"
            )
        if found != wanted:
            off = sum(1 for key, value in wanted.items() if found.get(key) != value)
            problems.append(
                f"vectors differ ({len(wanted)} facts expected, {len(found)} found, "
                f"{off} missing or changed)"
            )
        if queue != set(before.vectors.queue) | set(source.vectors.queue):
            problems.append("the embedding queue differs from the source's")
    else:
        carried = sorted(key for key in found if key in live)
        if carried:
            problems.append(f"{len(carried)} copied facts hold vectors of another model")
        if after.vectors.model is not None and not live <= queue:
            problems.append(f"{len(live - queue)} copied live facts are not queued for a vector")
    if problems:
        raise MigrationUnverified(f"the copy does not match the source: {'; '.join(problems)}")


def _check_target_invariants(source: MemoryStore, target: MemoryStore) -> list[str]:
    """The target's invariant violations that the source has too (a copy is faithful);
    any other one fails the migration."""
    found = [v for check in check_invariants(target) for v in check.violations]
    if not found:
        return []
    known = {v for check in check_invariants(source) for v in check.violations}
    new = [v for v in found if v not in known]
    if new:
        raise MigrationUnverified(
            f"the copy breaks {counted(len(new), 'invariant')} the source keeps: "
            f"{'; '.join(new[:3])}"
        )
    return found
