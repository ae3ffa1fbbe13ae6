"""Entity extraction, the extraction watermark (each fact extracted once per text) and
graph decay, through real cycles on a real store."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from graymatter_tui.consolidation.cycle import STAGES, Cycle, CycleOptions
from graymatter_tui.graph import Entity, extract_entities
from graymatter_tui.store import NewFact, Store
from graymatter_tui.store.graph_ops import Edge, Node
from graymatter_tui.store.tx import SEP, Tx
from tests.engine.helpers import AGENT, Clock

HALF_LIFE = 720.0

TEXTS = [
    "Maria Lopez escalated ticket SUP-1234 to Dev Patel.",
    "Invoices go to billing@example.com every Monday.",
    "The SSO guide lives at https://docs.example.com/sso for Acme Corp.",
    "Run EXP-77 used the new tokenizer.",
    "Chen Wei owns the search indexer.",
    "the garden needs water",
]


def extracted(store: Store, agent: str = AGENT, **options: Any) -> dict[str, Any]:
    """Run one cycle without a summariser; the extract stage's details."""
    record = Cycle(store, agent, None, CycleOptions(**options)).run_sync()
    return record.stages[STAGES.index("extract")].details


def signatures(store: Store, agent: str = AGENT) -> set[str]:
    """Fact ids that carry an extraction signature."""

    def run(tx: Tx) -> set[str]:
        head = agent.encode() + SEP
        cursor = tx.txn.cursor(db=tx.dbs.extracted)
        out = set()
        found = cursor.set_range(head)
        while found and cursor.key().startswith(head):
            out.add(bytes(cursor.key()[len(head) :]).decode())
            found = cursor.next()
        return out

    return store.read(run)


def graph(store: Store, agent: str = AGENT) -> tuple[dict[str, Node], dict[str, Edge]]:
    def run(tx: Tx) -> tuple[dict[str, Node], dict[str, Edge]]:
        head = agent.encode() + SEP
        nodes: dict[str, Node] = {}
        edges: dict[str, Edge] = {}
        for db, kind, out in ((tx.dbs.graph_nodes, Node, nodes), (tx.dbs.graph_edges, Edge, edges)):
            cursor = tx.txn.cursor(db=db)
            found = cursor.set_range(head)
            while found and cursor.key().startswith(head):
                item = msgspec.json.decode(cursor.value(), type=kind)
                out[bytes(cursor.key()[len(head) :]).decode()] = item
                found = cursor.next()
        return nodes, edges

    return store.read(run)


# ---------------------------------------------------------------- extract_entities


def test_extract_identifiers_emails_urls_and_names() -> None:
    text = (
        "Maria Lopez escalated SUP-1234 and INC-9 to Dev Patel; mail maria@example.org "
        "or see https://docs.example.com/sso."
    )
    assert {(e.type, e.label) for e in extract_entities(text)} == {
        ("name", "Maria Lopez"),
        ("name", "Dev Patel"),
        ("ident", "SUP-1234"),
        ("ident", "INC-9"),
        ("email", "maria@example.org"),
        ("url", "https://docs.example.com/sso"),
    }


def test_entity_ids_are_type_scoped_and_case_folded() -> None:
    assert extract_entities("We asked Maria Lopez about SUP-1234") == [
        Entity("ident:sup-1234", "SUP-1234", "ident"),
        Entity("name:maria lopez", "Maria Lopez", "name"),
    ]


def test_repeated_entities_are_extracted_once() -> None:
    found = extract_entities("SUP-1234 again, SUP-1234 and Maria Lopez with Maria Lopez")
    assert [e.id for e in found] == ["ident:sup-1234", "name:maria lopez"]


def test_sentence_initial_words_are_not_names() -> None:
    assert extract_entities("The garden needs water. Tomorrow it rains.") == []
    assert [e.label for e in extract_entities("The Acme Corp renewal is due")] == ["Acme Corp"]


def test_sentence_initial_word_is_not_part_of_an_entity() -> None:
    assert [e.label for e in extract_entities("Yesterday Maria Lopez approved it.")] == [
        "Maria Lopez"
    ]


def test_lower_case_text_has_no_entities() -> None:
    assert extract_entities("ticket sup-1234 is about the garden") == []


