"""When each fact stopped being live (schema 6), as functions over one transaction.

Every write that makes a fact a tombstone or deletes it calls `stopped` in its own
transaction, and a revert that makes a fact live again calls `resumed`: a fact's row
(`agent \\0 id` → its endings, oldest first) then answers "was it live at T?" for any T,
before, between and after a revert (`core.lifespan`). Pruning keeps the row: the fact's
copy is in the cycle's journal record (I-2), and the row names that record.

Stores written before schema 6 get their rows derived once, when they are upgraded
(`derive`), from what they kept: the journal (cycles' consumption and pruning, reviews,
reverts) and the activity feed (each write's exact time). A time that only the journal's
`finished_at`, or nothing at all, can tell is an estimate, marked `approximate`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.lifespan import EndHow, Ending, Moment, canonical_time
from graymatter_tui.core.model import PAIR_ACTIONS, RETIRED, CycleRecord, Fact, RecordKind
from graymatter_tui.core.progress import Report
from graymatter_tui.storage.transaction import Transaction, fact_key

encode_endings = msgspec.json.Encoder().encode
decode_endings = msgspec.json.Decoder(list[Ending]).decode


def endings(tx: Transaction, fact: Fact) -> list[Ending]:
    raw = tx.lifespan(fact.agent_id, fact.id) if tx.keeps_lifespans else None
    return [] if raw is None else decode_endings(raw)


def stopped(
    tx: Transaction,
    fact: Fact,
    how: EndHow,
    *,
    by: str = "",
    record: str = "",
    kind: RecordKind | Literal[""] = "",
) -> None:
    """`fact` stops being live now, in this transaction (`by`: what replaced it, as its
    `superseded_by` says; `record`: the journal record doing it, of `kind`)."""
    if not tx.keeps_lifespans:
        return
    ending = Ending(
        at=clock.format_time(tx.now),
        how=how,
        by=by,
        record=record,
        record_kind=kind if record else "",
        source=tx.source,
    )
    tx.put_lifespan(fact.agent_id, fact.id, encode_endings([*endings(tx, fact), ending]))


def resumed(tx: Transaction, fact: Fact, record: str) -> None:
    """A revert (`record`) makes `fact` live again now: its open ending closes."""
    if not tx.keeps_lifespans:
        return
    found = endings(tx, fact)
    if not found or not found[-1].open:
        return  # nothing recorded it ending (a store that could not say): nothing to close
    closed = msgspec.structs.replace(found[-1], until=clock.format_time(tx.now), restored_by=record)
    tx.put_lifespan(fact.agent_id, fact.id, encode_endings([*found[:-1], closed]))


# ---- deriving the rows of a store written before schema 6 -------------------------------
@dataclass
class _Event:
    at: str
    fact_id: str
    agent: str
    ending: Ending | None  # None: a revert made the fact live again
    record: str = ""
    revert: bool = False  # a revert's: after what it undid, even at the same instant


@dataclass
class _Feed:
    """What the activity feed says of when writes happened (it keeps the newest 100k):
    a cycle's apply and prune, a revert's write, a fact's retirement by hand."""

    applied: dict[str, tuple[str, str]]  # cycle id -> (at, source)
    pruned: dict[str, str]  # cycle id -> at
    reverted: dict[str, str]  # revert record id -> source
    forgotten: dict[str, tuple[str, str]]  # fact id -> (at, source)

    @classmethod
    def read(cls, tx: Transaction) -> _Feed:
        feed = cls({}, {}, {}, {})
        for entry in tx.iter_activity():  # newest first: the first seen is the last write
            if entry.action == "consolidation" and entry.cycle_id:
                feed.applied.setdefault(entry.cycle_id, (entry.at, entry.source))
            elif entry.action == "prune" and entry.cycle_id:
                feed.pruned.setdefault(entry.cycle_id, entry.at)
            elif entry.action == "revert" and entry.cycle_id:
                feed.reverted.setdefault(entry.cycle_id, entry.source)
            elif entry.action == "forget" and entry.fact_id:
                feed.forgotten.setdefault(entry.fact_id, (entry.at, entry.source))
        return feed


def _events(record: CycleRecord, feed: _Feed) -> list[_Event]:
    """What one journal record did to facts' liveness, each at the best time known."""
    agent, rid = record.agent_id, record.cycle_id
    finished = record.finished_at or record.started_at
    out: list[_Event] = []
    if record.kind == "consolidate":
        if record.outcome == "applied":
            at, source = feed.applied.get(rid, ("", "consolidation"))
            for fact_id in record.consumed:
                ending = Ending(
                    at=at or finished,
                    how="consumed",
                    by=record.summary_id,
                    record=rid,
                    record_kind="consolidate",
                    source=source,
                    approximate=not at,
                )
                out.append(_Event(ending.at, fact_id, agent, ending))
        if record.pruned:
            at = feed.pruned.get(rid, "")
            for fact in record.pruned:
                ending = Ending(
                    at=at or finished,
                    how="pruned",
                    record=rid,
                    record_kind="consolidate",
                    source="consolidation",
                    approximate=not at,
                )
                out.append(_Event(ending.at, fact.id, agent, ending))
    elif record.kind == "review" and record.outcome == "applied":
        pair = record.action in PAIR_ACTIONS  # the dropped fact points at the kept one
        how: EndHow = "revised" if record.action == "update" or pair else "retired"
        by = record.summary_id if how == "revised" else RETIRED
        for fact_id in record.consumed:  # the decision's time is exact: its own write
            if pair:
                by = next((i for i in record.batch if i != fact_id), "")
            ending = Ending(
                at=finished,
                how=how,
                by=by,
                record=rid,
                record_kind="review",
                source=record.asked_by,
            )
            out.append(_Event(finished, fact_id, agent, ending))
    elif record.kind == "revert" and record.outcome == "applied":
        for fact_id in record.restored:
            out.append(_Event(finished, fact_id, agent, None, rid, revert=True))
        if record.retired_summary_id:
            source = feed.reverted.get(rid, "")
            ending = Ending(
                at=finished,
                how="retired",
                by=RETIRED,
                record=rid,
                record_kind="revert",
                source=source,
            )
            out.append(_Event(finished, record.retired_summary_id, agent, ending, revert=True))
    return [e for e in out if e.at]


