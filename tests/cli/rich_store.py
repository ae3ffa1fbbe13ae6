"""A store with everything a round trip must carry: applied cycles, a revert, a rejected
cycle, a cycle that only pruned, pruned facts (copied into the journal), a revision, a
retirement and a pin, over two agents. Built with the real engine (`local` summariser)
on a fixed clock, so the CLI (GRAYMATTER_NOW) sees the same time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage import NewFact

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)  # conftest's GRAYMATTER_NOW
OPTIONS = CycleOptions(threshold=5)

GROUP_ONE = [
    "Staging database restarts nightly.",
    "Staging database restarts nightly. Owner is the ops team.",
    "Staging database restarts nightly. Backups run first.",
    "Staging database restarts nightly at 02:00.",
]
GROUP_TWO = [
    "Invoices for Acme go out by email.",
    "Invoices for Acme go out by email on Fridays.",
    "Invoices for Acme go out by email. Finance approves them.",
]
FILLER = [f"Unrelated note about topic {word}." for word in ("apple", "river", "cobalt", "quartz")]
ANCIENT = ["Old printer code 4471.", "Old wifi password hint.", "Old parking rule."]


def _until_review(cycle: Cycle) -> None:
    while not cycle.at_review and not cycle.done:
        asyncio.run(cycle.step())


def _cycle(store: LmdbStore, agent: str) -> CycleRecord:
    return Cycle(store, agent, LocalSummariser(), OPTIONS).run_sync()


def build_rich_store(path: Path) -> LmdbStore:
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    weak = NOW - timedelta(days=60)  # weight about 0.25: in the batch, never pruned
    ancient = NOW - timedelta(days=400)  # weight below 0.01: pruned by the next cycle
    store.put_many(
        [
            *(NewFact("ops", t, created_at=weak, accessed_at=weak) for t in GROUP_ONE),
            *(NewFact("ops", t, created_at=weak, accessed_at=weak) for t in GROUP_TWO),
            *(NewFact("ops", t, created_at=ancient, accessed_at=ancient) for t in ANCIENT),
            *(NewFact("ops", t) for t in FILLER),
            NewFact("ops", "Never deploy on Fridays.", pinned=True),
            *(NewFact("support", t) for t in FILLER),
        ]
    )
    first = _cycle(store, "ops")
    assert first.outcome == "applied" and len(first.consumed) == 4, first.reason
    assert len(first.pruned) == 3
    second = _cycle(store, "ops")
    assert second.outcome == "applied" and len(second.consumed) == 3, second.reason
    store.revert(second.cycle_id)
    rejected = Cycle(store, "ops", LocalSummariser(), OPTIONS)
    _until_review(rejected)
    rejected.reject()
    assert rejected.record.outcome == "discarded"
    only_prune = Cycle(store, "support", None, OPTIONS).run_sync()
    assert only_prune.outcome == "skipped"
    support = store.list_facts("support")
    store.revise(support[0].id, "Unrelated note about topic apple, revised.")
    store.retire(support[1].id)
    counters = store.counters()
    assert (counters.cycles, counters.consolidations, counters.reverts) == (4, 2, 1)
    return store
