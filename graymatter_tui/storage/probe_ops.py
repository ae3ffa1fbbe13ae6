"""Probes: recall queries an agent's consolidation cycles are checked against before
apply (ADR 0039), as functions over Transaction.

A probe row is keyed `agent \\0 probe id` (ids are ULIDs, so an agent's probes list in the
order they were saved) and holds its query, k and creation time as JSON. The same query
saved twice for one agent is one probe: adding it again returns the probe already there
(updated to the new k, when that differs), so a script may add its probes on every run.
"""

from __future__ import annotations

from datetime import timedelta

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.model import CycleRecord, Probe, ProbeResult
from graymatter_tui.core.words import counted
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import ProbeOutcome, ProbeSchedule, ProbeScore

# Meta rows of the probe schedule (no table of its own: any store format holds them).
# The interval in seconds (absent: no schedule), and when every agent's probes were last
# scored (RFC 3339).
SCHEDULE_KEY = "probe_schedule_every"
LAST_RUN_KEY = "probe_last_run_at"
SCHEDULE_ROWS = (SCHEDULE_KEY, LAST_RUN_KEY)

# Every probe of an agent is ranked twice inside one write transaction at review, so
# their number bounds how long a cycle holds the store's write lock.
MAX_PER_AGENT = 20


class _ProbeRecord(msgspec.Struct, frozen=True):
    query: str
    k: int
    created_at: str


_decode = msgspec.json.Decoder(_ProbeRecord).decode


def _probe(agent: str, probe_id: str, raw: bytes) -> Probe:
    record = _decode(raw)
    return Probe(
        id=probe_id, agent_id=agent, query=record.query, k=record.k, created_at=record.created_at
    )


def listing(tx: Transaction, agent: str | None) -> list[Probe]:
    """Probes of `agent` (every agent's when None), by agent, then oldest first."""
    return [_probe(a, i, raw) for a, i, raw in tx.iter_probes(agent)]


def add(tx: Transaction, agent: str, query: str, k: int) -> tuple[Probe, ProbeOutcome]:
    """(the probe as saved, what saving it did). See the module docstring for a repeated
    query."""
    if not tx.terms(query):
        raise InvalidInput(
            "the query has no words recall can search for (only stop-words or punctuation)"
        )
    existing = listing(tx, agent)
    for probe in existing:
        if probe.query == query:
            if probe.k == k:
                return tx.unchanged((probe, "unchanged"))
            changed = msgspec.structs.replace(probe, k=k)
            _put(tx, changed)
            tx.log("probe", agent, text=f"probe {probe.id} now checks the top {k}: {query}")
            return changed, "updated"
    if len(existing) >= MAX_PER_AGENT:
        raise Conflict(
            f"agent already has {MAX_PER_AGENT} probes, the most a cycle checks; remove one first"
        )
    probe = Probe(
        id=tx.new_id(), agent_id=agent, query=query, k=k, created_at=clock.format_time(tx.now)
    )
    _put(tx, probe)
    tx.log("probe", agent, text=f"probe {probe.id} added (top {k}): {query}")
    return probe, "added"


def put(tx: Transaction, probe: Probe) -> None:
    """Store `probe` as it is, id included (an import or a migration's copy)."""
    _put(tx, probe)


def _put(tx: Transaction, probe: Probe) -> None:
    record = _ProbeRecord(query=probe.query, k=probe.k, created_at=probe.created_at)
    tx.put_probe(probe.agent_id, probe.id, msgspec.json.encode(record))


def remove(tx: Transaction, probe_id: str) -> Probe:
    for probe in listing(tx, None):
        if probe.id == probe_id:
            tx.delete_probe(probe.agent_id, probe.id)
            tx.log("probe", probe.agent_id, text=f"probe {probe.id} removed: {probe.query}")
            return probe
    raise NotFound(f"no probe with id {probe_id}")


def import_probes(tx: Transaction, probes: list[Probe]) -> int:
    """Probes from an import file, keeping their ids: one the store holds already (same
    id, or same agent and query) is left as the store has it. Returns how many were new."""
    stored = listing(tx, None)
    ids = {p.id for p in stored}
    queries = {(p.agent_id, p.query) for p in stored}
    added: dict[str, int] = {}
    for probe in probes:
        if probe.id in ids or (probe.agent_id, probe.query) in queries:
            continue
        _put(tx, probe)
        ids.add(probe.id)
        queries.add((probe.agent_id, probe.query))
        added[probe.agent_id] = added.get(probe.agent_id, 0) + 1
    for agent, count in added.items():
        tx.log("probe", agent, text=f"{counted(count, 'probe')} imported", count=count)
    return sum(added.values())


# ---- probe runs ----------------------------------------------------------------------------
def schedule(tx: Transaction) -> ProbeSchedule:
    rows = tx.meta_many(SCHEDULE_ROWS)
    raw, last = rows[SCHEDULE_KEY], rows[LAST_RUN_KEY] or ""
    every = int(raw) if raw and raw.isdigit() and int(raw) > 0 else None
    due = ""
    if every is not None:
        due = clock.format_time(
            clock.parse_time(last) + timedelta(seconds=every) if last else tx.now
        )
    return ProbeSchedule(every=every, last_run_at=last, next_due_at=due)


def set_schedule(tx: Transaction, every: int | None) -> ProbeSchedule:
    """Score every agent's probes each `every` seconds from now on (None: never)."""
    before = schedule(tx)
    if before.every == every:
        return tx.unchanged(before)
    tx.meta_put(SCHEDULE_KEY, str(every) if every is not None else "0")
    return schedule(tx)


def claim_due(tx: Transaction) -> bool:
    """Whether a scheduled run is due now; if so, it is this caller's: the last-run time
    moves to now in this write transaction, so of processes asking at once one runs it."""
    current = schedule(tx)
    if current.every is None or clock.parse_time(current.next_due_at) > tx.now:
        return tx.unchanged(False)
    tx.meta_put(LAST_RUN_KEY, clock.format_time(tx.now))
    return True


def mark_run(tx: Transaction) -> None:
    """Every agent's probes were scored now (by hand): the schedule counts from here."""
    tx.meta_put(LAST_RUN_KEY, clock.format_time(tx.now))


def record_run(tx: Transaction, agent: str, scores: list[ProbeScore], trigger: str) -> CycleRecord:
    """The journal record of one agent's probes scored now (kind `probe_run`), with the
    agent's live facts, tombstones and pins at that moment. Nothing else is written but
    the activity entry: a run changes no fact and moves no counter."""
    stamp = clock.format_time(tx.now)
    counts = tx.agent_counts(agent)
    results = [
        ProbeResult(
            probe_id=s.probe.id,
            query=s.probe.query,
            k=s.probe.k,
            before=list(s.found),
            after=list(s.found),
        )
        for s in scores
    ]
    hits = sum(1 for s in scores if s.found)
    record = CycleRecord(
        cycle_id=tx.new_id(),
        kind="probe_run",
        agent_id=agent,
        outcome="scored",
        reason=f"{hits} of {counted(len(scores), 'probe')} found something",
        started_at=stamp,
        finished_at=stamp,
        probes=results,
        trigger=trigger,
        live_facts=counts.live,
        tombstones=counts.tombstones,
        pinned=counts.pinned,
    )
    tx.put_record(record)
    tx.log(
        "probe", agent, text=f"probes scored ({trigger}): {record.reason}", cycle_id=record.cycle_id
    )
    return record
