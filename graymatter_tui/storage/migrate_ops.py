"""Copying a whole store into another, whichever backends hold them (ADR 0046), as
functions over one transaction of each, shared by both backends: `snapshot` reads
everything a migration carries in one read transaction of the source, `load` writes it
in one write transaction of the target. A migration stopped half-way therefore leaves
the target exactly as it was.

Facts go in through `insert_many`, so the target builds its own indexes, counts and
recall postings; the journal, receipts, probes, checkpoints, aliases, the review queue,
the graph and its extraction watermark are copied row for row; the counters are moved
by what the source holds. Embedding vectors come along when the target holds none or the
same model's (`vector_ops.copy_mode`, ADR 0058): rows byte for byte, with the queue of
facts still waiting, so nothing is embedded again; a target of another model queues the
copied facts for its own, as a switch of model does.
"""

from __future__ import annotations

from contextlib import nullcontext

from graymatter_tui.core.errors import Conflict
from graymatter_tui.core.model import Fact
from graymatter_tui.core.progress import Report
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.core.words import counted
from graymatter_tui.storage import conflict_ops, lifespan_ops, probe_ops, queries, vector_ops
from graymatter_tui.storage.fact_ops import DEMO_KEY
from graymatter_tui.storage.transaction import (
    COPY_TABLES,
    CopyTable,
    Transaction,
    VectorTransaction,
    analyzer_for,
)
from graymatter_tui.storage.values import (
    MAX_NAMED,
    MOVED_COUNTERS,
    LoadResult,
    StoreSnapshot,
    TargetNotEmpty,
    VectorLoad,
)

# Facts are inserted in five chunks (of at least CHUNK), each reported to `progress`:
# few enough that PostgreSQL's statistics refresh after a bulk insert runs five times.
CHUNK = 2_000
STEPS = 5


def snapshot(tx: VectorTransaction) -> StoreSnapshot:
    """Everything a migration carries (see the module docstring), in one transaction."""
    activity = list(tx.iter_activity())
    activity.reverse()
    return StoreSnapshot(
        stem_language=tx.analyzer.language,
        demo=tx.meta_get(DEMO_KEY),
        counters={name: tx.meta_int(name) for name in MOVED_COUNTERS},
        facts=queries.all_facts(tx),
        records=list(tx.iter_records(newest_first=False)),
        probes=probe_ops.listing(tx, None),
        rows={table: _rows(tx, table) for table in COPY_TABLES},
        activity=activity,
        vectors=vector_ops.snapshot(tx),
        probe_schedule={
            key: value
            for key, value in tx.meta_many(probe_ops.SCHEDULE_ROWS).items()
            if value is not None
        },
    )


def _rows(tx: Transaction, table: CopyTable) -> list[tuple[bytes, bytes]]:
    """A table's rows; a store from before schema 6 read as it is gives the endings its
    upgrade would derive, so the copy holds them and verifies against them."""
    if table == "lifespans" and not tx.keeps_lifespans:
        return lifespan_ops.derived_rows(tx)
    return list(tx.iter_rows(table))


def prepare_terms(
    snap: StoreSnapshot, progress: Report | None
) -> tuple[list[dict[str, int]], Analyzer]:
    """Each live fact's index terms in the source's language, made before the write
    transaction so the target's write lock is held for less time."""
    analyzer = analyzer_for(snap.stem_language)
    terms: list[dict[str, int]] = []
    for done, fact in enumerate(snap.facts, start=1):
        terms.append(analyzer.term_counts(fact.text) if fact.is_live else {})
        if progress is not None and (done % 1000 == 0 or done == len(snap.facts)):
            progress("indexing", done, len(snap.facts))
    return terms, analyzer


def holdings(tx: Transaction) -> str:
    """What the store holds, in words ("12 facts, 3 journal records"); "" when empty."""
    parts = []
    for count, noun in (
        (tx.count_facts(), "fact"),
        (tx.count_records(), "journal record"),
        (len(probe_ops.listing(tx, None)), "probe"),
    ):
        if count:
            parts.append(counted(count, noun))
    for table in COPY_TABLES:
        if next(iter(tx.iter_rows(table)), None) is not None:
            parts.append(f"{table.replace('_', ' ')} rows")
    return ", ".join(parts)


