"""One transaction's view of the store: every index is maintained here and only here.

`Tx.write_fact` and `Tx.delete_fact` are the single choke point through which a fact's
row, its id index entry, its state index entry and its agent's counts change together.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from operator import add, itemgetter
from typing import Any, Literal, TypeAlias, TypeVar, cast

import lmdb
import msgspec

from graymatter_tui.core import provenance
from graymatter_tui.core.errors import NotFound
from graymatter_tui.core.model import ActivityEntry, CycleRecord, Fact, FactState
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.storage.codec import (
    AgentCounts,
    decode_activity,
    decode_counts,
    decode_fact,
    decode_ids,
    decode_record,
    decode_text_and_state,
    encode,
)
from graymatter_tui.storage.ids import new_id
from graymatter_tui.storage.transaction import (
    EMBED_DIM,
    FLAG_PINNED,
    FLAG_TOMBSTONE,
    SEP,
    CopyTable,
    GraphTable,
    VectorTransaction,
    epoch_ms,
    fact_key,
)
from graymatter_tui.storage.vector_layout import queue_key

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


def pack_vitals(fact: Fact) -> bytes:
    flags = (FLAG_PINNED if fact.pinned else 0) | (FLAG_TOMBSTONE if fact.is_tombstone else 0)
    return VITALS.pack(fact.weight, epoch_ms(fact.accessed_at), flags)


ACTIVITY_KEY = struct.Struct(">Q")

T = TypeVar("T")

# An open LMDB table: only ever passed back to LMDB calls.
Table: TypeAlias = lmdb._Database


@dataclass(frozen=True)
class Dbs:
    """The store's tables; the field names are their names in the LMDB file."""

    facts: Table
    ids: Table
    state: Table
    receipts: Table
    journal: Table
    meta: Table
    agents: Table
    graph_nodes: Table
    graph_edges: Table
    extracted: Table
    vitals: Table
    postings: Table
    terms: Table
    # Schema 2. None when a schema-1 store is opened read-only: nothing may be created
    # then, and such a store holds no checkpoints or aliases.
    checkpoints: Table | None = None
    aliases: Table | None = None
    # Schema 3: the feed of every write (key: 8-byte big-endian write number) and the
    # review queue of agents' held changes (key: proposal id). None as above.
    activity: Table | None = None
    proposals: Table | None = None
    # Schema 5: embedding vectors and the facts waiting for one (ADR 0034), and the
    # probe queries each agent's cycles are checked against. None as above.
    vectors: Table | None = None
    embed_queue: Table | None = None
    probes: Table | None = None
    # Schema 6: when each fact stopped being live (key `agent \0 id`; `lifespan_ops`).
    # None as above: a schema-5 store read as it is derives them when asked.
    lifespans: Table | None = None


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


def _state_key(agent: str, state: bytes, fact_id: str) -> bytes:
    return agent.encode() + SEP + state + SEP + fact_id.encode()


def _state_of(fact: Fact) -> bytes:
    return LIVE if fact.is_live else TOMB


