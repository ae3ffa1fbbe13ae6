"""One transaction's view of the store: every index is maintained here and only here.

`Tx.write_fact` and `Tx.delete_fact` are the single choke point through which a fact's
row, its id index entry, its state index entry and its agent's counts change together.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from graymatter_tui import clock
from graymatter_tui.errors import NotFound
from graymatter_tui.model import CycleRecord, Fact, FactState
from graymatter_tui.store.codec import (
    AgentCounts,
    decode_counts,
    decode_fact,
    decode_ids,
    decode_record,
    decode_text,
    encode,
)
from graymatter_tui.store.ids import new_id
from graymatter_tui.tokens import term_counts

SEP = b"\x00"
LIVE = b"L"
TOMB = b"T"

# Vitals: the numbers decay and selection need, kept beside each fact row under the same
# key so a cycle never has to decode 100k JSON rows. The weight here is authoritative:
# decay rewrites only vitals, and every read of a fact takes its weight from them.
VITALS = struct.Struct("<dqB")
# Inverted index of live facts for recall: postings `agent \0 term \0 id` -> (term count,
# token count of the fact); terms `agent \0 term` -> number of live facts holding it.
POSTING = struct.Struct("<HH")
DF = struct.Struct("<I")
FLAG_PINNED = 1
FLAG_TOMBSTONE = 2


def epoch_ms(stamp: str) -> int:
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return int(clock.parse_time(stamp).timestamp() * 1000)


def pack_vitals(fact: Fact) -> bytes:
    flags = (FLAG_PINNED if fact.pinned else 0) | (FLAG_TOMBSTONE if fact.is_tombstone else 0)
    return VITALS.pack(fact.weight, epoch_ms(fact.accessed_at), flags)


@dataclass(frozen=True)
class Dbs:
    facts: Any
    ids: Any
    state: Any
    receipts: Any
    journal: Any
    meta: Any
    agents: Any
    graph_nodes: Any
    graph_edges: Any
    extracted: Any
    vitals: Any
    postings: Any
    terms: Any


def scan_prefix(cursor: Any, prefix: bytes) -> Iterator[tuple[Any, Any]]:
    """(key, value) of every entry whose key starts with `prefix`, in key order. The
    cursor stays on the entry being yielded, so a caller may `cursor.put` over it."""
    found = cursor.set_range(prefix)
    while found:
        key = cursor.key()
        if not key.startswith(prefix):
            return
        yield key, cursor.value()
        found = cursor.next()


def fact_key(agent: str, fact_id: str) -> bytes:
    return agent.encode() + SEP + fact_id.encode()


def _state_key(agent: str, state: bytes, fact_id: str) -> bytes:
    return agent.encode() + SEP + state + SEP + fact_id.encode()


def _state_of(fact: Fact) -> bytes:
    return LIVE if fact.is_live else TOMB


class Tx:
    def __init__(
        self,
        txn: Any,
        dbs: Dbs,
        now: datetime,
        *,
        write: bool,
        mint: Callable[[datetime], str] = new_id,
    ) -> None:
        self.txn = txn
        self.dbs = dbs
        self.now = now
        self.write = write
        self._mint = mint
        self._counts: dict[str, AgentCounts] = {}

    def new_id(self, moment: datetime | None = None) -> str:
        """A new ULID for `moment` (default: the transaction's time). A write call that
        runs again gets the same ids in the same order (`IdReplay`)."""
        return self._mint(self.now if moment is None else moment)

    # ---- facts -------------------------------------------------------------------------
    def agent_of(self, fact_id: str) -> str | None:
        if not fact_id or len(fact_id) > 64:  # never a fact id; LMDB refuses empty keys
            return None
        raw = self.txn.get(fact_id.encode("utf-8", errors="replace"), db=self.dbs.ids)
        return None if raw is None else bytes(raw).decode()

    def _decode(self, key: bytes, raw: Any) -> Fact:
        fact = decode_fact(raw)
        vitals = self.txn.get(key, db=self.dbs.vitals)
        if vitals is not None:
            weight = VITALS.unpack_from(vitals)[0]
            if weight != fact.weight:
                return msgspec.structs.replace(fact, weight=weight)
        return fact

    def find(self, fact_id: str) -> Fact | None:
        agent = self.agent_of(fact_id)
        if agent is None:
            return None
        key = fact_key(agent, fact_id)
        raw = self.txn.get(key, db=self.dbs.facts)
        return None if raw is None else self._decode(key, raw)

    def load(self, fact_id: str) -> Fact:
        fact = self.find(fact_id)
        if fact is None:
            raise NotFound(f"no fact with id {fact_id}")
        return fact

    def write_fact(self, new: Fact, old: Fact | None) -> None:
        """Insert or replace one fact, keeping every index and count in step."""
        key = fact_key(new.agent_id, new.id)
        self.txn.put(key, encode(new), db=self.dbs.facts)
        self.txn.put(key, pack_vitals(new), db=self.dbs.vitals)
        if old is None:
            self.txn.put(new.id.encode(), new.agent_id.encode(), db=self.dbs.ids)
        if old is None or _state_of(old) != _state_of(new):
            if old is not None:
                self.txn.delete(_state_key(old.agent_id, _state_of(old), old.id), db=self.dbs.state)
            self.txn.put(_state_key(new.agent_id, _state_of(new), new.id), b"", db=self.dbs.state)
            if old is not None and old.is_live:
                self._unindex(old)
            if new.is_live:
                self._index([new])
        self._count(old, -1)
        self._count(new, +1)

    def insert_many(self, facts: list[Fact]) -> None:
        """Insert new facts in bulk (same rows as `write_fact` with no old fact)."""
        keys = [fact_key(f.agent_id, f.id) for f in facts]
        self.txn.cursor(db=self.dbs.facts).putmulti(
            [(k, encode(f)) for k, f in zip(keys, facts, strict=True)]
        )
        self.txn.cursor(db=self.dbs.vitals).putmulti(
            [(k, pack_vitals(f)) for k, f in zip(keys, facts, strict=True)]
        )
        self.txn.cursor(db=self.dbs.ids).putmulti(
            [(f.id.encode(), f.agent_id.encode()) for f in facts]
        )
        self.txn.cursor(db=self.dbs.state).putmulti(
            [(_state_key(f.agent_id, _state_of(f), f.id), b"") for f in facts]
        )
        for fact in facts:
            self._count(fact, +1)
        self._index([f for f in facts if f.is_live])

    def delete_fact(self, fact: Fact) -> None:
        self.txn.delete(fact_key(fact.agent_id, fact.id), db=self.dbs.facts)
        self.txn.delete(fact_key(fact.agent_id, fact.id), db=self.dbs.vitals)
        self.txn.delete(fact.id.encode(), db=self.dbs.ids)
        self.txn.delete(_state_key(fact.agent_id, _state_of(fact), fact.id), db=self.dbs.state)
        self.txn.delete(fact_key(fact.agent_id, fact.id), db=self.dbs.extracted)
        if fact.is_live:
            self._unindex(fact)
        self._count(fact, -1)

    # ---- recall index --------------------------------------------------------------------
    def _index(self, facts: list[Fact]) -> None:
        if not facts:
            return
        postings: list[tuple[bytes, bytes]] = []
        df: dict[bytes, int] = {}
        for fact in facts:
            counts = term_counts(fact.text)
            length = min(sum(counts.values()), 65535)
            head = fact.agent_id.encode() + SEP
            tail = SEP + fact.id.encode()
            for term, count in counts.items():
                term_key = head + term.encode()
                postings.append((term_key + tail, POSTING.pack(min(count, 65535), length)))
                df[term_key] = df.get(term_key, 0) + 1
        self.txn.cursor(db=self.dbs.postings).putmulti(postings)
        self._adjust_df(df, +1)

    def _unindex(self, fact: Fact) -> None:
        head = fact.agent_id.encode() + SEP
        tail = SEP + fact.id.encode()
        df: dict[bytes, int] = {}
        for term in term_counts(fact.text):
            term_key = head + term.encode()
            self.txn.delete(term_key + tail, db=self.dbs.postings)
            df[term_key] = 1
        self._adjust_df(df, -1)

    def _adjust_df(self, df: dict[bytes, int], sign: int) -> None:
        get, put, delete, db = self.txn.get, self.txn.put, self.txn.delete, self.dbs.terms
        for term_key, amount in df.items():
            raw = get(term_key, db=db)
            value = (DF.unpack(raw)[0] if raw is not None else 0) + sign * amount
            if value > 0:
                put(term_key, DF.pack(value), db=db)
            elif raw is not None:
                delete(term_key, db=db)

    def document_frequency(self, agent: str, term: str) -> int:
        raw = self.txn.get(agent.encode() + SEP + term.encode(), db=self.dbs.terms)
        return 0 if raw is None else int(DF.unpack(raw)[0])

    def iter_postings(self, agent: str, term: str) -> Iterator[tuple[str, int, int]]:
        """(fact id, term count, fact length) for every live fact of `agent` holding `term`."""
        prefix = agent.encode() + SEP + term.encode() + SEP
        start = len(prefix)
        unpack = POSTING.unpack
        for key, value in scan_prefix(self.txn.cursor(db=self.dbs.postings), prefix):
            count, length = unpack(value)
            yield bytes(key[start:]).decode(), count, length

    def _count(self, fact: Fact | None, sign: int) -> None:
        if fact is None:
            return
        counts = self._counts.get(fact.agent_id)
        if counts is None:
            counts = self.agent_counts(fact.agent_id)
            self._counts[fact.agent_id] = counts
        if fact.is_live:
            counts.live += sign
            counts.weight_sum += sign * fact.weight
            if fact.pinned:
                counts.pinned += sign
        else:
            counts.tombstones += sign

    def agent_counts(self, agent: str) -> AgentCounts:
        pending = self._counts.get(agent)
        if pending is not None:
            return pending
        raw = self.txn.get(agent.encode(), db=self.dbs.agents)
        return AgentCounts() if raw is None else decode_counts(raw)

    def set_weight_sum(self, agent: str, weight_sum: float) -> None:
        counts = self.agent_counts(agent)
        counts.weight_sum = weight_sum
        self._counts[agent] = counts

    def flush_counts(self) -> None:
        for agent, counts in self._counts.items():
            if counts.live == 0 and counts.tombstones == 0:
                self.txn.delete(agent.encode(), db=self.dbs.agents)
            else:
                if counts.live == 0:
                    counts.weight_sum = 0.0
                self.txn.put(agent.encode(), encode(counts), db=self.dbs.agents)
        self._counts.clear()

    # ---- iteration -----------------------------------------------------------------------
    def iter_ids(
        self, agent: str, state: FactState, *, before: str | None = None, newest_first: bool = True
    ) -> Iterator[str]:
        """Fact ids of one agent in one state, keys only (no decoding)."""
        if state == "all":
            prefix, db = agent.encode() + SEP, self.dbs.facts
        else:
            marker = LIVE if state == "live" else TOMB
            prefix, db = agent.encode() + SEP + marker + SEP, self.dbs.state
        start = len(prefix)
        cursor = self.txn.cursor(db=db)
        if newest_first:
            upper = prefix + (before.encode() if before else b"\xff")
            found = cursor.prev() if cursor.set_range(upper) else cursor.last()
            while found:
                key = cursor.key()
                if not key.startswith(prefix):
                    break
                yield bytes(key[start:]).decode()
                found = cursor.prev()
        else:
            lower = prefix + (before.encode() + b"\x00" if before else b"")
            found = cursor.set_range(lower)
            while found:
                key = cursor.key()
                if not key.startswith(prefix):
                    break
                yield bytes(key[start:]).decode()
                found = cursor.next()

    def iter_facts(
        self, agent: str, state: FactState, *, before: str | None = None, newest_first: bool = True
    ) -> Iterator[Fact]:
        """One agent's facts in one state, walking the fact rows and their vitals side by
        side (the two tables hold the same keys), decoding only the rows wanted."""
        prefix = agent.encode() + SEP
        rows = self.txn.cursor(db=self.dbs.facts)
        vitals = self.txn.cursor(db=self.dbs.vitals)
        want = {"live": 0, "tombstones": FLAG_TOMBSTONE}.get(state)
        unpack = VITALS.unpack_from
        if newest_first:
            upper = prefix + (before.encode() if before else b"\xff")
            found = rows.prev() if rows.set_range(upper) else rows.last()
            if vitals.set_range(upper):
                vitals.prev()
            else:
                vitals.last()
            step_rows, step_vitals = rows.prev, vitals.prev
        else:
            lower = prefix + (before.encode() + b"\x00" if before else b"")
            found = rows.set_range(lower)
            vitals.set_range(lower)
            step_rows, step_vitals = rows.next, vitals.next
        while found:
            key = rows.key()
            if not key.startswith(prefix):
                break
            packed = (
                vitals.value() if vitals.key() == key else self.txn.get(key, db=self.dbs.vitals)
            )
            weight, _accessed, flags = unpack(packed) if packed is not None else (None, 0, 0)
            if want is None or flags & FLAG_TOMBSTONE == want:
                fact = decode_fact(rows.value())
                if weight is not None and weight != fact.weight:
                    fact = msgspec.structs.replace(fact, weight=weight)
                yield fact
            found = step_rows()
            step_vitals()

    def iter_texts(self, agent: str, state: FactState) -> Iterator[tuple[str, str]]:
        """(id, text) of one agent's facts in one state, newest first, lightly decoded."""
        head = agent.encode() + SEP
        get, facts_db = self.txn.get, self.dbs.facts
        for fact_id in self.iter_ids(agent, state):
            raw = get(head + fact_id.encode(), db=facts_db)
            if raw is not None:
                yield fact_id, decode_text(raw).text

    def iter_vitals(self, agent: str) -> Iterator[tuple[bytes, float, int, int]]:
        """(key, weight, accessed epoch ms, flags) of every fact of `agent`, no JSON."""
        unpack = VITALS.unpack_from
        for key, value in scan_prefix(self.txn.cursor(db=self.dbs.vitals), agent.encode() + SEP):
            weight, accessed, flags = unpack(value)
            yield bytes(key), weight, accessed, flags

    def agent_names(self) -> list[str]:
        cursor = self.txn.cursor(db=self.dbs.agents)
        return [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]

    # ---- meta, counters, receipts, journal ---------------------------------------------
    def meta_get(self, key: str) -> str | None:
        raw = self.txn.get(key.encode(), db=self.dbs.meta)
        return None if raw is None else bytes(raw).decode()

    def meta_put(self, key: str, value: str) -> None:
        self.txn.put(key.encode(), value.encode(), db=self.dbs.meta)

    def meta_int(self, key: str) -> int:
        raw = self.meta_get(key)
        return int(raw) if raw else 0

    def bump(self, key: str, amount: int = 1) -> int:
        value = self.meta_int(key) + amount
        self.meta_put(key, str(value))
        return value

    def receipts(self, summary_id: str) -> list[str]:
        raw = self.txn.get(summary_id.encode(), db=self.dbs.receipts)
        return [] if raw is None else decode_ids(raw)

    def put_receipts(self, summary_id: str, consumed: list[str]) -> None:
        self.txn.put(summary_id.encode(), encode(consumed), db=self.dbs.receipts)

    def record(self, cycle_id: str) -> CycleRecord | None:
        raw = self.txn.get(cycle_id.encode(), db=self.dbs.journal)
        return None if raw is None else decode_record(raw)

    def put_record(self, record: CycleRecord) -> None:
        self.txn.put(record.cycle_id.encode(), encode(record), db=self.dbs.journal)