def test_a_url_does_not_also_yield_a_name_or_identifier() -> None:
    found = extract_entities("see https://example.com/Maria/ABC-12 now")
    assert [e.type for e in found] == ["url"]


# ---------------------------------------------------------------- the watermark


def seed(store: Store) -> list[str]:
    return [f.id for f in store.put_many(NewFact(agent_id=AGENT, text=t) for t in TEXTS)]


def test_a_cycle_extracts_every_live_fact_once(gm: Store) -> None:
    ids = seed(gm)
    retired = gm.put(AGENT, "Retired note about Lars Nilsson")
    gm.retire(retired.id)
    details = extracted(gm)
    assert details["extracted"] == len(TEXTS)
    assert details["unchanged"] == 0
    assert signatures(gm) == set(ids)
    nodes, edges = graph(gm)
    assert "name:lars nilsson" not in nodes  # tombstones are never extracted
    assert {
        "name:maria lopez",
        "ident:sup-1234",
        "name:dev patel",
        "email:billing@example.com",
        "url:https://docs.example.com/sso",
        "name:acme corp",
        "ident:exp-77",
        "name:chen wei",
        "name:monday",
    } == set(nodes)
    assert "ident:sup-1234\x00name:maria lopez" in edges
    assert edges["ident:sup-1234\x00name:maria lopez"].sources == [ids[0]]
    assert gm.graph_size(AGENT) == (len(nodes), len(edges))


def test_an_unchanged_second_cycle_extracts_nothing(gm: Store) -> None:
    seed(gm)
    extracted(gm)
    nodes_before, _ = graph(gm)
    details = extracted(gm)
    assert details["extracted"] == 0
    assert details["unchanged"] == len(TEXTS)
    nodes_after, _ = graph(gm)
    assert {k: v.mentions for k, v in nodes_after.items()} == {
        k: v.mentions for k, v in nodes_before.items()
    }


def test_revision_is_extracted_and_tombstones_skipped(gm: Store) -> None:
    ids = seed(gm)
    extracted(gm)
    revision, _ = gm.revise(ids[4], "Yuki Tanaka now owns the search indexer.")
    gm.retire(ids[1])
    details = extracted(gm)
    assert details["extracted"] == 1
    assert details["unchanged"] == len(TEXTS) - 2
    assert revision.id in signatures(gm)
    nodes, _ = graph(gm)
    assert nodes["name:yuki tanaka"].mentions == 1
    assert nodes["name:chen wei"].mentions == 1  # the old text is not extracted again
    assert extracted(gm)["extracted"] == 0


def test_summary_of_a_cycle_is_extracted_by_that_cycle(gm: Store) -> None:
    seed(gm)
    extracted(gm)
    gm.put(AGENT, "New fact about Amara Okafor and INC-4242")
    details = extracted(gm)
    assert details["extracted"] == 1
    nodes, edges = graph(gm)
    assert {"name:amara okafor", "ident:inc-4242"} <= set(nodes)
    assert "ident:inc-4242\x00name:amara okafor" in edges


def test_deleting_a_fact_drops_its_signature(gm: Store) -> None:
    ids = seed(gm)
    [weak] = gm.put_many(
        [NewFact(agent_id=AGENT, text="Fading note on Lars Nilsson", weight=0.005)]
    )
    first = extracted(gm)  # prune runs before extract: the weak fact is never extracted
    assert first["extracted"] == len(TEXTS)
    assert gm.find(weak.id) is None
    [record] = gm.records(AGENT)
    assert [f.id for f in record.pruned] == [weak.id]
    assert weak.id not in signatures(gm)

    [kept] = gm.put_many([NewFact(agent_id=AGENT, text="Another note on Lars Nilsson")])
    extracted(gm)
    assert kept.id in signatures(gm)
    gm.delete([kept.id])
    assert signatures(gm) == set(ids)
    # the same fact imported again (same id, same text) is new to the watermark
    gm.import_all([kept], [])
    assert extracted(gm)["extracted"] == 1
    assert kept.id in signatures(gm)


