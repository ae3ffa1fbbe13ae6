"""Rebuilding the recall index: every live fact's postings and every term's document
frequency made again with the store's analyzer (schema 4's migration, and a change of a
store's stemming language)."""

from __future__ import annotations

from graymatter_tui.core.progress import Report
from graymatter_tui.storage.transaction import Transaction

# Facts indexed between progress reports (and per batch handed to the index).
BATCH = 5000


def reindex(tx: Transaction, progress: Report | None = None) -> int:
    """Re-index every live fact of every agent in this transaction; returns how many."""
    agents = tx.agent_names()
    total = sum(tx.live_count(agent) for agent in agents)
    tx.clear_index()
    done = 0
    if progress is not None:
        progress("re-indexing", 0, total)
    for agent in agents:
        batch: list[tuple[str, str, str]] = []
        for fact_id, text in tx.iter_texts(agent, "live"):
            batch.append((agent, fact_id, text))
            if len(batch) == BATCH:
                done += _flush(tx, batch, done, total, progress)
        done += _flush(tx, batch, done, total, progress)
    tx.flush_counts()
    return done


def change_language(tx: Transaction, language: str, progress: Report | None = None) -> int:
    """Make `language` the store's stemming language and re-index every live fact in it."""
    tx.set_analyzer(language)
    return reindex(tx, progress)


def _flush(
    tx: Transaction,
    batch: list[tuple[str, str, str]],
    done: int,
    total: int,
    progress: Report | None,
) -> int:
    tx.index_texts(batch)
    count = len(batch)
    batch.clear()
    if progress is not None and count:
        progress("re-indexing", done + count, total)
    return count