class Tx(VectorTransaction):
    """Every read and write of the store's tables goes through these methods; nothing
    outside this class touches the LMDB transaction or the table handles."""

    def __init__(
        self,
        txn: Any,  # lmdb.Transaction; its stubs type keys as bytes | memoryview
        dbs: Dbs,
        now: datetime,
        *,
        write: bool,
        mint: Callable[[datetime], str] = new_id,
        source: str = provenance.LIBRARY,
    ) -> None:
        super().__init__(now, write=write, mint=mint, source=source)
        self.txn = txn
        self.dbs = dbs
        # Document-frequency changes of this transaction, written once each at its end:
        # a bulk insert touches each common term thousands of times.
        self._df: dict[bytes, int] = {}

    def id_in_use(self, value: str) -> bool:
        """Whether a fact or a journal record already has this id."""
        return (
            self.agent_of(value) is not None
            or self.txn.get(value.encode(), db=self.dbs.journal) is not None
        )

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
                self._index([(new.agent_id, new.id, self.analyzer.term_counts(new.text))])
        if self.embedding_on:
            self.requeue(new, old)
        self._count(old, -1)
        self._count(new, +1)

    def insert_many(
        self,
        facts: list[Fact],
        terms: list[dict[str, int]] | None = None,
        made_by: Analyzer | None = None,
    ) -> None:
        """Insert new facts in bulk (same rows as `write_fact` with no old fact). `terms`,
        each live fact's `made_by.term_counts(text)`, may be computed before the
        transaction so the store's write lock is held for less time; terms made for
        another language than the store's (changed meanwhile) are made again."""
        terms = self.bulk_terms(facts, terms, made_by)
        keys = [fact_key(f.agent_id, f.id) for f in facts]
        by_key = itemgetter(0)
        # Sorted keys fill each B-tree page in turn instead of jumping about the tree.
        rows = sorted(zip(keys, map(encode, facts), strict=True), key=by_key)
        self._put_in_order(self.dbs.facts, rows)
        rows = sorted(zip(keys, map(pack_vitals, facts), strict=True), key=by_key)
        self._put_in_order(self.dbs.vitals, rows)
        rows = sorted(((f.id.encode(), f.agent_id.encode()) for f in facts), key=by_key)
        self._put_in_order(self.dbs.ids, rows)
        rows = sorted(
            ((_state_key(f.agent_id, _state_of(f), f.id), b"") for f in facts), key=by_key
        )
        self._put_in_order(self.dbs.state, rows)
        for fact in facts:
            self._count(fact, +1)
        if self.embedding_on:
            queued = sorted(queue_key(f.agent_id, f.id) for f in facts if f.is_live)
            self._put_in_order(self._vector_table("embed_queue"), [(k, b"") for k in queued])
        self._index([(f.agent_id, f.id, t) for f, t in zip(facts, terms, strict=True) if f.is_live])

    def _put_in_order(self, db: Table, rows: list[tuple[bytes, bytes]]) -> None:
        """Write `rows` (sorted by key, no key twice) over any row with the same key. Those
        past the table's last key are appended: LMDB then fills each page in turn and
        leaves it full, with no search down the tree (a fresh store's bulk load)."""
        if not rows:
            return
        cursor = self.txn.cursor(db=db)
        last = bytes(cursor.key()) if cursor.last() else None
        split = 0 if last is None else bisect_right(rows, last, key=itemgetter(0))
        if split:
            cursor.putmulti(rows[:split] if split < len(rows) else rows)
        if split < len(rows):
            tail = rows[split:] if split else rows
            _consumed, added = cursor.putmulti(tail, append=True)
            if added != len(tail):  # out of order after all: never lose a row for speed
                cursor.putmulti(tail)

    def delete_fact(self, fact: Fact) -> None:
        self.txn.delete(fact_key(fact.agent_id, fact.id), db=self.dbs.facts)
        self.txn.delete(fact_key(fact.agent_id, fact.id), db=self.dbs.vitals)
        self.txn.delete(fact.id.encode(), db=self.dbs.ids)
        self.txn.delete(_state_key(fact.agent_id, _state_of(fact), fact.id), db=self.dbs.state)
        self.txn.delete(fact_key(fact.agent_id, fact.id), db=self.dbs.extracted)
        if fact.is_live:
            self._unindex(fact)
        if self.embedding_on:
            self.requeue(None, fact)
        self._count(fact, -1)

    # ---- embeddings (schema 5; the queueing itself: VectorTransaction) --------------------
    def _vector_table(self, name: Literal["vectors", "embed_queue"]) -> Table:
        table = getattr(self.dbs, name)
        if table is None:  # only a read-only open of an older store lacks them
            raise NotFound("this store has no vector tables yet (open it writable once)")
        return cast(Table, table)

    def has_vector_tables(self) -> bool:
        return self.dbs.vectors is not None and self.dbs.embed_queue is not None

    def committing_generation(self) -> int:
        """The environment bumps the generation just before it commits."""
        return self.meta_int("generation") + 1

    def vector_row(self, key: bytes) -> bytes | None:
        """A row of the `vectors` table (`vector_layout`), copied out of the map."""
        raw = self.txn.get(key, db=self._vector_table("vectors"))
        return None if raw is None else bytes(raw)

    def put_vector_row(self, key: bytes, value: bytes) -> None:
        self.txn.put(key, value, db=self._vector_table("vectors"))

    def delete_vector_row(self, key: bytes) -> None:
        self.txn.delete(key, db=self._vector_table("vectors"))

    def insert_vector_rows(self, rows: Sequence[tuple[bytes, bytes]]) -> None:
        """Rows none of whose keys exists yet, in key order (a migration's copy)."""
        self.txn.cursor(db=self._vector_table("vectors")).putmulti(sorted(rows))

    def vector_rows(self, prefix: bytes, *, keys_only: bool = False) -> Iterator[tuple[bytes, Any]]:
        """(key, value) of `vectors` rows under `prefix`, in key order. In a read with
        buffers the value is a view of the map, valid until the next step."""
        cursor = self.txn.cursor(db=self._vector_table("vectors"))
        found = cursor.set_range(prefix)
        while found:
            key = bytes(cursor.key())
            if not key.startswith(prefix):
                return
            yield key, None if keys_only else cursor.value()
            found = cursor.next()

    def last_vector_key(self, prefix: bytes) -> bytes | None:
        """The greatest key of `vectors` under `prefix`."""
        cursor = self.txn.cursor(db=self._vector_table("vectors"))
        found = cursor.prev() if cursor.set_range(prefix + b"\xff") else cursor.last()
        key = bytes(cursor.key()) if found else b""
        return key if key.startswith(prefix) else None

    def clear_embeddings(self) -> None:
        """Empty the vectors and the queue (a switch of model follows)."""
        self.txn.drop(self._vector_table("vectors"), delete=False)
        self.txn.drop(self._vector_table("embed_queue"), delete=False)
        self.txn.delete(EMBED_DIM.encode(), db=self.dbs.meta)

    def queue_put(self, agent: str, fact_id: str) -> None:
        self.txn.put(queue_key(agent, fact_id), b"", db=self._vector_table("embed_queue"))

    def queue_put_many(self, entries: list[tuple[str, str]]) -> None:
        """Queue facts in key order; those past the queue's last key are appended."""
        keys = sorted(queue_key(agent, fact_id) for agent, fact_id in entries)
        self._put_in_order(self._vector_table("embed_queue"), [(k, b"") for k in keys])

    def queued(self, agent: str, fact_id: str) -> bool:
        key = queue_key(agent, fact_id)
        return self.txn.get(key, db=self._vector_table("embed_queue")) is not None

    def queue_delete(self, agent: str, fact_id: str) -> None:
        self.txn.delete(queue_key(agent, fact_id), db=self._vector_table("embed_queue"))

    def queue_size(self, agent: str | None = None) -> int:
        queue = self.dbs.embed_queue
        if queue is None:
            return 0
        if agent is None:
            return int(self.txn.stat(queue)["entries"])
        return sum(1 for _ in self.iter_queue(agent))

    def iter_queue(self, agent: str | None = None) -> Iterator[tuple[str, str]]:
        """(agent, fact id) of queued facts in key order (of one agent, or all)."""
        queue = self.dbs.embed_queue
        if queue is None:
            return
        cursor = self.txn.cursor(db=queue)
        prefix = agent.encode() + SEP if agent is not None else b""
        found = cursor.set_range(prefix) if prefix else cursor.first()
        while found:
            key = bytes(cursor.key())
            if not key.startswith(prefix):
                return
            owner, _, fact_id = key.decode().partition("\x00")
            yield owner, fact_id
            found = cursor.next()

    # ---- recall index --------------------------------------------------------------------
    def _index(self, facts: list[tuple[str, str, dict[str, int]]]) -> None:
        """Postings of live facts given as (agent, id, `analyzer.term_counts(text)`).
        Bulk inserts index 1M postings per 100k facts: the loop does per fact what it can
        and leaves per-posting work to comprehensions and C."""
        if not facts:
            return
        self._index_moved = True
        keys: list[bytes] = []
        values: list[bytes] = []
        added: Counter[bytes] = Counter()  # term key -> facts added holding it
        pack = POSTING.pack
        for agent, fact_id, counts in facts:
            if not counts:
                continue
            total = sum(counts.values())
            length = min(total, 65535)
            head = agent.encode() + SEP
            tail = SEP + fact_id.encode()
            # A token holds no space: one encode and split gives every term's bytes.
            term_keys = [head + t for t in " ".join(counts).encode().split(b" ")]
            added.update(term_keys)
            keys += [k + tail for k in term_keys]
            if total == len(counts):  # every term once
                values += [pack(1, length)] * total
            else:  # no term fits 65535 times into a 64 KiB text: no clipping needed
                values += [pack(c, length) for c in counts.values()]
        df = self._df
        for term_key, amount in added.items():
            df[term_key] = df.get(term_key, 0) + amount
        # Not sorted: sorting 1M postings cost as much time as it saved LMDB (measured).
        self.txn.cursor(db=self.dbs.postings).putmulti(zip(keys, values, strict=True))

    def _unindex(self, fact: Fact) -> None:
        self._index_moved = True
        head = fact.agent_id.encode() + SEP
        tail = SEP + fact.id.encode()
        df = self._df
        for term in self.analyzer.term_counts(fact.text):
            term_key = head + term.encode()
            self.txn.delete(term_key + tail, db=self.dbs.postings)
            df[term_key] = df.get(term_key, 0) - 1

    def _flush_df(self) -> None:
        """Write each term's document frequency once, in key order."""
        get, put, delete, db = self.txn.get, self.txn.put, self.txn.delete, self.dbs.terms
        if self.txn.stat(db)["entries"] == 0:  # a first bulk load: nothing to read back
            rows = [(k, DF.pack(v)) for k, v in sorted(self._df.items()) if v > 0]
            self.txn.cursor(db=db).putmulti(rows, append=True)
            self._df.clear()
            return
        for term_key, amount in sorted(self._df.items()):
            if not amount:
                continue
            raw = get(term_key, db=db)
            value = (DF.unpack(raw)[0] if raw is not None else 0) + amount
            if value > 0:
                put(term_key, DF.pack(value), db=db)
            elif raw is not None:
                delete(term_key, db=db)
        self._df.clear()

    def clear_index(self) -> None:
        """Empty the postings and term tables (a re-index follows in this transaction)."""
        self._index_moved = True
        self.txn.drop(self.dbs.postings, delete=False)
        self.txn.drop(self.dbs.terms, delete=False)
        self._df.clear()

    def document_frequency(self, agent: str, term: str) -> int:
        key = agent.encode() + SEP + term.encode()
        raw = self.txn.get(key, db=self.dbs.terms)
        return (0 if raw is None else int(DF.unpack(raw)[0])) + self._df.get(key, 0)

    def iter_postings(
        self, agent: str, term: str, newest: int | None = None
    ) -> Iterator[tuple[str, int, int]]:
        """(fact id, term count, fact length) for every live fact of `agent` holding `term`,
        oldest first; with `newest`, only that many of the newest, newest first."""
        prefix = agent.encode() + SEP + term.encode() + SEP
        start = len(prefix)
        unpack = POSTING.unpack
        cursor = self.txn.cursor(db=self.dbs.postings)
        # The cursor's own iterators step in C; a query walks thousands of postings.
        if newest is None:
            if not cursor.set_range(prefix):
                return
            entries: Iterator[tuple[bytes, bytes]] = cursor.iternext()
        else:
            # `prefix` ends in SEP: the first key past all of them ends in SEP + 1.
            past = cursor.set_range(prefix[:-1] + b"\x01")
            if not (cursor.prev() if past else cursor.last()):
                return
            entries = islice(cursor.iterprev(), newest)
        for key, value in entries:
            if not key.startswith(prefix):
                return
            count, length = unpack(value)
            yield key[start:].decode(), count, length

    def posting(self, agent: str, term: str, fact_id: str) -> tuple[int, int] | None:
        """(term count, fact length) if the live fact `fact_id` of `agent` holds `term`."""
        return self.postings_of(agent, term, [fact_id]).get(fact_id)

    def postings_of(
        self, agent: str, term: str, fact_ids: Sequence[str]
    ) -> dict[str, tuple[int, int]]:
        # The key's prefix built once: recall asks for thousands.
        prefix = agent.encode() + SEP + term.encode() + SEP
        get, db, unpack = self.txn.get, self.dbs.postings, POSTING.unpack
        found: dict[str, tuple[int, int]] = {}
        for fact_id in fact_ids:
            raw = get(prefix + fact_id.encode(), db=db)
            if raw is not None:
                found[fact_id] = unpack(raw)
        return found

    def _stored_counts(self, agent: str) -> AgentCounts:
        raw = self.txn.get(agent.encode(), db=self.dbs.agents)
        return AgentCounts() if raw is None else decode_counts(raw)

    def _put_counts(self, agent: str, counts: AgentCounts | None) -> None:
        if counts is None:
            self.txn.delete(agent.encode(), db=self.dbs.agents)
        else:
            self.txn.put(agent.encode(), encode(counts), db=self.dbs.agents)

    def flush_counts(self) -> None:
        """Write what this transaction changed in agent counts and term frequencies."""
        self._flush_df()
        super().flush_counts()

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
            step = cursor.prev
        else:
            lower = prefix + (before.encode() + b"\x00" if before else b"")
            found = cursor.set_range(lower)
            step = cursor.next
        while found:
            key = cursor.key()
            if not key.startswith(prefix):
                break
            yield bytes(key[start:]).decode()
            found = step()

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

    def iter_texts(
        self, agent: str, state: FactState, *, before: str | None = None
    ) -> Iterator[tuple[str, str]]:
        """(id, text) of one agent's facts in one state, newest first, lightly decoded:
        the fact rows are walked in key order, each decoded for its text and whether it
        is a tombstone, rather than looked up one id at a time (twice as fast over 1M)."""
        prefix = agent.encode() + SEP
        start = len(prefix)
        rows = self.txn.cursor(db=self.dbs.facts)
        upper = prefix + (before.encode() if before else b"\xff")
        found = rows.prev() if rows.set_range(upper) else rows.last()
        tombstones = state == "tombstones"
        for key, value in rows.iterprev() if found else ():
            if not key.startswith(prefix):
                break
            row = decode_text_and_state(value)
            if state == "all" or bool(row.superseded_by) == tombstones:
                yield bytes(key[start:]).decode(), row.text

    def _vitals_rows(self, agent: str, cursor: Any = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, packed vitals) of every fact of `agent` in key order, stepped in C (a
        cycle reads all 100k of them three times). The cursor, if given, stays on the
        row yielded, so the caller may `put` over it."""
        prefix = agent.encode() + SEP
        if cursor is None:
            cursor = self.txn.cursor(db=self.dbs.vitals)
        if not cursor.set_range(prefix):
            return
        for key, value in cursor.iternext():
            if not key.startswith(prefix):
                return
            yield bytes(key), value

    def iter_vitals(self, agent: str) -> Iterator[tuple[bytes, float, int, int]]:
        """(key, weight, accessed epoch ms, flags) of every fact of `agent`, no JSON:
        keys and values read in C, unpacked by one `iter_unpack` and paired in C."""
        keys, packed = self._all_vitals(agent)
        return map(add, zip(keys), VITALS.iter_unpack(packed))

    def _all_vitals(self, agent: str) -> tuple[list[bytes], bytes]:
        """The keys of every vitals row of `agent` and their values joined. Its counts
        say how many rows there are, so they are taken in C; that they are exactly the
        agent's is checked, not trusted (the first and last hold its prefix, the next
        does not), else the rows are walked one by one."""
        counts = self.agent_counts(agent)
        expected = counts.live + counts.tombstones
        prefix = agent.encode() + SEP
        cursor = self.txn.cursor(db=self.dbs.vitals)
        if expected > 0 and cursor.set_range(prefix):
            keys = list(islice(cursor.iternext(keys=True, values=False), expected))
            if (
                len(keys) == expected
                and keys[0].startswith(prefix)
                and keys[-1].startswith(prefix)
                and not (cursor.next() and cursor.key().startswith(prefix))
            ):
                cursor.set_range(prefix)
                values = islice(cursor.iternext(keys=False, values=True), expected)
                return keys, b"".join(values)
        rows = list(self._vitals_rows(agent))
        return [key for key, _ in rows], b"".join(value for _, value in rows)

    def reweigh(
        self, agent: str, weigh: Callable[[bytes, float, int, int], float], *, write: bool
    ) -> None:
        """Call `weigh(key, weight, accessed epoch ms, flags)` for every fact of `agent` in
        key order; with `write`, a weight it returns that differs is written to that
        fact's vitals row in place (decay: only vitals change, no JSON is touched)."""
        pack = VITALS.pack
        changed = [
            (key, pack(new, accessed, flags))
            for key, weight, accessed, flags in self.iter_vitals(agent)
            if (new := weigh(key, weight, accessed, flags)) != weight and write
        ]
        if changed:  # in key order, each row the size it was
            self.txn.cursor(db=self.dbs.vitals).putmulti(changed)

    def unextracted(self, agent: str) -> tuple[int, list[str]]:
        """As `Transaction.unextracted`: the live ids less the watermarked ones, as two
        key scans stepped in C and a set difference (no look-up per fact)."""
        head = agent.encode() + SEP
        live = set(self._keys_after(self.dbs.state, head + LIVE + SEP))
        count = len(live)
        if live:
            live.difference_update(self._keys_after(self.dbs.extracted, head))
        return count, sorted(key.decode() for key in live)

    def _keys_after(self, db: Table, prefix: bytes) -> Iterator[bytes]:
        """The part after `prefix` of every key of `db` that starts with it, in order."""
        cursor = self.txn.cursor(db=db)
        if not cursor.set_range(prefix):
            return
        start = len(prefix)
        for key in cursor.iternext(keys=True, values=False):
            if not key.startswith(prefix):
                return
            yield key[start:]

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

    def delete_receipts(self, summary_id: str) -> None:
        self.txn.delete(summary_id.encode(), db=self.dbs.receipts)

    def find_record(self, cycle_id: str) -> CycleRecord | None:
        if not cycle_id or len(cycle_id) > 64:  # never a cycle id; LMDB refuses empty keys
            return None
        raw = self.txn.get(cycle_id.encode("utf-8", errors="replace"), db=self.dbs.journal)
        return None if raw is None else decode_record(raw)

    def put_record(self, record: CycleRecord) -> None:
        self.txn.put(record.cycle_id.encode(), encode(record), db=self.dbs.journal)

    def iter_records(self, *, newest_first: bool = True) -> Iterator[CycleRecord]:
        """Every journal record (cycle ids are ULIDs, so key order is time order)."""
        cursor = self.txn.cursor(db=self.dbs.journal)
        rows = cursor.iterprev() if newest_first else cursor.iternext()
        for _key, raw in rows:
            yield decode_record(raw)

    def count_facts(self) -> int:
        return int(self.txn.stat(self.dbs.ids)["entries"])

    def count_records(self) -> int:
        return int(self.txn.stat(self.dbs.journal)["entries"])

    # ---- knowledge graph -----------------------------------------------------------------
    def extracted(self, key: bytes) -> bool:
        """Whether the fact under `key` (a fact key) has had its text extracted."""
        return self.txn.get(key, db=self.dbs.extracted) is not None

    def put_extracted(self, key: bytes, signature: bytes) -> None:
        self.txn.put(key, signature, db=self.dbs.extracted)

    def extracted_rows(self, agent: str) -> list[tuple[bytes, bytes]]:
        """Read in C a slice as long as the agent has facts (each has at most one row),
        more while the agent's rows go on (counts behind), then cut at the next agent."""
        head = agent.encode() + SEP
        cursor = self.txn.cursor(db=self.dbs.extracted)
        if not cursor.set_range(head):
            return []
        rows_of = cursor.iternext()
        counts = self.agent_counts(agent)
        rows: list[tuple[bytes, bytes]] = list(islice(rows_of, counts.live + counts.tombstones + 1))
        while rows and rows[-1][0].startswith(head):
            more = list(islice(rows_of, 1024))
            if not more:
                break
            rows.extend(more)
        return rows[: bisect_left(rows, (agent.encode() + b"\x01",))]

    def graph_row(self, table: GraphTable, key: bytes) -> bytes | None:
        raw = self.txn.get(key, db=getattr(self.dbs, table))
        return None if raw is None else bytes(raw)

    def put_graph_row(self, table: GraphTable, key: bytes, value: bytes) -> None:
        self.txn.put(key, value, db=getattr(self.dbs, table))

    def delete_graph_row(self, table: GraphTable, key: bytes) -> None:
        self.txn.delete(key, db=getattr(self.dbs, table))

    def graph_rows(self, table: GraphTable, agent: str) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of one agent's rows of a graph table, in key order."""
        cursor = self.txn.cursor(db=getattr(self.dbs, table))
        for key, value in scan_prefix(cursor, agent.encode() + SEP):
            yield bytes(key), bytes(value)

    # ---- whole tables, for a migration (ADR 0046) -----------------------------------------
    def iter_rows(self, table: CopyTable) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every row of `table`, in key order (none when a read-only open
        of an older store lacks the table)."""
        db = getattr(self.dbs, table)
        if db is None:
            return
        for key, value in self.txn.cursor(db=db).iternext():
            yield bytes(key), bytes(value)

    def put_rows(self, table: CopyTable, rows: list[tuple[bytes, bytes]]) -> None:
        """Write rows as `iter_rows` gives them, over any row with the same key."""
        db = getattr(self.dbs, table)
        if db is None:
            raise NotFound(f"this store has no {table} table yet (open it writable once)")
        self.txn.cursor(db=db).putmulti(sorted(rows))

    def put_activity(self, entries: list[ActivityEntry]) -> None:
        """Activity entries under their own write numbers (a migration's copy of another
        store's feed); the caller sets `activity_seq`."""
        table = self._table("activity")
        rows = sorted((ACTIVITY_KEY.pack(e.seq), encode(e)) for e in entries)
        self.txn.cursor(db=table).putmulti(rows)

    # ---- integrity -------------------------------------------------------------------------
    def raw_tables(self) -> Iterator[tuple[str, Iterator[Any]]]:
        """(table name, its raw values) of every table, for the deep integrity check."""
        for name in self.dbs.__dataclass_fields__:
            table = getattr(self.dbs, name)
            if table is not None:
                yield name, self.txn.cursor(db=table).iternext(keys=False, values=True)

    # ---- checkpoints and aliases (schema 2) --------------------------------------------
    def put_checkpoint(self, agent: str, checkpoint_id: str, record: bytes) -> None:
        self.txn.put(
            agent.encode() + SEP + checkpoint_id.encode(), record, db=self._table("checkpoints")
        )

    def latest_checkpoint(self, agent: str) -> tuple[str, bytes] | None:
        """(id, record) of the newest checkpoint of `agent` (ids are time-ordered)."""
        table = self.dbs.checkpoints
        if table is None:
            return None
        prefix = agent.encode() + SEP
        cursor = self.txn.cursor(db=table)
        found = cursor.prev() if cursor.set_range(prefix + b"\xff") else cursor.last()
        key = bytes(cursor.key()) if found else b""
        if key.startswith(prefix):
            return key[len(prefix) :].decode(), bytes(cursor.value())
        return None

    def put_alias(self, agent: str, term: str, record: bytes) -> None:
        self.txn.put(agent.encode() + SEP + term.encode(), record, db=self._table("aliases"))

    def iter_aliases(self, agent: str) -> Iterator[tuple[str, bytes]]:
        """(term, record) of every alias of `agent`, in term order."""
        table = self.dbs.aliases
        if table is None:
            return
        prefix = agent.encode() + SEP
        for key, value in scan_prefix(self.txn.cursor(db=table), prefix):
            yield bytes(key)[len(prefix) :].decode(), bytes(value)

    def _table(
        self,
        name: Literal["checkpoints", "aliases", "proposals", "probes", "activity", "lifespans"],
    ) -> Table:
        table = getattr(self.dbs, name)
        if table is None:  # only a read-only open of an older store lacks them
            raise NotFound(f"this store has no {name} table yet (open it writable once)")
        return cast(Table, table)

    # ---- activity (schema 3) -------------------------------------------------------------
    @property
    def keeps_activity(self) -> bool:
        return self.dbs.activity is not None  # a schema-1 or 2 store read as it is: no feed

    def _append_activity(self, entry: ActivityEntry, drop: int | None) -> None:
        table = self._table("activity")
        self.txn.put(ACTIVITY_KEY.pack(entry.seq), encode(entry), db=table)
        if drop is not None:
            self.txn.delete(ACTIVITY_KEY.pack(drop), db=table)

    def iter_activity(
        self, *, after: int = 0, before: int | None = None
    ) -> Iterator[ActivityEntry]:
        """Activity entries newest first, with write numbers in (after, before)."""
        table = self.dbs.activity
        if table is None:
            return
        cursor = self.txn.cursor(db=table)
        upper = ACTIVITY_KEY.pack(before) if before is not None else b"\xff" * ACTIVITY_KEY.size
        found = cursor.prev() if cursor.set_range(upper) else cursor.last()
        low = ACTIVITY_KEY.pack(after)
        while found:
            key = bytes(cursor.key())
            if key <= low:
                return
            yield decode_activity(cursor.value())
            found = cursor.prev()

    # ---- the review queue (schema 3) -----------------------------------------------------
    def put_proposal(self, proposal_id: str, record: bytes) -> None:
        self.txn.put(proposal_id.encode(), record, db=self._table("proposals"))

    def proposal(self, proposal_id: str) -> bytes | None:
        table = self.dbs.proposals
        if table is None or not proposal_id or len(proposal_id) > 64:
            return None
        raw = self.txn.get(proposal_id.encode("utf-8", errors="replace"), db=table)
        return None if raw is None else bytes(raw)

    def iter_proposals(self, *, newest_first: bool = True) -> Iterator[bytes]:
        """Every proposal's record (ids are ULIDs: key order is time order)."""
        table = self.dbs.proposals
        if table is None:
            return
        cursor = self.txn.cursor(db=table)
        rows = cursor.iterprev(keys=False) if newest_first else cursor.iternext(keys=False)
        for raw in rows:
            yield bytes(raw)

    # ---- lifespans (schema 6; rows `agent \0 fact id`, see lifespan_ops) --------------------
    @property
    def keeps_lifespans(self) -> bool:
        return self.dbs.lifespans is not None

    def lifespan(self, agent: str, fact_id: str) -> bytes | None:
        table = self.dbs.lifespans
        if table is None:
            return None
        raw = self.txn.get(fact_key(agent, fact_id), db=table)
        return None if raw is None else bytes(raw)

    def put_lifespan(self, agent: str, fact_id: str, value: bytes) -> None:
        self.txn.put(fact_key(agent, fact_id), value, db=self._table("lifespans"))

    def iter_lifespans(self, agent: str | None) -> Iterator[tuple[str, str, bytes]]:
        """(agent, fact id, endings) of `agent`'s rows (every agent's when None), in key
        order."""
        table = self.dbs.lifespans
        if table is None:
            return
        cursor = self.txn.cursor(db=table)
        rows = scan_prefix(cursor, agent.encode() + SEP) if agent is not None else cursor.iternext()
        for key, value in rows:
            owner, _sep, fact_id = bytes(key).partition(SEP)
            yield owner.decode(), fact_id.decode(), bytes(value)

    # ---- probes (schema 5; rows `agent \0 probe id`, see probe_ops) ------------------------
    def put_probe(self, agent: str, probe_id: str, record: bytes) -> None:
        self.txn.put(agent.encode() + SEP + probe_id.encode(), record, db=self._table("probes"))

    def delete_probe(self, agent: str, probe_id: str) -> None:
        self.txn.delete(agent.encode() + SEP + probe_id.encode(), db=self._table("probes"))

    def iter_probes(self, agent: str | None) -> Iterator[tuple[str, str, bytes]]:
        """(agent, probe id, record) of every probe of `agent` (of all agents when None),
        in key order."""
        table = self.dbs.probes
        if table is None:
            return
        prefix = b"" if agent is None else agent.encode() + SEP
        cursor = self.txn.cursor(db=table)
        rows = scan_prefix(cursor, prefix) if prefix else cursor.iternext()
        for key, value in rows:
            owner, _sep, probe_id = bytes(key).partition(SEP)
            yield owner.decode(), probe_id.decode(), bytes(value)
