"""Probes: recall queries an agent's consolidation cycles are checked against before
apply (ADR 0039), as functions over Transaction.

A probe row is keyed `agent \\0 probe id` (ids are ULIDs, so an agent's probes list in the
order they were saved) and holds its query, k and creation time as JSON. The same query
saved twice for one agent is one probe: adding it again returns the probe already there
(updated to the new k, when that differs), so a script may add its probes on every run.
"""

from __future__ import annotations

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.model import Probe
from graymatter_tui.core.words import counted
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import ProbeOutcome

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
