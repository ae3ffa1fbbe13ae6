"""Curation of facts, as functions over one write transaction: put, pin, revise, retire,
touch, delete, and the demo's claim on a store. Callers validate text and agent names
before the transaction (see `Store`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.confidence import Confidence, lowest
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.model import RETIRED, ActivityAction, Fact
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.core.words import counted
from graymatter_tui.storage import lifespan_ops
from graymatter_tui.storage.ids import new_id
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import NewFact

DEMO_KEY = "demo"  # meta key: set (to the time) when the demo created the store


def put(
    tx: Transaction,
    agent: str,
    text: str,
    pinned: bool,
    *,
    cycle_id: str = "",
    confidence: Confidence | None = None,
) -> Fact:
    fact = _new_fact(tx, agent, text, pinned, cycle_id=cycle_id, confidence=confidence)
    tx.log("add", agent, text=text, fact_id=fact.id)
    if pinned:
        tx.log("pin", agent, text=text, fact_id=fact.id)
    return fact


def _new_fact(
    tx: Transaction,
    agent: str,
    text: str,
    pinned: bool,
    *,
    cycle_id: str = "",
    confidence: Confidence | None = None,
) -> Fact:
    stamp = clock.format_time(tx.now)
    fact = Fact(
        id=tx.new_id(),
        agent_id=agent,
        text=text,
        created_at=stamp,
        accessed_at=stamp,
        pinned=pinned,
        pinned_at=stamp if pinned else None,
        cycle_id=cycle_id,
        confidence=confidence,
        source=tx.source,
    )
    tx.write_fact(fact, None)
    return fact


def new_facts(
    pending: list[NewFact], now: datetime, source: str, mint: Callable[[datetime], str]
) -> list[Fact]:
    """The facts `pending` describes, as written at `now` by `source`; `mint` gives the
    id of an item that names none. Both backends build a bulk insert's rows here."""
    out = []
    fmt = clock.format_time
    for item in pending:
        created = item.created_at or now
        accessed = item.accessed_at or created
        created_at = fmt(created)
        out.append(
            Fact(
                id=item.fact_id or mint(created),
                agent_id=item.agent_id,
                text=item.text,
                created_at=created_at,
                accessed_at=created_at if accessed is created else fmt(accessed),
                access_count=item.access_count,
                weight=item.weight,
                pinned=item.pinned,
                pinned_at=created_at if item.pinned else None,
                confidence=item.confidence,
                source=source,
            )
        )
    return out


def put_many(
    tx: Transaction, pending: list[NewFact], terms: list[dict[str, int]], made_by: Analyzer
) -> list[Fact]:
    """Insert many facts; `terms` holds each one's `made_by.term_counts(text)`. Ids are
    minted without a look-up each, then checked all at once: an id an item names that is
    in use is refused; a minted one in use (seeded ids) is minted again."""
    out = new_facts(pending, tx.now, tx.source, tx.mint)
    given = {item.fact_id for item in pending if item.fact_id}
    taken = tx.ids_in_use([f.id for f in out])
    known = [f.id for f in out if f.id in taken and f.id in given]
    if known or len({f.id for f in out}) != len(out):
        raise InvalidInput(f"fact id already in use: {(known or ['(duplicate)'])[0]}")
    for index, fact in enumerate(out):
        if fact.id in taken:
            out[index] = msgspec.structs.replace(
                fact, id=tx.new_id(clock.parse_time(fact.created_at))
            )
    tx.insert_many(out, terms, made_by)
    log_added(tx, "add", out)
    return out


def log_added(tx: Transaction, action: ActivityAction, facts: list[Fact]) -> None:
    """One activity entry per agent for facts written in bulk (one fact: its text)."""
    by_agent: dict[str, list[Fact]] = {}
    for fact in facts:
        by_agent.setdefault(fact.agent_id, []).append(fact)
    for agent, written in by_agent.items():
        if len(written) == 1:
            tx.log(action, agent, text=written[0].text, fact_id=written[0].id)
        else:
            tx.log(action, agent, text=counted(len(written), "fact"), count=len(written))