def load(
    tx: VectorTransaction,
    snap: StoreSnapshot,
    terms: list[dict[str, int]],
    made_by: Analyzer,
    *,
    allow_non_empty: bool,
    origin: str,
    progress: Report | None,
    embed_model: str | None = None,
) -> LoadResult:
    """Write `snap` into the store, all in this transaction. An empty store takes the
    source's stemming language, demo mark and activity feed too. A store holding
    anything is refused (TargetNotEmpty) unless `allow_non_empty`; then any id or key
    the two stores share is refused (Conflict) and the counters add up. The vectors
    come along as `vector_ops.copy_mode` decides (`embed_model`: the model the store's
    embedder will use, when known)."""
    held = holdings(tx)
    if held and not allow_non_empty:
        raise TargetNotEmpty(held)
    if held:
        _refuse_clashes(tx, snap)
    else:
        if tx.analyzer.language != snap.stem_language:
            tx.set_analyzer(snap.stem_language)
        if snap.demo is not None:
            tx.meta_put(DEMO_KEY, snap.demo)
        for key, value in snap.probe_schedule.items():  # an empty store takes the schedule
            tx.meta_put(key, value)
    mode = vector_ops.copy_mode(tx, snap.vectors, embed_model)
    if mode == "switch" and embed_model is not None:
        vector_ops.start(tx, embed_model)  # as its embedder would; the copied facts queue
    queued_before = tx.queue_size()
    chunk = max(CHUNK, -(-len(snap.facts) // STEPS))
    # Copied vectors and queue stand for the facts: they are not queued as they go in.
    with tx.queueing_held() if mode == "copy" else nullcontext():
        for start in range(0, len(snap.facts), chunk):
            end = min(start + chunk, len(snap.facts))
            tx.insert_many(snap.facts[start:end], terms[start:end], made_by)
            if progress is not None:
                progress("copying", end, len(snap.facts))
    if mode == "copy":
        if progress is not None:
            progress("copying vectors", 0, 1)
        vector_ops.load_copy(tx, snap.vectors)
        if progress is not None:
            progress("copying vectors", 1, 1)
    for record in snap.records:
        tx.put_record(record)
    for table in COPY_TABLES:
        tx.put_rows(table, snap.rows[table])
    conflict_ops.remember_pairs(tx)  # the pairs raised there are not asked again here
    for probe in snap.probes:
        probe_ops.put(tx, probe)
    for name in MOVED_COUNTERS:
        if name != "activity_seq" and snap.counters[name]:
            tx.bump(name, snap.counters[name])
    # The feed is the source's history; it comes along only where no history would mix.
    copy_feed = tx.last_activity() == 0
    if copy_feed:
        tx.put_activity(snap.activity)
        if snap.counters["activity_seq"]:
            tx.bump("activity_seq", snap.counters["activity_seq"])
    _log_moved(tx, snap.facts, origin)
    model, dimension = vector_ops.model(tx)
    copied = vector_ops.facts_with_vectors(snap.vectors) if mode == "copy" else 0
    vectors = VectorLoad(mode, model, dimension, copied, tx.queue_size() - queued_before)
    return LoadResult(
        facts=len(snap.facts),
        records=len(snap.records),
        activity_copied=copy_feed,
        vectors=vectors,
    )


def _log_moved(tx: Transaction, facts: list[Fact], origin: str) -> None:
    """One activity entry per agent, saying where its facts came from."""
    by_agent: dict[str, int] = {}
    for fact in facts:
        by_agent[fact.agent_id] = by_agent.get(fact.agent_id, 0) + 1
    for agent, count in by_agent.items():
        text = f"{counted(count, 'fact')} migrated from {origin}"
        tx.log("import", agent, text=text, count=count)


def _refuse_clashes(tx: Transaction, snap: StoreSnapshot) -> None:
    """Into a store that holds something, nothing the source has may be there already."""
    clashes = [f"fact {f.id}" for f in snap.facts if tx.id_in_use(f.id)]
    clashes += [f"journal record {r.cycle_id}" for r in snap.records if tx.id_in_use(r.cycle_id)]
    stored = probe_ops.listing(tx, None)
    ids, asked = {p.id for p in stored}, {(p.agent_id, p.query) for p in stored}
    clashes += [
        f"probe {p.id}" for p in snap.probes if p.id in ids or (p.agent_id, p.query) in asked
    ]
    for table in COPY_TABLES:
        keys = {key for key, _ in tx.iter_rows(table)}
        shown = table.replace("_", " ")
        clashes += [f"{shown} row {key!r}" for key, _ in snap.rows[table] if key in keys]
    if clashes:
        more = f"; and {len(clashes) - MAX_NAMED} more" if len(clashes) > MAX_NAMED else ""
        raise Conflict(
            f"the target already holds {len(clashes)} of the source's ids or keys "
            f"({', '.join(clashes[:MAX_NAMED])}{more}); nothing was copied"
        )
