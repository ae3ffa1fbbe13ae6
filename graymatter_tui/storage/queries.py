"""Reads of facts, agents, counters and the journal, as functions over one transaction."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence

from graymatter_tui.core.model import (
    AgentSummary,
    Counters,
    CycleRecord,
    Fact,
    FactState,
)
from graymatter_tui.core.retirement import retirement_of
from graymatter_tui.storage.transaction import FLAG_PINNED, FLAG_TOMBSTONE, Transaction
from graymatter_tui.storage.values import ShowResult


def list_facts(
    tx: Transaction, agent: str | None, state: FactState, limit: int | None, before: str | None
) -> list[Fact]:
    """Facts newest first. Keyset paging: pass the last id of a page as `before`."""
    agents = [agent] if agent is not None else tx.agent_names()
    if len(agents) == 1:
        out: list[Fact] = []
        for fact in tx.iter_facts(agents[0], state, before=before):
            out.append(fact)
            if limit is not None and len(out) >= limit:
                break
        return out
    streams = [tx.iter_facts(a, state, before=before) for a in agents]
    return _merge_newest_first(streams, limit)


def fact_ids(
    tx: Transaction, agent: str, state: FactState, limit: int | None, before: str | None = None
) -> list[str]:
    """Ids of one agent's facts in one state, newest first, without decoding; with
    `before`, only those older than that id (keyset paging)."""
    ids = tx.iter_ids(agent, state, before=before)
    return list(ids) if limit is None else list(itertools.islice(ids, limit))


def texts(
    tx: Transaction,
    agent: str,
    state: FactState,
    limit: int | None = None,
    before: str | None = None,
) -> tuple[list[str], list[str]]:
    """(ids, texts) of one agent's facts, newest first, decoding only those two fields."""
    ids: list[str] = []
    found: list[str] = []
    for fact_id, text in itertools.islice(tx.iter_texts(agent, state, before=before), limit):
        ids.append(fact_id)
        found.append(text)
    return ids, found


def confidences(tx: Transaction, agent: str, state: FactState) -> dict[str, str]:
    """id -> confidence label of the facts of `agent` in `state` that have one."""
    return {f.id: f.confidence for f in tx.iter_facts(agent, state) if f.confidence is not None}


def pinned_facts(tx: Transaction, agent: str, limit: int | None) -> list[Fact]:
    """An agent's live pinned facts, newest first, at most `limit`. Nothing is read when
    its counters say it has none; otherwise its vitals are scanned (no JSON decoded) and
    only the pinned facts themselves are read."""
    if tx.agent_counts(agent).pinned == 0:
        return []
    prefix_len = len(agent.encode()) + 1
    ids = [
        key[prefix_len:].decode()
        for key, _weight, _accessed, flags in tx.iter_vitals(agent)
        if flags & FLAG_PINNED and not flags & FLAG_TOMBSTONE
    ]
    ids.reverse()  # vitals are in id order, and ids in time order
    found = [tx.find(fact_id) for fact_id in ids[:limit]]
    return [fact for fact in found if fact is not None and fact.is_live and fact.pinned]


def all_facts(tx: Transaction) -> list[Fact]:
    """Every fact of every agent, oldest first (exports)."""
    return [f for a in tx.agent_names() for f in tx.iter_facts(a, "all", newest_first=False)]


def agents(tx: Transaction) -> list[AgentSummary]:
    out = []
    for name in tx.agent_names():
        c = tx.agent_counts(name)
        out.append(
            AgentSummary(
                agent_id=name,
                live_facts=c.live,
                tombstones=c.tombstones,
                pinned=c.pinned,
                avg_weight=round(c.weight_sum / c.live, 6) if c.live else 0.0,
            )
        )
    return out


def counters(tx: Transaction) -> Counters:
    return Counters(
        consolidations=tx.meta_int("consolidations"),
        facts_consolidated=tx.meta_int("facts_consolidated"),
        reverts=tx.meta_int("reverts"),
        cycles=tx.meta_int("cycles"),
    )


def show(tx: Transaction, fact_id: str) -> ShowResult:
    """A fact with its receipt chain: what replaced it, what it consumed, its cycle."""
    fact = tx.require(fact_id)
    replaced_by = None
    if fact.is_tombstone and not fact.is_retired:
        replaced_by = tx.find(fact.superseded_by)
    consumed = [f for f in (tx.find(i) for i in tx.receipts(fact.id)) if f is not None]
    cycle = tx.find_record(fact.cycle_id) if fact.cycle_id else None
    retired = retirement_of(fact, tx.find_record)
    restored = [] if retired is None else [f for f in map(tx.find, retired.restored) if f]
    return ShowResult(
        fact=fact,
        replaced_by=replaced_by,
        consumed=consumed,
        cycle=cycle,
        retirement=retired,
        restored=restored,
    )


def records(tx: Transaction, agent: str | None, limit: int | None) -> list[CycleRecord]:
    """Journal records newest first (cycle ids are ULIDs, so key order is time order)."""
    out: list[CycleRecord] = []
    for record in tx.iter_records(newest_first=True):
        if agent is None or record.agent_id == agent:
            out.append(record)
            if limit is not None and len(out) >= limit:
                break
    return out


def _merge_newest_first(streams: Sequence[Iterable[Fact]], limit: int | None) -> list[Fact]:
    merged = heapq.merge(*streams, key=lambda f: f.id, reverse=True)
    out: list[Fact] = []
    for fact in merged:
        out.append(fact)
        if limit is not None and len(out) >= limit:
            break
    return out