def pin(tx: Transaction, fact_id: str) -> Fact:
    fact = tx.require(fact_id)
    if fact.is_tombstone:
        raise Conflict(f"fact {fact_id} is a tombstone (superseded); only live facts can be pinned")
    if fact.pinned:
        return fact
    pinned = msgspec.structs.replace(fact, pinned=True, pinned_at=clock.format_time(tx.now))
    tx.write_fact(pinned, fact)
    tx.log("pin", fact.agent_id, text=fact.text, fact_id=fact.id)
    return pinned


def unpin(tx: Transaction, fact_id: str) -> Fact:
    fact = tx.require(fact_id)
    if not fact.pinned:
        return fact
    unpinned = msgspec.structs.replace(fact, pinned=False, pinned_at=None)
    tx.write_fact(unpinned, fact)
    tx.log("unpin", fact.agent_id, text=fact.text, fact_id=fact.id)
    return unpinned


def revise(
    tx: Transaction, fact_id: str, text: str, *, confidence: Confidence | None = None
) -> tuple[Fact, Fact]:
    """A new fact plus a tombstone pointing at it; a pin moves to the revision. Its
    confidence is `confidence`, else the old fact's (unknown stays unknown).
    Returns (revision, tombstone)."""
    old = tx.require(fact_id)
    if old.is_tombstone:
        raise Conflict(f"fact {fact_id} is already a tombstone; revise its replacement instead")
    if old.text == text:
        raise Conflict("text is unchanged; nothing revised")
    stamp = clock.format_time(tx.now)
    revision = Fact(
        id=tx.new_id(),
        agent_id=old.agent_id,
        text=text,
        created_at=stamp,
        accessed_at=stamp,
        pinned=old.pinned,
        pinned_at=stamp if old.pinned else None,
        confidence=confidence or lowest([old.confidence]),
        source=tx.source,
    )
    tomb = msgspec.structs.replace(old, superseded_by=revision.id, pinned=False, pinned_at=None)
    tx.write_fact(revision, None)
    tx.write_fact(tomb, old)
    lifespan_ops.stopped(tx, old, "revised", by=revision.id)
    tx.log("update", old.agent_id, text=text, fact_id=revision.id)
    return revision, tomb


def retire(tx: Transaction, fact_id: str, *, cycle_id: str | None = None) -> Fact:
    """Tombstone a live fact with no replacement (`superseded_by = "agent"`); `cycle_id`,
    when given, names the journal record that retired it (an approved review)."""
    old = tx.require(fact_id)
    if old.is_tombstone:
        raise Conflict(f"fact {fact_id} is already a tombstone")
    if old.pinned:
        raise Conflict(f"fact {fact_id} is pinned; unpin it before retiring it")
    tomb = msgspec.structs.replace(old, superseded_by=RETIRED)
    if cycle_id is not None:
        tomb = msgspec.structs.replace(tomb, cycle_id=cycle_id)
    tx.write_fact(tomb, old)
    lifespan_ops.stopped(tx, old, "retired", by=RETIRED, record=cycle_id or "", kind="review")
    tx.log("forget", old.agent_id, text=old.text, fact_id=old.id)
    return tomb


def touch(tx: Transaction, accesses: dict[str, int]) -> int:
    """Record `accesses[id]` accesses of each live fact; never resurrects a tombstone or
    recreates a fact."""
    stamp = clock.format_time(tx.now)
    touched = 0
    for fact_id, times in accesses.items():
        fact = tx.find(fact_id)
        if fact is None or fact.is_tombstone:
            continue
        count = fact.access_count + times
        tx.write_fact(msgspec.structs.replace(fact, access_count=count, accessed_at=stamp), fact)
        touched += 1
    return touched


def delete(tx: Transaction, fact_ids: list[str]) -> list[Fact]:
    """Remove facts and their extraction signatures (pruning only)."""
    removed = []
    for fact_id in fact_ids:
        fact = tx.find(fact_id)
        if fact is not None:
            tx.delete_fact(fact)
            lifespan_ops.stopped(tx, fact, "pruned")
            removed.append(fact)
    return removed


def unused_id(tx: Transaction, moment: datetime) -> str:
    """A new id held by no fact or record now. See `Transaction.new_id` for why this is checked."""
    while True:
        candidate = new_id(moment)
        if not tx.id_in_use(candidate):
            return candidate