def _replay(events: list[_Event]) -> dict[tuple[str, str], list[Ending]]:
    out: dict[tuple[str, str], list[Ending]] = {}
    for event in sorted(events, key=lambda e: (canonical_time(e.at), e.revert)):
        found = out.setdefault((event.agent, event.fact_id), [])
        if event.ending is not None:
            found.append(event.ending)
        elif found and found[-1].open:
            found[-1] = msgspec.structs.replace(found[-1], until=event.at, restored_by=event.record)
    return out


def _by_hand(tx: Transaction, tomb: Fact, feed: _Feed, copies: dict[str, Fact]) -> Ending:
    """A tombstone the journal does not explain: revised or retired by hand. A revision
    is written in the same transaction as the tombstone, so its `created_at` is the
    moment; a retirement's is the activity feed's, else unknown: then the earliest it
    can have been, the fact's last access (`approximate`)."""
    if tomb.is_retired:
        at, source = feed.forgotten.get(tomb.id, ("", ""))
        return Ending(
            at=at or tomb.accessed_at,
            how="retired",
            by=RETIRED,
            source=source,
            approximate=not at,
        )
    revision = tx.find(tomb.superseded_by) or copies.get(tomb.superseded_by)
    if revision is not None:
        return Ending(
            at=revision.created_at,
            how="revised",
            by=revision.id,
            source=revision.source or "",
        )
    return Ending(at=tomb.accessed_at, how="revised", by=tomb.superseded_by, approximate=True)


def derive(
    tx: Transaction, agents: Iterable[str] | None = None
) -> dict[tuple[str, str], list[Ending]]:
    """Each fact's endings, (agent, fact id) → endings, as the journal and the activity
    feed tell them, made to agree with the facts as they are now: a tombstone ends
    open, a live fact does not. Only `agents`' facts when given."""
    wanted = None if agents is None else set(agents)
    feed = _Feed.read(tx)
    events: list[_Event] = []
    copies: dict[str, Fact] = {}  # pruned facts, by their copies in the journal
    for record in tx.iter_records(newest_first=False):
        if wanted is None or record.agent_id in wanted:
            events += _events(record, feed)
            copies.update((f.id, f) for f in record.pruned)
    out = _replay(events)
    for agent in sorted(wanted) if wanted is not None else tx.agent_names():
        for tomb in tx.iter_facts(agent, "tombstones", newest_first=False):
            found = out.setdefault((agent, tomb.id), [])
            if not found or not found[-1].open:
                found.append(_by_hand(tx, tomb, feed, copies))
    for (_agent, fact_id), found in out.items():
        if found and found[-1].open and found[-1].how != "pruned":
            fact = tx.find(fact_id)
            if fact is not None and fact.is_live:  # live now: something undid it unseen
                found[-1] = msgspec.structs.replace(found[-1], until=found[-1].at, approximate=True)
    return {key: found for key, found in out.items() if found}


def fill(
    tx: Transaction, progress: Report | None = None, agents: Iterable[str] | None = None
) -> int:
    """Write the derived endings of every fact that has no row yet (the schema-6
    upgrade, an import, a copy from a store that kept none). Returns the rows written."""
    derived = derive(tx, agents)
    written = 0
    for done, ((agent, fact_id), found) in enumerate(sorted(derived.items()), start=1):
        if tx.lifespan(agent, fact_id) is None:
            tx.put_lifespan(agent, fact_id, encode_endings(found))
            written += 1
        if progress is not None and (done % 1000 == 0 or done == len(derived)):
            progress("dating tombstones", done, len(derived))
    return written


def derived_rows(tx: Transaction) -> list[tuple[bytes, bytes]]:
    """Every fact's derived endings as rows in the LMDB layout (`Transaction.iter_rows`)."""
    return sorted(
        (fact_key(agent, fact_id), encode_endings(found))
        for (agent, fact_id), found in derive(tx).items()
    )


def rows_of(tx: Transaction, agent: str) -> dict[str, list[Ending]]:
    """Every row of `agent`: fact id → endings. A store read as it is from before
    schema 6 has none: they are derived now, as its upgrade will derive them."""
    if not tx.keeps_lifespans:
        return {fid: found for (_a, fid), found in derive(tx, [agent]).items()}
    return {fid: decode_endings(raw) for _a, fid, raw in tx.iter_lifespans(agent)}


def moment_of(record: CycleRecord) -> Moment:
    """The instant just before a journal record's first write: a review writes when the
    person decides (`finished_at`; the agent asked at `started_at`), a cycle from its
    decay on (`started_at`), a revert at once."""
    stamp = record.finished_at if record.kind == "review" else record.started_at
    return Moment(canonical_time(stamp or record.finished_at), before=True, record=record.cycle_id)
