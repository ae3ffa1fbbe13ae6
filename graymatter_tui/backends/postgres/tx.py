"""One transaction's view of a PostgreSQL store: the primitives of
`storage.transaction.VectorTransaction`, which the shared operations (`storage/*_ops.py`)
call, so both backends run the same code (ADR 0052). Every SQL statement of a fact's row,
its postings, its terms' document frequencies and its vectors is here and only here.
The vectors are the LMDB store's rows, byte for byte, in a bytea key/value table whose
order is LMDB's key order (ADR 0058)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from graymatter_tui.backends.postgres.rows import (
    COLUMNS,
    FACTS,
    ROW_COLUMNS,
    ROW_PLACEHOLDERS,
    SET_ROW,
    from_row,
    to_row_and_weight,
)
from graymatter_tui.core import provenance
from graymatter_tui.core.model import ActivityEntry, CycleRecord, Fact, FactState
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.storage.codec import (
    AgentCounts,
    decode_activity,
    decode_ids,
    decode_record,
    encode,
)
from graymatter_tui.storage.transaction import (
    EMBED_DIM,
    EMBED_MODEL,
    FLAG_PINNED,
    FLAG_TOMBSTONE,
    SEP,
    CopyTable,
    GraphTable,
    VectorBlockRows,
    VectorTransaction,
    epoch_ms,
    fact_key,
)
from graymatter_tui.storage.vector_layout import BLOCK_NO, STAMP, agent_prefix

T = TypeVar("T")
PAGE = 1000  # rows fetched per round trip when iterating
# Vector rows with their values per round trip: 32 at first (a block is ~200 KB at 384
# dimensions), growing while a page holds under PAGE_BYTES (slot rows are a few bytes).
VALUE_PAGE = 32
PAGE_BYTES = 8 << 20
MAX_PAGE = 20_000
ANALYZE_AFTER = 1000  # facts inserted in one call after which the tables are analysed
META_PUT = (
    "INSERT INTO graymatter_meta (key, value) VALUES (%s, %s) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
)
PROPOSAL_PUT = (
    "INSERT INTO proposals (id, record) VALUES (%s, %s::json) "
    "ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record"
)

STATE_SQL: dict[FactState, str] = {
    "live": " AND superseded_by = ''",
    "tombstones": " AND superseded_by <> ''",
    "all": "",
}


class PgTx(VectorTransaction):
    def __init__(
        self,
        conn: Any,
        now: datetime,
        *,
        write: bool,
        source: str = provenance.LIBRARY,
        embedding: bool | None = None,
        generation: int | None = None,
    ) -> None:
        super().__init__(now, write=write, source=source, embedding=embedding)
        self.conn = conn
        self._generation = generation  # a writer's: read with the lock it took

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def ids_in_use(self, ids: list[str]) -> set[str]:
        rows = self.conn.execute(
            "SELECT id FROM facts WHERE id = ANY(%s) "
            "UNION ALL SELECT cycle_id FROM journal WHERE cycle_id = ANY(%s)",
            (ids, ids),
        ).fetchall()
        return {row[0] for row in rows}

    def id_in_use(self, value: str) -> bool:
        return bool(
            self._one(
                "SELECT EXISTS (SELECT 1 FROM facts WHERE id = %s) "
                "OR EXISTS (SELECT 1 FROM journal WHERE cycle_id = %s)",
                (value, value),
            )
        )

    # ---- facts -------------------------------------------------------------------------
    def agent_of(self, fact_id: str) -> str | None:
        if not fact_id or len(fact_id) > 64:
            return None
        found: str | None = self._one("SELECT agent_id FROM facts WHERE id = %s", (fact_id,))
        return found

    def find(self, fact_id: str) -> Fact | None:
        if not fact_id or len(fact_id) > 64 or "\x00" in fact_id:
            return None
        row = self.conn.execute(f"SELECT {COLUMNS} FROM {FACTS} WHERE id = %s", (fact_id,))
        found = row.fetchone()
        return None if found is None else from_row(found)

    def find_many(self, fact_ids: list[str]) -> list[Fact | None]:
        wanted = [i for i in fact_ids if i and len(i) <= 64 and "\x00" not in i]
        rows = self.conn.execute(
            f"SELECT {COLUMNS} FROM {FACTS} WHERE id = ANY(%s)", (wanted,)
        ).fetchall()
        by_id = {row[0]: from_row(row) for row in rows}
        return [by_id.get(i) for i in fact_ids]

    def write_fact(self, new: Fact, old: Fact | None) -> None:
        """Insert or replace one fact, keeping its postings in step with its state."""
        row, weight = to_row_and_weight(new)
        self.conn.execute(
            f"INSERT INTO facts ({ROW_COLUMNS}) VALUES ({ROW_PLACEHOLDERS}) "
            f"ON CONFLICT (id) DO UPDATE SET {SET_ROW}",
            row,
        )
        if old is None or old.weight != new.weight:
            self.conn.execute(
                "INSERT INTO weights (fact_id, weight) VALUES (%s, %s) "
                "ON CONFLICT (fact_id) DO UPDATE SET weight = EXCLUDED.weight",
                (new.id, weight),
            )
        if old is None or old.is_live != new.is_live or old.text != new.text:
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
        """Insert new facts in bulk with COPY; `terms` as `Tx.insert_many` takes them."""
        terms = self.bulk_terms(facts, terms, made_by)
        split = [to_row_and_weight(fact) for fact in facts]
        with self.conn.cursor().copy(f"COPY facts ({ROW_COLUMNS}) FROM STDIN") as copy:
            for row, _weight in split:
                copy.write_row(row)
        with self.conn.cursor().copy("COPY weights (fact_id, weight) FROM STDIN") as copy:
            for row, weight in split:
                copy.write_row((row[0], weight))
        self._index([(f.agent_id, f.id, t) for f, t in zip(facts, terms, strict=True) if f.is_live])
        for fact in facts:
            self._count(fact, +1)
        if self.embedding_on:
            self.queue_put_many([(f.agent_id, f.id) for f in facts if f.is_live])
        if len(facts) >= ANALYZE_AFTER:
            # Fresh statistics now, not when autovacuum gets round to it: without them the
            # planner scans all postings to delete one fact's (measured: 50 ms at 10k facts).
            self.conn.execute("ANALYZE facts, weights, postings, terms")

    def delete_fact(self, fact: Fact) -> None:
        self.conn.execute("DELETE FROM facts WHERE id = %s", (fact.id,))
        self.conn.execute("DELETE FROM weights WHERE fact_id = %s", (fact.id,))
        self.conn.execute(
            "DELETE FROM extracted WHERE key = %s", (fact_key(fact.agent_id, fact.id),)
        )
        if fact.is_live:
            self._unindex(fact)
        if self.embedding_on:
            self.requeue(None, fact)
        self._count(fact, -1)

    # ---- agent counts --------------------------------------------------------------------
    def _stored_counts(self, agent: str) -> AgentCounts:
        row = self.conn.execute(
            "SELECT live, tombstones, pinned, weight_sum FROM agent_counts WHERE agent_id = %s",
            (agent,),
        ).fetchone()
        if row is None:
            return AgentCounts()
        return AgentCounts(live=row[0], tombstones=row[1], pinned=row[2], weight_sum=row[3])

    def _put_counts(self, agent: str, counts: AgentCounts | None) -> None:
        if counts is None:
            self.conn.execute("DELETE FROM agent_counts WHERE agent_id = %s", (agent,))
            return
        self.conn.execute(
            "INSERT INTO agent_counts (agent_id, live, tombstones, pinned, weight_sum) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (agent_id) DO UPDATE SET "
            "live = EXCLUDED.live, tombstones = EXCLUDED.tombstones, "
            "pinned = EXCLUDED.pinned, weight_sum = EXCLUDED.weight_sum",
            (agent, counts.live, counts.tombstones, counts.pinned, counts.weight_sum),
        )

    # ---- recall index --------------------------------------------------------------------
    def _index(self, facts: list[tuple[str, str, dict[str, int]]]) -> None:
        """Postings of live facts given as (agent, id, term counts), and their terms'
        document frequencies."""
        if not facts:
            return
        self._index_moved = True
        added: Counter[tuple[str, str]] = Counter()
        with self.conn.cursor().copy(
            "COPY postings (agent_id, term, fact_id, count, length) FROM STDIN"
        ) as copy:
            for agent, fact_id, counts in facts:
                length = min(sum(counts.values()), 65535)
                for term, count in counts.items():
                    copy.write_row((agent, term, fact_id, count, length))
                    added[agent, term] += 1
        self._add_df(added)

    def _add_df(self, change: Counter[tuple[str, str]]) -> None:
        if not change:
            return
        agents, terms, amounts = zip(*((a, t, n) for (a, t), n in change.items()), strict=True)
        self.conn.execute(
            "INSERT INTO terms (agent_id, term, df) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::int[]) "
            "ON CONFLICT (agent_id, term) DO UPDATE SET df = terms.df + EXCLUDED.df",
            (list(agents), list(terms), list(amounts)),
        )
        if min(amounts) < 0:  # a term no live fact holds any more has no row
            self.conn.execute(
                "DELETE FROM terms WHERE (agent_id, term) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[])) AND df <= 0",
                (list(agents), list(terms)),
            )

    def _unindex(self, fact: Fact) -> None:
        self._index_moved = True
        terms = list(self.analyzer.term_counts(fact.text))
        self.conn.execute(
            "DELETE FROM postings WHERE agent_id = %s AND term = ANY(%s) AND fact_id = %s",
            (fact.agent_id, terms, fact.id),
        )
        self._add_df(Counter({(fact.agent_id, t): -1 for t in terms}))

    def clear_index(self) -> None:
        self._index_moved = True
        self.conn.execute("TRUNCATE postings, terms")

    def document_frequency(self, agent: str, term: str) -> int:
        found = self._one("SELECT df FROM terms WHERE agent_id = %s AND term = %s", (agent, term))
        return int(found or 0)

    def iter_postings(
        self, agent: str, term: str, newest: int | None = None
    ) -> Iterator[tuple[str, int, int]]:
        """(fact id, term count, fact length) of every live fact of `agent` holding
        `term`, oldest first; with `newest`, only that many of the newest, newest first
        (the keyword index's contract as recall uses it)."""
        sql = "SELECT fact_id, count, length FROM postings WHERE agent_id = %s AND term = %s"
        if newest is None:
            rows = self.conn.execute(sql + " ORDER BY fact_id", (agent, term))
        else:
            rows = self.conn.execute(
                sql + " ORDER BY fact_id DESC LIMIT %s", (agent, term, max(newest, 0))
            )
        yield from rows.fetchall()

    def posting(self, agent: str, term: str, fact_id: str) -> tuple[int, int] | None:
        """(term count, fact length) if the live fact `fact_id` of `agent` holds `term`."""
        row = self.conn.execute(
            "SELECT count, length FROM postings WHERE agent_id = %s AND term = %s AND fact_id = %s",
            (agent, term, fact_id),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def postings_of(
        self, agent: str, term: str, fact_ids: Sequence[str]
    ) -> dict[str, tuple[int, int]]:
        if not fact_ids:
            return {}
        rows = self.conn.execute(
            "SELECT fact_id, count, length FROM postings "
            "WHERE agent_id = %s AND term = %s AND fact_id = ANY(%s)",
            (agent, term, list(fact_ids)),
        ).fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

    # ---- iteration -----------------------------------------------------------------------
    def _pages(
        self,
        columns: str,
        agent: str,
        state: FactState,
        before: str | None,
        newest_first: bool,
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of one agent's facts in id order, a page per round trip (keyset)."""
        order, compare = ("DESC", "<") if newest_first else ("ASC", ">")
        head = f"SELECT {columns} FROM {FACTS} WHERE agent_id = %s{STATE_SQL[state]}"
        tail = f" ORDER BY id {order} LIMIT {PAGE}"
        # Two statements, not `(%s IS NULL OR id < %s)`: the planner can walk the
        # (agent_id, id) index only when the bound is a plain comparison.
        # The bound is given for both joined tables: the planner does not carry it across
        # the join, and a merge join would otherwise walk `weights` from its start.
        bound = f" AND id {compare} %s AND weights.fact_id {compare} %s"
        first, more = head + tail, head + bound + tail
        rows = self.conn.execute(
            first if before is None else more,
            (agent,) if before is None else (agent, before, before),
        ).fetchall()
        while True:
            yield from rows
            if len(rows) < PAGE:
                return
            rows = self.conn.execute(more, (agent, rows[-1][0], rows[-1][0])).fetchall()

    def iter_ids(
        self, agent: str, state: FactState, *, before: str | None = None, newest_first: bool = True
    ) -> Iterator[str]:
        for row in self._pages("id", agent, state, before, newest_first):
            yield row[0]

    def iter_facts(
        self, agent: str, state: FactState, *, before: str | None = None, newest_first: bool = True
    ) -> Iterator[Fact]:
        for row in self._pages(COLUMNS, agent, state, before, newest_first):
            yield from_row(row)

    def iter_texts(
        self, agent: str, state: FactState, *, before: str | None = None
    ) -> Iterator[tuple[str, str]]:
        for fid, text, raw in self._pages("id, text, text_raw", agent, state, before, True):
            yield fid, text if raw is None else bytes(raw).decode("utf-8")

    def iter_vitals(self, agent: str) -> Iterator[tuple[bytes, float, int, int]]:
        """(key, weight, accessed epoch ms, flags) of every fact of `agent` in id order:
        what LMDB's vitals rows hold, made from the columns."""
        head = agent.encode() + SEP
        for fid, weight, accessed, pinned, by in self._pages(
            "id, weight, accessed_at, pinned, superseded_by", agent, "all", None, False
        ):
            flags = (FLAG_PINNED if pinned else 0) | (FLAG_TOMBSTONE if by else 0)
            yield head + fid.encode(), weight, epoch_ms(accessed), flags

    def reweigh(
        self, agent: str, weigh: Callable[[bytes, float, int, int], float], *, write: bool
    ) -> None:
        """Call `weigh` for every fact of `agent` in id order; with `write`, store the
        weights it changed (decay), in one statement."""
        start = len(agent.encode()) + 1
        changed: dict[str, float] = {}
        for key, weight, accessed, flags in self.iter_vitals(agent):
            new = weigh(key, weight, accessed, flags)
            if write and new != weight:
                changed[key[start:].decode()] = new
        if changed:
            # COPY into a scratch table, then one UPDATE: binding 100k-element arrays costs
            # more in the driver than the update itself.
            self.conn.execute(
                'CREATE TEMP TABLE decayed (fact_id text COLLATE "C", weight float8) ON COMMIT DROP'
            )
            with self.conn.cursor().copy("COPY decayed (fact_id, weight) FROM STDIN") as copy:
                for item in changed.items():
                    copy.write_row(item)
            self.conn.execute(
                "UPDATE weights SET weight = d.weight FROM decayed d "
                "WHERE weights.fact_id = d.fact_id"
            )
            self.conn.execute("DROP TABLE decayed")

    def agent_names(self) -> list[str]:
        rows = self.conn.execute("SELECT agent_id FROM agent_counts ORDER BY agent_id")
        return [row[0] for row in rows.fetchall()]

    # ---- meta, counters, receipts, journal ---------------------------------------------
    def meta_get(self, key: str) -> str | None:
        found: str | None = self._one("SELECT value FROM graymatter_meta WHERE key = %s", (key,))
        return found

    def meta_put(self, key: str, value: str) -> None:
        self.conn.execute(META_PUT, (key, value))

    def meta_put_many(self, items: Sequence[tuple[str, str]]) -> None:
        if items:  # the driver pipelines executemany: one round trip for them all
            with self.conn.cursor() as cursor:
                cursor.executemany(META_PUT, list(items))

    def meta_many(self, keys: Sequence[str]) -> dict[str, str | None]:
        rows = self.conn.execute(
            "SELECT key, value FROM graymatter_meta WHERE key = ANY(%s::text[])", (list(keys),)
        ).fetchall()
        found = dict(rows)
        return {key: found.get(key) for key in keys}

    def meta_int(self, key: str) -> int:
        return int(self._one("SELECT value FROM counters WHERE name = %s", (key,)) or 0)

    def bump(self, key: str, amount: int = 1) -> int:
        return int(
            self._one(
                "INSERT INTO counters (name, value) VALUES (%s, %s) ON CONFLICT (name) "
                "DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value",
                (key, amount),
            )
        )

    def receipts(self, summary_id: str) -> list[str]:
        found = self._one("SELECT consumed FROM receipts WHERE summary_id = %s", (summary_id,))
        return [] if found is None else list(found)

    def put_receipts(self, summary_id: str, consumed: list[str]) -> None:
        self.conn.execute(
            "INSERT INTO receipts (summary_id, consumed) VALUES (%s, %s) "
            "ON CONFLICT (summary_id) DO UPDATE SET consumed = EXCLUDED.consumed",
            (summary_id, consumed),
        )

    def delete_receipts(self, summary_id: str) -> None:
        self.conn.execute("DELETE FROM receipts WHERE summary_id = %s", (summary_id,))

    def find_record(self, cycle_id: str) -> CycleRecord | None:
        if not cycle_id or "\x00" in cycle_id:
            return None
        raw = self._one("SELECT record::text FROM journal WHERE cycle_id = %s", (cycle_id,))
        return None if raw is None else decode_record(raw)

    def put_record(self, record: CycleRecord) -> None:
        self.conn.execute(
            "INSERT INTO journal (cycle_id, agent_id, record) VALUES (%s, %s, %s::json) "
            "ON CONFLICT (cycle_id) DO UPDATE SET record = EXCLUDED.record",
            (record.cycle_id, record.agent_id, encode(record).decode()),
        )

    def iter_records(self, *, newest_first: bool = True) -> Iterator[CycleRecord]:
        order = "DESC" if newest_first else "ASC"
        rows = self.conn.execute(f"SELECT record::text FROM journal ORDER BY cycle_id {order}")
        for (raw,) in rows.fetchall():
            yield decode_record(raw)

    def count_facts(self) -> int:
        return int(self._one("SELECT count(*) FROM facts"))

    def count_records(self) -> int:
        return int(self._one("SELECT count(*) FROM journal"))

    # ---- knowledge graph (keys as LMDB's: agent \0 ...) -----------------------------------
    def extracted(self, key: bytes) -> bool:
        return bool(self._one("SELECT EXISTS (SELECT 1 FROM extracted WHERE key = %s)", (key,)))

    def put_extracted(self, key: bytes, signature: bytes) -> None:
        self.conn.execute(
            "INSERT INTO extracted (key, signature) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET signature = EXCLUDED.signature",
            (key, signature),
        )

    def extracted_rows(self, agent: str) -> list[tuple[bytes, bytes]]:
        # Keys are `agent \0 id`: the agent's rows are the keys from `agent \0` to `agent \1`.
        rows = self.conn.execute(
            "SELECT key, signature FROM extracted WHERE key >= %s AND key < %s ORDER BY key",
            (agent.encode() + SEP, agent.encode() + b"\x01"),
        )
        return [(bytes(key), bytes(signature)) for key, signature in rows.fetchall()]

    def graph_row(self, table: GraphTable, key: bytes) -> bytes | None:
        found = self._one(f"SELECT value FROM {_graph(table)} WHERE key = %s", (key,))
        return None if found is None else bytes(found)

    def put_graph_row(self, table: GraphTable, key: bytes, value: bytes) -> None:
        agent = key.split(SEP, 1)[0].decode()
        self.conn.execute(
            f"INSERT INTO {_graph(table)} (agent_id, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (agent, key, value),
        )

    def delete_graph_row(self, table: GraphTable, key: bytes) -> None:
        self.conn.execute(f"DELETE FROM {_graph(table)} WHERE key = %s", (key,))

    def graph_rows(self, table: GraphTable, agent: str) -> Iterator[tuple[bytes, bytes]]:
        rows = self.conn.execute(
            f"SELECT key, value FROM {_graph(table)} WHERE agent_id = %s ORDER BY key", (agent,)
        )
        for key, value in rows.fetchall():
            yield bytes(key), bytes(value)

    # ---- checkpoints, aliases, the review queue -------------------------------------------
    def put_checkpoint(self, agent: str, checkpoint_id: str, record: bytes) -> None:
        self.conn.execute(
            "INSERT INTO checkpoints (agent_id, id, record) VALUES (%s, %s, %s::json) "
            "ON CONFLICT (agent_id, id) DO UPDATE SET record = EXCLUDED.record",
            (agent, checkpoint_id, record.decode()),
        )

    def latest_checkpoint(self, agent: str) -> tuple[str, bytes] | None:
        row = self.conn.execute(
            "SELECT id, record::text FROM checkpoints WHERE agent_id = %s ORDER BY id DESC LIMIT 1",
            (agent,),
        ).fetchone()
        return None if row is None else (row[0], row[1].encode())

    def put_probe(self, agent: str, probe_id: str, record: bytes) -> None:
        self.conn.execute(
            "INSERT INTO probes (agent_id, id, record) VALUES (%s, %s, %s::json) "
            "ON CONFLICT (agent_id, id) DO UPDATE SET record = EXCLUDED.record",
            (agent, probe_id, record.decode()),
        )

    def delete_probe(self, agent: str, probe_id: str) -> None:
        self.conn.execute("DELETE FROM probes WHERE agent_id = %s AND id = %s", (agent, probe_id))

    def iter_probes(self, agent: str | None) -> Iterator[tuple[str, str, bytes]]:
        """(agent, probe id, record) of `agent`'s probes (every agent's when None), in the
        LMDB store's key order: by agent, then id."""
        if agent is None:
            rows = self.conn.execute(
                "SELECT agent_id, id, record::text FROM probes ORDER BY agent_id, id"
            )
        else:
            rows = self.conn.execute(
                "SELECT agent_id, id, record::text FROM probes WHERE agent_id = %s ORDER BY id",
                (agent,),
            )
        for owner, probe_id, raw in rows.fetchall():
            yield owner, probe_id, raw.encode()

    def put_alias(self, agent: str, term: str, record: bytes) -> None:
        self.conn.execute(
            "INSERT INTO aliases (agent_id, term, record) VALUES (%s, %s, %s::json) "
            "ON CONFLICT (agent_id, term) DO UPDATE SET record = EXCLUDED.record",
            (agent, term, record.decode()),
        )

    def iter_aliases(self, agent: str) -> Iterator[tuple[str, bytes]]:
        rows = self.conn.execute(
            "SELECT term, record::text FROM aliases WHERE agent_id = %s ORDER BY term", (agent,)
        )
        for term, raw in rows.fetchall():
            yield term, raw.encode()

    def put_proposal(self, proposal_id: str, record: bytes) -> None:
        self.conn.execute(PROPOSAL_PUT, (proposal_id, record.decode()))

    def put_proposals(self, items: Sequence[tuple[str, bytes]]) -> None:
        if items:
            rows = [(proposal_id, record.decode()) for proposal_id, record in items]
            with self.conn.cursor() as cursor:
                cursor.executemany(PROPOSAL_PUT, rows)

    def proposal(self, proposal_id: str) -> bytes | None:
        if not proposal_id or len(proposal_id) > 64 or "\x00" in proposal_id:
            return None
        raw = self._one("SELECT record::text FROM proposals WHERE id = %s", (proposal_id,))
        return None if raw is None else str(raw).encode()

    def proposals_in_use(self, ids: list[str]) -> set[str]:
        wanted = [i for i in ids if i and len(i) <= 64 and "\x00" not in i]
        rows = self.conn.execute("SELECT id FROM proposals WHERE id = ANY(%s)", (wanted,))
        return {row[0] for row in rows.fetchall()}

    def iter_proposals(self, *, newest_first: bool = True) -> Iterator[bytes]:
        order = "DESC" if newest_first else "ASC"
        rows = self.conn.execute(f"SELECT record::text FROM proposals ORDER BY id {order}")
        for (raw,) in rows.fetchall():
            yield raw.encode()

    # ---- activity --------------------------------------------------------------------------
    def _append_activity(self, entry: ActivityEntry, drop: int | None) -> None:
        self.conn.execute(
            "INSERT INTO activity (seq, entry) VALUES (%s, %s::json)",
            (entry.seq, encode(entry).decode()),
        )
        if drop is not None:
            self.conn.execute("DELETE FROM activity WHERE seq = %s", (drop,))

    def iter_activity(
        self, *, after: int = 0, before: int | None = None
    ) -> Iterator[ActivityEntry]:
        rows = self.conn.execute(
            "SELECT entry::text FROM activity WHERE seq > %s AND (%s::bigint IS NULL OR seq < %s) "
            "ORDER BY seq DESC",
            (after, before, before),
        )
        for (raw,) in rows.fetchall():
            yield decode_activity(raw)

    # ---- embedding vectors (ADR 0058): LMDB's rows in `vectors`, the queue ------------------
    def has_vector_tables(self) -> bool:
        return True  # a store is upgraded before it is written, and read only once upgraded

    def committing_generation(self) -> int:
        """The generation this write bumped when it took the lock (it commits as that)."""
        if self._generation is None:
            self._generation = self.meta_int("generation")
        return self._generation

    def vector_row(self, key: bytes) -> bytes | None:
        found = self.conn.execute(
            "SELECT value FROM vectors WHERE key = %s", (key,), binary=True
        ).fetchone()
        return None if found is None else bytes(found[0])

    def vector_rows_many(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        if not keys:
            return {}
        rows = self.conn.execute(
            "SELECT key, value FROM vectors WHERE key = ANY(%s::bytea[])",
            (list(keys),),
            binary=True,
        ).fetchall()
        return {bytes(key): bytes(value) for key, value in rows}

    def put_vector_row(self, key: bytes, value: bytes) -> None:
        self.put_vector_rows([(key, value)])

    def put_vector_rows(self, rows: Sequence[tuple[bytes, bytes]]) -> None:
        """Every row in one statement (a key given twice: its last value)."""
        if not rows:
            return
        latest = dict(rows)
        self.conn.execute(
            "INSERT INTO vectors (key, value) SELECT * FROM unnest(%s::bytea[], %s::bytea[]) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (list(latest), list(latest.values())),
        )

    def insert_vector_rows(self, rows: Sequence[tuple[bytes, bytes]]) -> None:
        """Rows none of whose keys exists, by binary COPY (a migration's copy)."""
        with self.conn.cursor().copy(
            "COPY vectors (key, value) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["bytea", "bytea"])
            for row in rows:
                copy.write_row(row)

    def delete_vector_row(self, key: bytes) -> None:
        self.conn.execute("DELETE FROM vectors WHERE key = %s", (key,))

    def vector_rows(self, prefix: bytes, *, keys_only: bool = False) -> Iterator[tuple[bytes, Any]]:
        """(key, value) of the rows under `prefix` in key order, a page per round trip."""
        where, params = _key_range(prefix)
        columns, page = ("key", PAGE) if keys_only else ("key, value", VALUE_PAGE)
        head = f"SELECT {columns} FROM vectors WHERE {where}"
        rows = self.conn.execute(f"{head} ORDER BY key LIMIT {page}", params, binary=True)
        found = rows.fetchall()
        while True:
            for row in found:
                yield bytes(row[0]), None if keys_only else bytes(row[1])
            if len(found) < page:
                return
            if not keys_only and sum(len(row[1]) for row in found) < PAGE_BYTES:
                page = min(page * 4, MAX_PAGE)  # small rows (slots): fewer round trips
            found = self.conn.execute(
                f"{head} AND key > %s ORDER BY key LIMIT {page}",
                [*params, found[-1][0]],
                binary=True,
            ).fetchall()

    def last_vector_key(self, prefix: bytes) -> bytes | None:
        where, params = _key_range(prefix)
        found = self.conn.execute(
            f"SELECT key FROM vectors WHERE {where} ORDER BY key DESC LIMIT 1", params, binary=True
        ).fetchone()
        return None if found is None else bytes(found[0])

    def count_vector_rows(self, prefix: bytes) -> int:
        where, params = _key_range(prefix)
        return int(self._one(f"SELECT count(*) FROM vectors WHERE {where}", tuple(params)))

    def clear_embeddings(self) -> None:
        """Empty the vectors and the queue, row by row (not TRUNCATE, which a reader's
        snapshot taken before it would see as empty), and forget the dimension."""
        self.conn.execute("DELETE FROM vectors")
        self.conn.execute("DELETE FROM embed_queue")
        self.conn.execute("DELETE FROM graymatter_meta WHERE key = %s", (EMBED_DIM,))

    def queue_put(self, agent: str, fact_id: str) -> None:
        self.conn.execute(
            "INSERT INTO embed_queue (agent_id, fact_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (agent, fact_id),
        )

    def queue_put_many(self, entries: list[tuple[str, str]]) -> None:
        if not entries:
            return
        with self.conn.cursor().copy("COPY embed_queue (agent_id, fact_id) FROM STDIN") as copy:
            for entry in entries:
                copy.write_row(entry)

    def queued(self, agent: str, fact_id: str) -> bool:
        return bool(
            self._one(
                "SELECT EXISTS (SELECT 1 FROM embed_queue WHERE agent_id = %s AND fact_id = %s)",
                (agent, fact_id),
            )
        )

    def queued_many(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        if not entries:
            return set()
        agents, ids = zip(*entries, strict=True)
        rows = self.conn.execute(
            "SELECT agent_id, fact_id FROM embed_queue WHERE (agent_id, fact_id) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[]))",
            (list(agents), list(ids)),
        ).fetchall()
        return {(agent, fact_id) for agent, fact_id in rows}

    def queue_delete(self, agent: str, fact_id: str) -> None:
        self.conn.execute(
            "DELETE FROM embed_queue WHERE agent_id = %s AND fact_id = %s", (agent, fact_id)
        )

    def queue_delete_many(self, entries: Sequence[tuple[str, str]]) -> None:
        if not entries:
            return
        agents, ids = zip(*entries, strict=True)
        self.conn.execute(
            "DELETE FROM embed_queue WHERE (agent_id, fact_id) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[]))",
            (list(agents), list(ids)),
        )

    def queue_size(self, agent: str | None = None) -> int:
        if agent is None:
            return int(self._one("SELECT count(*) FROM embed_queue"))
        return int(self._one("SELECT count(*) FROM embed_queue WHERE agent_id = %s", (agent,)))

    def iter_queue(self, agent: str | None = None) -> Iterator[tuple[str, str]]:
        """(agent, fact id) of queued facts in LMDB's key order, a page per round trip."""
        head = "SELECT agent_id, fact_id FROM embed_queue"
        tail = f" ORDER BY agent_id, fact_id LIMIT {PAGE}"
        if agent is None:
            first, more = head + tail, head + " WHERE (agent_id, fact_id) > (%s, %s)" + tail
            rows = self.conn.execute(first).fetchall()
        else:
            first = head + " WHERE agent_id = %s" + tail
            more = head + " WHERE agent_id = %s AND fact_id > %s" + tail
            rows = self.conn.execute(first, (agent,)).fetchall()
        while True:
            yield from rows
            if len(rows) < PAGE:
                return
            last = rows[-1]
            rows = self.conn.execute(more, last if agent is None else (agent, last[1])).fetchall()

    def vector_blocks(self, agent: str, model: str, since: int) -> VectorBlockRows:
        """One statement: the generation, the model and dimension, and every block of
        `agent` (when the model is `model`), with the rows and ids only of those stamped
        after `since` or not stamped. Unchanged blocks never leave the server."""
        blocks, ids, stamps = (agent_prefix(agent, kind) for kind in (b"b", b"i", b"c"))
        low, high = blocks, _prefix_end(blocks)
        rows = self.conn.execute(
            _VECTOR_BLOCKS,
            {
                "start": len(blocks) + 1,
                "ids": ids,
                "stamps": stamps,
                "low": low,
                "high": high,
                "model": model,
                "since": STAMP.pack(since) if since >= 0 else None,
                "model_key": EMBED_MODEL,
                "dim_key": EMBED_DIM,
            },
            binary=True,
        ).fetchall()
        generation, name, dimension = rows[0][0], rows[0][1], rows[0][2]
        found: list[tuple[int, bytes | None, bytes | None]] = []
        for _g, _m, _d, key, data, id_row in rows:
            if key is None:
                continue  # no block (or another model): the meta row alone
            number = BLOCK_NO.unpack(bytes(key)[len(blocks) :])[0]
            found.append(
                (
                    number,
                    None if data is None else bytes(data),
                    None if id_row is None else bytes(id_row),
                )
            )
        return VectorBlockRows(
            int(generation or 0), name, int(dimension) if dimension else None, found
        )

    # ---- lifespans (schema 5 here, LMDB's schema 6; see lifespan_ops) ---------------------
    def lifespan(self, agent: str, fact_id: str) -> bytes | None:
        found = self._one(
            "SELECT record::text FROM lifespans WHERE agent_id = %s AND fact_id = %s",
            (agent, fact_id),
        )
        return None if found is None else str(found).encode()

    def put_lifespan(self, agent: str, fact_id: str, value: bytes) -> None:
        self.conn.execute(
            "INSERT INTO lifespans (agent_id, fact_id, record) VALUES (%s, %s, %s::json) "
            "ON CONFLICT (agent_id, fact_id) DO UPDATE SET record = EXCLUDED.record",
            (agent, fact_id, value.decode()),
        )

    def iter_lifespans(self, agent: str | None) -> Iterator[tuple[str, str, bytes]]:
        if agent is None:
            rows = self.conn.execute(
                "SELECT agent_id, fact_id, record::text FROM lifespans ORDER BY agent_id, fact_id"
            )
        else:
            rows = self.conn.execute(
                "SELECT agent_id, fact_id, record::text FROM lifespans WHERE agent_id = %s "
                "ORDER BY fact_id",
                (agent,),
            )
        for owner, fact_id, raw in rows.fetchall():
            yield owner, fact_id, raw.encode()

    # ---- whole tables, for a migration (ADR 0046) -----------------------------------------
    def iter_rows(self, table: CopyTable) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every row of `table` in the LMDB backend's layout and key order
        (byte order: the columns use the "C" collation)."""
        if table in ("graph_nodes", "graph_edges"):
            sql = f"SELECT key, value FROM {_graph(table)} ORDER BY key"
            for key, value in self.conn.execute(sql).fetchall():
                yield bytes(key), bytes(value)
        elif table == "extracted":
            for key, value in self.conn.execute(
                "SELECT key, signature FROM extracted ORDER BY key"
            ).fetchall():
                yield bytes(key), bytes(value)
        elif table == "receipts":
            for summary_id, consumed in self.conn.execute(
                "SELECT summary_id, consumed FROM receipts ORDER BY summary_id"
            ).fetchall():
                yield summary_id.encode(), encode(list(consumed))
        elif table == "proposals":
            for proposal_id, raw in self.conn.execute(
                "SELECT id, record::text FROM proposals ORDER BY id"
            ).fetchall():
                yield proposal_id.encode(), raw.encode()
        else:
            name, column = _keyed(table)
            for agent, key, raw in self.conn.execute(
                f"SELECT agent_id, {column}, record::text FROM {name} ORDER BY agent_id, {column}"
            ).fetchall():
                yield agent.encode() + SEP + key.encode(), raw.encode()

    def put_rows(self, table: CopyTable, rows: list[tuple[bytes, bytes]]) -> None:
        """Write rows as `iter_rows` gives them (sent by COPY: a new key each)."""
        if not rows:
            return
        made: Iterator[tuple[Any, ...]]
        if table in ("graph_nodes", "graph_edges"):
            sql = f"COPY {_graph(table)} (agent_id, key, value) FROM STDIN"
            made = ((k.split(SEP, 1)[0].decode(), k, v) for k, v in rows)
        elif table == "extracted":
            sql, made = "COPY extracted (key, signature) FROM STDIN", iter(rows)
        elif table == "receipts":
            sql = "COPY receipts (summary_id, consumed) FROM STDIN"
            made = ((k.decode(), decode_ids(v)) for k, v in rows)
        elif table == "proposals":
            sql = "COPY proposals (id, record) FROM STDIN"
            made = ((k.decode(), v.decode()) for k, v in rows)
        else:
            name, column = _keyed(table)
            sql = f"COPY {name} (agent_id, {column}, record) FROM STDIN"
            made = ((*(part.decode() for part in k.split(SEP, 1)), v.decode()) for k, v in rows)
        with self.conn.cursor().copy(sql) as copy:
            for row in made:
                copy.write_row(row)

    def put_activity(self, entries: list[ActivityEntry]) -> None:
        """Activity entries under their own write numbers; the caller sets `activity_seq`."""
        with self.conn.cursor().copy("COPY activity (seq, entry) FROM STDIN") as copy:
            for entry in entries:
                copy.write_row((entry.seq, encode(entry).decode()))


def _keyed(table: CopyTable) -> tuple[str, str]:
    """(table, key column) of a table keyed by agent and one more column."""
    return {
        "checkpoints": ("checkpoints", "id"),
        "aliases": ("aliases", "term"),
        "lifespans": ("lifespans", "fact_id"),
    }[table]


def _graph(table: GraphTable | CopyTable) -> str:
    """The table's name, from the two the type allows (never from input)."""
    return {"graph_nodes": "graph_nodes", "graph_edges": "graph_edges"}[table]


def _prefix_end(prefix: bytes) -> bytes | None:
    """The least key greater than every key starting with `prefix` (None: there is none)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def _key_range(prefix: bytes) -> tuple[str, list[bytes]]:
    """The condition on `key` of the rows under `prefix` (an index range), and its
    parameters."""
    if not prefix:
        return "TRUE", []
    end = _prefix_end(prefix)
    if end is None:
        return "key >= %s", [prefix]
    return "key >= %s AND key < %s", [prefix, end]


# `PgTx.vector_blocks`: the meta row always, joined with the blocks when the model is
# the one asked about; a block's data and ids only when its stamp is newer than `since`.
_VECTOR_BLOCKS = """
SELECT m.generation, m.model, m.dimension, b.key,
       CASE WHEN b.changed THEN b.data END, CASE WHEN b.changed THEN b.ids END
FROM (
    SELECT (SELECT value FROM counters WHERE name = 'generation') AS generation,
           (SELECT value FROM graymatter_meta WHERE key = %(model_key)s) AS model,
           (SELECT value FROM graymatter_meta WHERE key = %(dim_key)s) AS dimension
) m
LEFT JOIN LATERAL (
    SELECT d.key, d.value AS data, i.value AS ids,
           (%(since)s::bytea IS NULL OR c.value IS NULL OR c.value > %(since)s::bytea)
               AS changed
    FROM vectors d
    LEFT JOIN vectors i ON i.key = %(ids)s::bytea || substring(d.key FROM %(start)s::int)
    LEFT JOIN vectors c ON c.key = %(stamps)s::bytea || substring(d.key FROM %(start)s::int)
    WHERE d.key >= %(low)s::bytea AND d.key < %(high)s::bytea AND m.model = %(model)s::text
) b ON true
ORDER BY b.key
"""
