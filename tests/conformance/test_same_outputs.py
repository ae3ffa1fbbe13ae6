"""One script of curation run on both backends with the same clock and the same seeded
ids: every read (facts, lists, pages, agents, activity, recall order and scores) comes out
identical, and invariants I-1…I-6 hold on both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.recall.ranking import rank, recall
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.ids import seed_ids
from tests.conformance.conftest import START, AnyStore
from tests.support.clock import ManualClock

QUERIES = ("database port", "deploy keys rotate", "cat", "red lamp kitchen", "zzz-nothing")


@pytest.fixture(autouse=True)
def unseeded_afterwards() -> Iterator[None]:
    yield
    seed_ids(None)


def _script(store: AnyStore, clk: ManualClock) -> dict[str, Any]:
    """Curation of two agents touching every implemented operation; what each read gave."""
    seen: dict[str, Any] = {}
    clk.now = START
    seed_ids(1234)
    first_generation = store.generation()
    texts = [
        "The staging database listens on port 5432.",
        "Deploy keys rotate every month; the old key works for a day.",
        "The cat sleeps under the red lamp in the kitchen.",
        "Production database port is 6543, not 5432.",
        "Kitchen lamp is red; the cat likes it.",
        "A text with a NUL \x00 inside, about the database.",
    ]
    made = []
    for text in texts:
        clk.advance(seconds=7)
        made.append(store.put("ops", text))
    clk.advance(minutes=1)
    bulk = store.put_many(
        [NewFact("research", f"research note {i} on database ports and cats") for i in range(40)]
        + [NewFact("ops", "bulk ops fact about deploy keys", weight=0.25, pinned=True)]
    )
    clk.advance(minutes=1)
    store.pin(made[0].id)
    store.unpin(made[0].id)
    store.pin(made[2].id)
    clk.advance(minutes=1)
    revision, _ = store.revise(made[2].id, "The cat now sleeps under the blue lamp.")
    store.retire(made[3].id)
    replacement, _ = store.supersede_text("ops", made[1].text, "Deploy keys rotate weekly.")
    store.pin_text("ops", replacement.text)
    store.retire_text("ops", made[4].text)
    clk.advance(hours=2)
    seen["touched"] = store.touch([made[0].id, made[0].id, made[3].id, bulk[0].id, "nope"])
    seen["deleted"] = store.delete([bulk[1].id, made[4].id])
    for query in QUERIES:
        for agent in ("ops", "research"):
            hits = recall(store, agent, query) if agent == "ops" else rank(store, agent, query)
            seen[f"recall {agent} {query}"] = [
                (h.fact.id, h.score, h.keyword_rank, h.recency_rank) for h in hits
            ]
    seen["all_facts"] = store.all_facts()
    for state in ("live", "tombstones", "all"):
        seen[f"list {state}"] = store.list_facts(None, state)  # type: ignore[arg-type]
        seen[f"page {state}"] = store.list_facts(
            "research",
            state,  # type: ignore[arg-type]
            limit=7,
            before=bulk[20].id,
        )
        seen[f"ids {state}"] = store.fact_ids("ops", state)  # type: ignore[arg-type]
        seen[f"texts {state}"] = store.texts("ops", state, limit=3)  # type: ignore[arg-type]
    seen["agents"] = store.agents()
    seen["counters"] = store.counters()
    seen["activity"] = store.activity()
    seen["activity page"] = store.activity(after=2, before=9, limit=3)
    seen["show"] = store.show(made[2].id)
    seen["show revision"] = store.show(revision.id)
    seen["writes"] = store.generation() - first_generation
    seen["unused id"] = store.unused_id(clk.now)
    seen["invariants"] = [(c.name, c.violations) for c in check_invariants(store)]
    return seen


def test_the_same_script_reads_the_same_on_both_backends(
    both_stores: tuple[AnyStore, AnyStore], clk: ManualClock
) -> None:
    lmdb_store, pg_store = both_stores
    on_lmdb = _script(lmdb_store, clk)
    on_pg = _script(pg_store, clk)
    assert on_lmdb.keys() == on_pg.keys()
    for key in on_lmdb:
        assert on_pg[key] == on_lmdb[key], key
    assert all(not violations for _name, violations in on_pg["invariants"])
    assert on_pg["recall ops database port"]  # the comparison compared something


def test_changing_the_stemming_language_reindexes_alike(
    both_stores: tuple[AnyStore, AnyStore], clk: ManualClock
) -> None:
    results = []
    for store in both_stores:
        clk.now = START
        seed_ids(99)
        store.put_many([NewFact("a", f"running runners ran {i}") for i in range(5)])
        before = [h.fact.id for h in rank(store, "a", "runs")]
        indexed = store.set_stem_language("none")
        after_none = [h.fact.id for h in rank(store, "a", "runs")]
        exact = [h.fact.id for h in rank(store, "a", "runners")]
        results.append((before, indexed, after_none, exact, store.info().stem_language))
    assert results[0] == results[1]
    before, indexed, after_none, exact, language = results[1]
    assert len(before) == 5 and indexed == 5 and after_none == [] and len(exact) == 5
    assert language == "none"