def test_prune_in_a_cycle_drops_the_signature(gm: Store, clock: Clock) -> None:
    ids = seed(gm)
    extracted(gm)
    assert signatures(gm) == set(ids)
    clock.advance(HALF_LIFE * 7)  # every fact decays below 0.01
    details = extracted(gm)
    assert details["extracted"] == 0
    assert gm.list_facts(AGENT, "all") == []
    assert signatures(gm) == set()
    assert len(gm.records(AGENT)[0].pruned) == len(TEXTS)


def test_watermark_is_per_agent(gm: Store) -> None:
    seed(gm)
    gm.put_many(NewFact(agent_id="agent-b", text=t) for t in TEXTS)
    assert extracted(gm)["extracted"] == len(TEXTS)
    assert extracted(gm, "agent-b")["extracted"] == len(TEXTS)
    assert extracted(gm, "agent-b")["extracted"] == 0


def test_dry_run_extracts_nothing(gm: Store) -> None:
    seed(gm)
    record = Cycle(gm, AGENT, None, CycleOptions(dry_run=True)).run_sync()
    assert record.outcome == "skipped"  # no summariser: nothing to propose
    assert record.stages[STAGES.index("extract")].summary == "dry run: not run"
    assert signatures(gm) == set()
    assert gm.graph_size(AGENT) == (0, 0)


# ---------------------------------------------------------------- graph decay


def test_graph_decay_halves_after_one_half_life(gm: Store, clock: Clock) -> None:
    seed(gm)
    extracted(gm)
    n_nodes, n_edges = gm.graph_size(AGENT)
    assert n_nodes and n_edges
    clock.advance(HALF_LIFE)
    outcome = gm.decay_graph(AGENT, HALF_LIFE)
    assert (outcome.nodes, outcome.edges) == (n_nodes, n_edges)
    assert outcome.nodes_removed == outcome.edges_removed == 0
    nodes, edges = graph(gm)
    assert all(n.weight == pytest.approx(0.5) for n in nodes.values())
    assert all(e.weight == pytest.approx(0.5) for e in edges.values())
    gm.decay_graph(AGENT, HALF_LIFE)  # again at the same instant: nothing changes
    assert [n.weight for n in graph(gm)[0].values()] == [n.weight for n in nodes.values()]


def test_graph_decay_removes_entries_below_one_percent(gm: Store, clock: Clock) -> None:
    seed(gm)
    gm.put_many(NewFact(agent_id="agent-b", text=t) for t in TEXTS)
    extracted(gm)
    extracted(gm, "agent-b")
    other = gm.graph_size("agent-b")
    n_nodes, n_edges = gm.graph_size(AGENT)
    clock.advance(HALF_LIFE * 6)  # 2^-6 = 0.0156: still kept
    assert gm.decay_graph(AGENT, HALF_LIFE).nodes_removed == 0
    assert gm.graph_size(AGENT) == (n_nodes, n_edges)
    clock.advance(HALF_LIFE)  # 2^-7 = 0.0078: removed
    outcome = gm.decay_graph(AGENT, HALF_LIFE)
    assert (outcome.nodes_removed, outcome.edges_removed) == (n_nodes, n_edges)
    assert gm.graph_size(AGENT) == (0, 0)
    assert gm.graph_size("agent-b") == other  # another agent's graph is untouched


def test_a_re_mentioned_node_is_refreshed(gm: Store, clock: Clock) -> None:
    seed(gm)
    extracted(gm)
    clock.advance(HALF_LIFE * 3)
    gm.put(AGENT, "Maria Lopez is back from leave.")
    extracted(gm)  # extract refreshes the node, then graph decay runs in the same cycle
    nodes, _ = graph(gm)
    assert nodes["name:maria lopez"].weight == 1.0
    assert nodes["name:maria lopez"].mentions == 2
    assert nodes["name:dev patel"].weight == pytest.approx(0.125)


def test_a_re_mentioned_edge_is_refreshed(gm: Store, clock: Clock) -> None:
    seed(gm)
    extracted(gm)
    clock.advance(HALF_LIFE * 3)
    gm.put(AGENT, "Maria Lopez reopened SUP-1234.")
    extracted(gm)
    _, edges = graph(gm)
    assert edges["ident:sup-1234\x00name:maria lopez"].weight == 1.0
