"""The graph's reads (`entities`, `facts_mentioning`, `neighbours`) on a real store of each
backend: live facts only, the same before a cycle (the read extracts) and after it (the
watermark records each fact's entities), and a watermark of an older release upgraded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from graymatter_tui.core.entities import Entity, extract_entities
from graymatter_tui.storage import EntityCount, graph_ops
from graymatter_tui.storage.transaction import SEP
from tests.engine.helpers import AGENT
from tests.engine.test_graph_watermark import extracted
from tests.support.backends import AnyStore

TEXTS = [
    "Maria Lopez escalated ticket SUP-1234 to Dev Patel.",
    "Dev Patel closed SUP-1234 on Friday with Maria Lopez.",
    "Invoices for Acme Corp go to billing@example.com every Monday.",
    "Maria Lopez owns the Acme Corp account.",
    "the garden needs water",
]


class Counting:
    """`extract_entities`, counting the texts it is given."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> Sequence[Entity]:
        self.texts.append(text)
        return extract_entities(text)


def expected(store: AnyStore, agent: str = AGENT) -> list[tuple[str, int]]:
    """(entity id, live facts mentioning it), extracted here from the live facts."""
    counts: Counter[str] = Counter()
    for fact in store.list_facts(agent):
        counts.update(e.id for e in extract_entities(fact.text))
    return sorted(counts.items())


def counts(found: Sequence[EntityCount]) -> list[tuple[str, int]]:
    return sorted((e.id, e.facts) for e in found)


def seed(store: AnyStore) -> list[str]:
    return [store.put(AGENT, text).id for text in TEXTS]


def test_entities_count_live_facts_before_and_after_a_cycle(any_store: AnyStore) -> None:
    ids = seed(any_store)
    retired = any_store.put(AGENT, "Retired note about Lars Nilsson and Maria Lopez")
    any_store.retire(retired.id)
    before = any_store.entities(AGENT, extract_entities)
    assert counts(before.entities) == expected(any_store)
    assert before.live == len(ids) and before.pending == 0
    assert "name:lars nilsson" not in {e.id for e in before.entities}  # a tombstone's only
    maria = next(e for e in before.entities if e.id == "name:maria lopez")
    assert (maria.label, maria.type, maria.facts) == ("Maria Lopez", "name", 3)
    assert before.entities[0] == maria  # most mentioned first
    extracted(any_store)
    reading = Counting()
    after = any_store.entities(AGENT, reading)
    assert after == before
    assert reading.texts == []  # the cycle recorded each fact's entities: none re-extracted


def test_a_retired_fact_leaves_the_counts(any_store: AnyStore) -> None:
    ids = seed(any_store)
    extracted(any_store)
    any_store.retire(ids[3])  # "Maria Lopez owns the Acme Corp account."
    found = {e.id: e.facts for e in any_store.entities(AGENT, extract_entities).entities}
    assert found["name:maria lopez"] == 2 and found["name:acme corp"] == 1
    assert counts(any_store.entities(AGENT, extract_entities).entities) == expected(any_store)


def test_facts_mentioning_are_live_and_newest_first(any_store: AnyStore) -> None:
    ids = seed(any_store)
    extracted(any_store)
    newest = any_store.put(AGENT, "Maria Lopez joined the SUP-1234 call.")  # after the cycle
    any_store.retire(ids[1])
    found = any_store.facts_mentioning(AGENT, "ident:sup-1234", extract_entities)
    assert found == [newest.id, ids[0]]
    assert any_store.facts_mentioning(AGENT, "name:maria lopez", extract_entities) == [
        newest.id,
        ids[3],
        ids[0],
    ]
    assert any_store.facts_mentioning(AGENT, "name:nobody", extract_entities) == []
    assert any_store.facts_mentioning("other-agent", "name:maria lopez", extract_entities) == []


def test_neighbours_count_the_live_facts_that_mention_both(any_store: AnyStore) -> None:
    seed(any_store)
    extracted(any_store)
    found = any_store.neighbours(AGENT, "name:maria lopez", extract_entities)
    assert [(e.id, e.label, e.facts) for e in found] == [
        ("name:dev patel", "Dev Patel", 2),  # most shared facts first, then by label
        ("ident:sup-1234", "SUP-1234", 2),
        ("name:acme corp", "Acme Corp", 1),
    ]
    assert any_store.neighbours(AGENT, "name:nobody", extract_entities) == []


def test_a_read_extracts_only_the_newest_facts_no_cycle_has(
    any_store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(any_store)
    monkeypatch.setattr(graph_ops, "READ_EXTRACT_LIMIT", 2)
    reading = Counting()
    found = any_store.entities(AGENT, reading)
    assert reading.texts == TEXTS[-2:][::-1]  # the two newest
    assert found.pending == len(TEXTS) - 2
    assert counts(found.entities) == [("name:acme corp", 1), ("name:maria lopez", 1)]
    extracted(any_store)
    assert any_store.entities(AGENT, extract_entities).pending == 0


def test_a_cycle_records_the_entities_of_facts_an_older_release_extracted(
    any_store: AnyStore,
) -> None:
    ids = seed(any_store)
    extracted(any_store)
    head = AGENT.encode() + SEP

    def older_release(tx: object) -> None:  # a watermark of the signature alone
        tx.meta_put(graph_ops.MENTIONS_RECORDED + AGENT, "")  # type: ignore[attr-defined]
        for fact_id in ids:
            fact = tx.require(fact_id)  # type: ignore[attr-defined]
            tx.put_extracted(  # type: ignore[attr-defined]
                head + fact_id.encode(), graph_ops.text_signature(fact.text)
            )

    any_store._write(older_release)  # type: ignore[union-attr]
    reading = Counting()
    assert counts(any_store.entities(AGENT, reading).entities) == expected(any_store)
    assert sorted(reading.texts) == sorted(TEXTS)  # nothing recorded: read from the texts
    details = extracted(any_store)
    assert details["extracted"] == 0  # the graph already counts them
    reading = Counting()
    assert counts(any_store.entities(AGENT, reading).entities) == expected(any_store)
    assert reading.texts == []


def test_date_words_an_older_release_took_for_names_are_left_out(any_store: AnyStore) -> None:
    ids = seed(any_store)
    extracted(any_store)
    head = AGENT.encode() + SEP
    noise = ["name:friday", "name:friday utc", "name:july"]

    def older_extractor(tx: object) -> None:  # the same facts, as 0.8 recorded them
        for fact_id in ids[:2]:
            fact = tx.require(fact_id)  # type: ignore[attr-defined]
            ids_then = [e.id for e in extract_entities(fact.text)] + noise
            tx.put_extracted(  # type: ignore[attr-defined]
                head + fact_id.encode(),
                graph_ops.watermark(graph_ops.text_signature(fact.text), ids_then),
            )

    any_store._write(older_extractor)  # type: ignore[union-attr]
    listed = any_store.entities(AGENT, extract_entities).entities
    assert counts(listed) == expected(any_store)
    assert not {e.id for e in listed} & set(noise)
    beside = any_store.neighbours(AGENT, "name:maria lopez", extract_entities)
    assert {e.id for e in beside} == {"ident:sup-1234", "name:dev patel", "name:acme corp"}
    # An entity the reads leave out is still a key the reads answer: its facts are there.
    assert any_store.facts_mentioning(AGENT, "name:july", extract_entities) == sorted(
        ids[:2], reverse=True
    )