def claim_for_demo(tx: Transaction, where: str) -> None:
    """Mark the store as the demo's; refused when it holds rows the demo did not put."""
    if tx.meta_get(DEMO_KEY) is not None:
        return
    facts = tx.count_facts()
    records = tx.count_records()
    if facts or records:
        held = counted(facts, "fact") if facts else counted(records, "journal record")
        raise Conflict(
            f"the store at {where} already holds {held} that the demo did not "
            "put there; not adding demo facts to it (give --dir a new directory, "
            "or run `graymatter-tui demo --into-existing` to mix them in)"
        )
    tx.meta_put(DEMO_KEY, clock.format_time(tx.now))


# ---- curation by exact text (an agent names a fact by what it says, not by its id) ------


def live_matches(tx: Transaction, agent: str, text: str) -> list[Fact]:
    """Every live fact of `agent` whose text is exactly `text`, oldest first. Found through
    the keyword index by the text's rarest term; a text with no keyword is looked for in
    every live fact."""
    terms = sorted(
        set(tx.analyzer.terms(text)), key=lambda term: tx.document_frequency(agent, term)
    )
    if terms:
        candidates = (tx.find(fact_id) for fact_id, _, _ in tx.iter_postings(agent, terms[0]))
    else:
        candidates = (f for f in tx.iter_facts(agent, "live"))
    found = [f for f in candidates if f is not None and f.is_live and f.text == text]
    return sorted(found, key=lambda f: f.id)


def require_matches(tx: Transaction, agent: str, text: str) -> list[Fact]:
    found = live_matches(tx, agent, text)
    if not found:
        raise NotFound(f"no live fact of agent {agent!r} has exactly this text")
    return found


def supersede_text(
    tx: Transaction,
    agent: str,
    target: str,
    text: str,
    *,
    cycle_id: str | None = None,
    confidence: Confidence | None = None,
) -> tuple[Fact, list[Fact]]:
    """Write `text` as a new fact and make every live fact whose text is exactly `target`
    a tombstone pointing at it, in this one transaction. A pin moves to the replacement;
    its confidence is `confidence`, else the lowest among the facts it replaces.
    `cycle_id`, when given, goes on the replacement and the tombstones: the journal
    record that wrote them (an approved review). Returns (replacement, tombstones)."""
    if target == text:
        raise Conflict("text is unchanged; nothing updated")
    old = require_matches(tx, agent, target)
    pinned = any(f.pinned for f in old)
    replacement = _new_fact(
        tx,
        agent,
        text,
        pinned=pinned,
        cycle_id=cycle_id or "",
        confidence=confidence or lowest(f.confidence for f in old),
    )
    tx.log("update", agent, text=text, fact_id=replacement.id, count=len(old))
    tombs = []
    for fact in old:
        tomb = msgspec.structs.replace(
            fact, superseded_by=replacement.id, pinned=False, pinned_at=None
        )
        if cycle_id is not None:
            tomb = msgspec.structs.replace(tomb, cycle_id=cycle_id)
        tx.write_fact(tomb, fact)
        lifespan_ops.stopped(
            tx, fact, "revised", by=replacement.id, record=cycle_id or "", kind="review"
        )
        tombs.append(tomb)
    return replacement, tombs


def retire_text(
    tx: Transaction, agent: str, target: str, *, cycle_id: str | None = None
) -> list[Fact]:
    """Tombstone every live fact whose text is exactly `target` (`superseded_by =
    "agent"`); refused, changing nothing, when any of them is pinned."""
    old = require_matches(tx, agent, target)
    pinned = [f.id for f in old if f.pinned]
    if pinned:
        raise Conflict(f"fact {pinned[0]} is pinned; unpin it before forgetting it")
    return [retire(tx, fact.id, cycle_id=cycle_id) for fact in old]


def pin_text(tx: Transaction, agent: str, target: str, pinned: bool) -> list[Fact]:
    """Pin (or unpin) every live fact whose text is exactly `target`."""
    change = pin if pinned else unpin
    return [change(tx, fact.id) for fact in require_matches(tx, agent, target)]
