"""How much map a bulk write may need, so the LMDB store grows its map once up front
rather than fill it and redo the whole transaction (ADR 0015). Checked against real
writes of several shapes of data in tests/store/test_bulk_write.py."""

from __future__ import annotations

from collections.abc import Sequence

from graymatter_tui.backends.lmdb.tx import DF, POSTING, VITALS
from graymatter_tui.core.model import CycleRecord, Fact
from graymatter_tui.storage.codec import encode
from graymatter_tui.storage.values import StoreSnapshot

# LMDB's pages are 4 KiB here; a split leaves a page half full, so an entry is counted
# twice, with 16 bytes of node header; a value too big for half a page goes to whole
# overflow pages of its own.
PAGE = 4096
ENTRY_HEADER = 16
FACT_JSON_OVERHEAD = 320  # a fact row's JSON around its text: names, stamps, id, weight


def _entry(key: int, value: int) -> int:
    """Map bytes one entry takes (see above)."""
    if key + value + ENTRY_HEADER > PAGE // 2:
        return -(-(value + ENTRY_HEADER) // PAGE) * PAGE + 2 * (key + ENTRY_HEADER)
    return 2 * (key + value + ENTRY_HEADER)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


def bulk_size(agent: str, text: str, terms: dict[str, int]) -> int:
    """About how many bytes of map inserting one live fact takes, never fewer: its fact
    row, vitals, id and state index entries, and a posting and a term row per term."""
    agent_len = _utf8_len(agent)
    key = agent_len + 27
    size = _entry(key, _utf8_len(text) + agent_len + FACT_JSON_OVERHEAD)
    size += _entry(key, VITALS.size) + _entry(26, agent_len) + _entry(key + 2, 0)
    if terms:
        # Per term: a posting (key: agent, term, id; 4-byte value) and a term row (agent,
        # term; 4-byte value), each counted twice; then every term's bytes, four times.
        per_term = 2 * ((key + 1 + POSTING.size) + (agent_len + 1 + DF.size)) + 4 * ENTRY_HEADER
        size += len(terms) * per_term + 4 * _utf8_len(" ".join(terms))
    return size


def bulk_reservation(texts: list[tuple[str, str]], terms: list[dict[str, int]]) -> tuple[int, int]:
    """(new bytes, bytes of existing pages it may copy) for inserting facts given as
    (agent, text) with their term counts: the arguments of `Store.reserve`."""
    size = entries = 0
    for (agent, text), counts in zip(texts, terms, strict=True):
        size += bulk_size(agent, text, counts)
        entries += 4 + 2 * len(counts)
    return size, entries * PAGE


def for_records(records: Sequence[CycleRecord]) -> tuple[int, int]:
    """Journal rows and receipts of imported records."""
    return sum(2 * len(encode(r)) + PAGE for r in records), len(records) * PAGE


PAIR_ITEM_OVERHEAD = 900  # a review item's JSON around its two texts, and its meta row


def for_pair_items(facts: Sequence[Fact]) -> int:
    """Review items the pair check may hold for imported facts that name no source (it
    checks those): at most a duplicate and a possible update each, holding the fact's
    text and the held one's, counted here as long as the fact's."""
    return sum(
        2 * (_entry(64, 2 * _utf8_len(f.text) + PAIR_ITEM_OVERHEAD) + _entry(64, 32))
        for f in facts
        if f.is_live and not f.source
    )


def for_import(
    facts: Sequence[Fact], terms: list[dict[str, int]], records: Sequence[CycleRecord]
) -> tuple[int, int]:
    """(bytes, rewrites) of map an import may need: the arguments of `reserve`."""
    size, rewrites = bulk_reservation([(f.agent_id, f.text) for f in facts], terms)
    more, copied = for_records(records)
    return size + more + for_pair_items(facts), rewrites + copied


def for_snapshot(snap: StoreSnapshot, terms: list[dict[str, int]]) -> tuple[int, int]:
    """(bytes, rewrites) of map loading a migration's snapshot may need."""
    size, rewrites = bulk_reservation([(f.agent_id, f.text) for f in snap.facts], terms)
    size += sum(2 * len(encode(r)) + PAGE for r in snap.records)
    rows = [row for table in snap.rows.values() for row in table]
    size += sum(2 * (len(k) + len(v) + ENTRY_HEADER) for k, v in rows)
    size += sum(2 * (len(encode(e)) + 8 + ENTRY_HEADER) for e in snap.activity)
    # The vector rows (blocks overflow to pages of their own), their stamps and the queue.
    vectors = snap.vectors.rows
    size += sum(_entry(len(k), len(v)) + _entry(len(k), 8) for k, v in vectors)
    size += sum(_entry(_utf8_len(a) + _utf8_len(f) + 1, 0) for a, f in snap.vectors.queue)
    moved = len(snap.records) + len(rows) + len(vectors) + len(snap.vectors.queue)
    return size, rewrites + moved * 64
