"""Lineage for explain: what a fact superseded, followed transitively through revisions
and a summary's receipts, never through a retired fact, and stopping at a cycle of ids
or at the caps without looping. Lineages of revisions and summaries run on both backends;
the corrupt rows (loops, receipts naming a retired or missing fact) are written through
LMDB's raw transaction, so those run on LMDB only."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import RETIRED, Fact
from graymatter_tui.core.receipts import MAX_LINEAGE_DEPTH, lineage_fields, lineage_summary
from graymatter_tui.recall.ranking import lineages
from tests.engine.helpers import AGENT
from tests.engine.test_revert import applied, seed_weighted
from tests.support.backends import AnyStore
from tests.support.ollama_fake import FakeOllama

STAMP = "2026-02-01T10:00:00.000000Z"
IDS = [f"01KG00000000000000000000{i:02d}" for i in range(1, 10)]


def hand_made(fact_id: str, superseded_by: str = "", text: str = "") -> Fact:
    return Fact(
        id=fact_id,
        agent_id=AGENT,
        text=text or f"hand-made fact {fact_id[-2:]}",
        created_at=STAMP,
        accessed_at=STAMP,
        superseded_by=superseded_by,
    )


def test_revisions_of_a_summary_lead_back_to_what_it_consumed(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    facts = seed_weighted(any_store)
    consumed = [f.id for f in facts[:3]]
    record = applied(any_store, ollama, consumed)
    first, _ = any_store.revise(record.summary_id, "merged garden notes, corrected")
    latest, _ = any_store.revise(first.id, "merged garden notes, corrected twice")
    any_store.retire(facts[5].id)  # retired: superseded by "agent", in nobody's lineage

    found = lineages(any_store, AGENT, [latest.id])[latest.id]

    nearest_first = [(a.fact_id, a.replaced_by, a.depth) for a in found.ancestors]
    assert nearest_first[:2] == [(first.id, latest.id, 1), (record.summary_id, first.id, 2)]
    assert sorted(nearest_first[2:]) == sorted((i, record.summary_id, 3) for i in consumed)
    assert facts[5].id not in {a.fact_id for a in found.ancestors}
    assert not found.capped and not found.cycle
    assert all(a.fact is not None for a in found.ancestors)
    fields = lineage_fields(found)
    assert fields["lineage"][1]["source"] == "consolidation"
    assert fields["lineage"][1]["cycle_id"] == record.cycle_id
    assert lineage_summary(fields) == "replaced 5 facts (3 deep)"
    # A fact that replaced nothing has an empty lineage.
    plain = lineages(any_store, AGENT, [facts[10].id])[facts[10].id]
    assert plain.ancestors == [] and lineage_summary(lineage_fields(plain)) == "replaced nothing"


def test_a_retired_fact_is_no_ones_predecessor(gm: LmdbStore) -> None:
    kept = gm.put(AGENT, "the kept fact")
    # A corrupt receipt naming a retired fact still gives no lineage through "agent".
    gm.write(
        lambda tx: [
            tx.write_fact(hand_made(IDS[0], RETIRED), None),
            tx.put_receipts(kept.id, [IDS[0]]),
        ]
    )
    assert lineages(gm, AGENT, [kept.id])[kept.id].ancestors == []


def test_a_loop_of_superseded_by_ids_ends_the_walk(gm: LmdbStore) -> None:
    a, b, c = IDS[:3]
    gm.write(
        lambda tx: [
            tx.write_fact(hand_made(a, superseded_by=b), None),
            tx.write_fact(hand_made(b, superseded_by=c), None),
            tx.write_fact(hand_made(c, superseded_by=a), None),
        ]
    )
    found = lineages(gm, AGENT, [a])[a]
    assert [(x.fact_id, x.depth) for x in found.ancestors] == [(c, 1), (b, 2)]
    assert found.cycle and not found.capped
    assert "stopped at a cycle of ids" in lineage_summary(lineage_fields(found))


def test_receipts_that_close_a_cycle_through_a_live_fact_end_the_walk(gm: LmdbStore) -> None:
    live = gm.put(AGENT, "the summary everyone points at")
    tomb = IDS[3]
    gm.write(
        lambda tx: [
            tx.write_fact(hand_made(tomb, superseded_by=live.id), None),
            tx.put_receipts(live.id, [tomb]),
            tx.put_receipts(tomb, [live.id]),  # corrupt: the tombstone "consumed" its successor
        ]
    )
    found = lineages(gm, AGENT, [live.id])[live.id]
    assert [x.fact_id for x in found.ancestors] == [tomb]  # once, though named twice
    assert found.cycle


def test_a_long_revision_chain_is_capped_and_says_so(any_store: AnyStore) -> None:
    fact = any_store.put(AGENT, "version 0")
    for n in range(1, MAX_LINEAGE_DEPTH + 5):
        fact, _ = any_store.revise(fact.id, f"version {n}")
    found = lineages(any_store, AGENT, [fact.id])[fact.id]
    assert len(found.ancestors) == MAX_LINEAGE_DEPTH
    assert found.ancestors[-1].fact is not None
    assert found.ancestors[-1].fact.text == "version 4"
    assert found.capped and not found.cycle
    assert "capped at" in lineage_summary(lineage_fields(found))


def test_a_pruned_predecessor_is_named_without_its_text(gm: LmdbStore) -> None:
    live = gm.put(AGENT, "summary of pruned facts")
    gm.write(lambda tx: tx.put_receipts(live.id, [IDS[4]]))  # IDS[4] is not in the store
    fields = lineage_fields(lineages(gm, AGENT, [live.id])[live.id])
    assert fields["lineage"] == [
        {
            "fact_id": IDS[4],
            "replaced_by": live.id,
            "depth": 1,
            "pruned": True,
            "text": None,
            "source": None,
            "written_at": None,
            "cycle_id": None,
        }
    ]
