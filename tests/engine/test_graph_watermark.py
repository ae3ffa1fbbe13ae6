"""Entity extraction, the extraction watermark (each fact extracted once per text) and
graph decay, through real cycles on a real store of each backend."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.consolidation.cycle import STAGES, Cycle, CycleOptions
from graymatter_tui.core.entities import Entity, extract_entities
from graymatter_tui.storage import NewFact
from graymatter_tui.storage.graph_ops import Edge, Node
from graymatter_tui.storage.transaction import SEP, GraphTable
from tests.engine.helpers import AGENT, Clock
from tests.support.backends import AnyStore, read_raw

HALF_LIFE = 720.0

TEXTS = [
    "Maria Lopez escalated ticket SUP-1234 to Dev Patel.",
    "Invoices go to billing@example.com every Monday.",
    "The SSO guide lives at https://docs.example.com/sso for Acme Corp.",
    "Run EXP-77 used the new tokenizer.",
    "Chen Wei owns the search indexer.",
    "the garden needs water",
]


def extracted(store: AnyStore, agent: str = AGENT, **options: Any) -> dict[str, Any]:
    """Run one cycle without a summariser; the extract stage's details."""
    record = Cycle(store, agent, None, CycleOptions(**options)).run_sync()
    return record.stages[STAGES.index("extract")].details


def signatures(store: AnyStore, agent: str = AGENT) -> set[str]:
    """Fact ids that carry an extraction signature (a raw read of either backend's
    `extracted` rows, keyed `agent SEP fact id` on both)."""
    head = agent.encode() + SEP

    def keys(tx: Any) -> list[bytes]:
        if isinstance(tx, Tx):
            return [bytes(k) for k in tx.txn.cursor(db=tx.dbs.extracted).iternext(values=False)]
        return [bytes(k) for (k,) in tx.conn.execute("SELECT key FROM extracted").fetchall()]

    return {k[len(head) :].decode() for k in read_raw(store, keys) if k.startswith(head)}


def graph(store: AnyStore, agent: str = AGENT) -> tuple[dict[str, Node], dict[str, Edge]]:
    head = agent.encode() + SEP

    def run(tx: Any) -> tuple[dict[str, Node], dict[str, Edge]]:
        nodes: dict[str, Node] = {}
        edges: dict[str, Edge] = {}
        tables: tuple[tuple[GraphTable, type[Node] | type[Edge], dict[str, Any]], ...] = (
            ("graph_nodes", Node, nodes),
            ("graph_edges", Edge, edges),
        )
        for table, kind, out in tables:
            for key, value in tx.graph_rows(table, agent):
                out[key[len(head) :].decode()] = msgspec.json.decode(value, type=kind)
        return nodes, edges

    return read_raw(store, run)


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


def test_dates_and_times_are_never_names() -> None:
    def labels(text: str) -> list[str]:
        return [e.label for e in extract_entities(text)]

    assert labels("Deploy freeze until Friday 09:00 UTC for the July release.") == []
    assert labels("Standups move to Tuesdays at 9 AM CET; the May retro stays.") == []
    # A date word splits a run of capitals: the name on either side of it stays.
    assert labels("Approved on Friday Maria Lopez said, with Acme Corp in March.") == [
        "Acme Corp",
        "Maria Lopez",
    ]
    assert labels("We met Dev Patel Monday and Chen Wei Tuesday.") == ["Chen Wei", "Dev Patel"]


def test_a_name_left_beside_an_identifier_loses_its_dangling_hyphen() -> None:
    found = extract_entities("Its licence is CC-BY-4.0 and O'Brien- signed it.")
    assert all(not e.label.endswith(("-", "'")) for e in found)
    assert "O'Brien" in {e.label for e in found}


def test_lower_case_text_has_no_entities() -> None:
    assert extract_entities("ticket sup-1234 is about the garden") == []


def test_a_url_does_not_also_yield_a_name_or_identifier() -> None:
    found = extract_entities("see https://example.com/Maria/ABC-12 now")
    assert [e.type for e in found] == ["url"]


# ---------------------------------------------------------------- the watermark


def seed(store: LmdbStore) -> list[str]:
    return [f.id for f in store.put_many(NewFact(agent_id=AGENT, text=t) for t in TEXTS)]


def test_a_cycle_extracts_every_live_fact_once(any_store: AnyStore) -> None:
    ids = seed(any_store)
    retired = any_store.put(AGENT, "Retired note about Lars Nilsson")
    any_store.retire(retired.id)
    details = extracted(any_store)
    assert details["extracted"] == len(TEXTS)
    assert details["unchanged"] == 0
    assert signatures(any_store) == set(ids)
    nodes, edges = graph(any_store)
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
    } == set(nodes)
    assert "ident:sup-1234\x00name:maria lopez" in edges
    assert edges["ident:sup-1234\x00name:maria lopez"].sources == [ids[0]]
    assert any_store.graph_size(AGENT) == (len(nodes), len(edges))


def test_an_unchanged_second_cycle_extracts_nothing(any_store: AnyStore) -> None:
    seed(any_store)
    extracted(any_store)
    nodes_before, _ = graph(any_store)
    details = extracted(any_store)
    assert details["extracted"] == 0
    assert details["unchanged"] == len(TEXTS)
    nodes_after, _ = graph(any_store)
    assert {k: v.mentions for k, v in nodes_after.items()} == {
        k: v.mentions for k, v in nodes_before.items()
    }


def test_revision_is_extracted_and_tombstones_skipped(any_store: AnyStore) -> None:
    ids = seed(any_store)
    extracted(any_store)
    revision, _ = any_store.revise(ids[4], "Yuki Tanaka now owns the search indexer.")
    any_store.retire(ids[1])
    details = extracted(any_store)
    assert details["extracted"] == 1
    assert details["unchanged"] == len(TEXTS) - 2
    assert revision.id in signatures(any_store)
    nodes, _ = graph(any_store)
    assert nodes["name:yuki tanaka"].mentions == 1
    assert nodes["name:chen wei"].mentions == 1  # the old text is not extracted again
    assert extracted(any_store)["extracted"] == 0


def test_summary_of_a_cycle_is_extracted_by_that_cycle(any_store: AnyStore) -> None:
    seed(any_store)
    extracted(any_store)
    any_store.put(AGENT, "New fact about Amara Okafor and INC-4242")
    details = extracted(any_store)
    assert details["extracted"] == 1
    nodes, edges = graph(any_store)
    assert {"name:amara okafor", "ident:inc-4242"} <= set(nodes)
    assert "ident:inc-4242\x00name:amara okafor" in edges


def test_deleting_a_fact_drops_its_signature(any_store: AnyStore) -> None:
    ids = seed(any_store)
    [weak] = any_store.put_many(
        [NewFact(agent_id=AGENT, text="Fading note on Lars Nilsson", weight=0.005)]
    )
    first = extracted(any_store)  # prune runs before extract: the weak fact is never extracted
    assert first["extracted"] == len(TEXTS)
    assert any_store.find(weak.id) is None
    [record] = any_store.records(AGENT)
    assert [f.id for f in record.pruned] == [weak.id]
    assert weak.id not in signatures(any_store)

    [kept] = any_store.put_many([NewFact(agent_id=AGENT, text="Another note on Lars Nilsson")])
    extracted(any_store)
    assert kept.id in signatures(any_store)
    any_store.delete([kept.id])
    assert signatures(any_store) == set(ids)
    # the same fact imported again (same id, same text) is new to the watermark
    any_store.import_all([kept], [])
    assert extracted(any_store)["extracted"] == 1
    assert kept.id in signatures(any_store)


def test_prune_in_a_cycle_drops_the_signature(any_store: AnyStore, clock: Clock) -> None:
    ids = seed(any_store)
    extracted(any_store)
    assert signatures(any_store) == set(ids)
    clock.advance(HALF_LIFE * 7)  # every fact decays below 0.01
    details = extracted(any_store)
    assert details["extracted"] == 0
    assert any_store.list_facts(AGENT, "all") == []
    assert signatures(any_store) == set()
    assert len(any_store.records(AGENT)[0].pruned) == len(TEXTS)


def test_watermark_is_per_agent(any_store: AnyStore) -> None:
    seed(any_store)
    any_store.put_many(NewFact(agent_id="agent-b", text=t) for t in TEXTS)
    assert extracted(any_store)["extracted"] == len(TEXTS)
    assert extracted(any_store, "agent-b")["extracted"] == len(TEXTS)
    assert extracted(any_store, "agent-b")["extracted"] == 0


def test_dry_run_extracts_nothing(any_store: AnyStore) -> None:
    seed(any_store)
    record = Cycle(any_store, AGENT, None, CycleOptions(dry_run=True)).run_sync()
    # A dry run is never "skipped", even with nothing to propose; it says why.
    assert record.outcome == "dry_run"
    assert record.reason == "dry run: no summariser configured: decay and prune only"
    assert record.stages[STAGES.index("extract")].summary == "dry run: not run"
    assert signatures(any_store) == set()
    assert any_store.graph_size(AGENT) == (0, 0)


# ---------------------------------------------------------------- graph decay


def test_graph_decay_halves_after_one_half_life(any_store: AnyStore, clock: Clock) -> None:
    seed(any_store)
    extracted(any_store)
    n_nodes, n_edges = any_store.graph_size(AGENT)
    assert n_nodes and n_edges
    clock.advance(HALF_LIFE)
    outcome = any_store.decay_graph(AGENT, HALF_LIFE)
    assert (outcome.nodes, outcome.edges) == (n_nodes, n_edges)
    assert outcome.nodes_removed == outcome.edges_removed == 0
    nodes, edges = graph(any_store)
    assert all(n.weight == pytest.approx(0.5) for n in nodes.values())
    assert all(e.weight == pytest.approx(0.5) for e in edges.values())
    any_store.decay_graph(AGENT, HALF_LIFE)  # again at the same instant: nothing changes
    assert [n.weight for n in graph(any_store)[0].values()] == [n.weight for n in nodes.values()]


def test_graph_decay_removes_entries_below_one_percent(any_store: AnyStore, clock: Clock) -> None:
    seed(any_store)
    any_store.put_many(NewFact(agent_id="agent-b", text=t) for t in TEXTS)
    extracted(any_store)
    extracted(any_store, "agent-b")
    other = any_store.graph_size("agent-b")
    n_nodes, n_edges = any_store.graph_size(AGENT)
    clock.advance(HALF_LIFE * 6)  # 2^-6 = 0.0156: still kept
    assert any_store.decay_graph(AGENT, HALF_LIFE).nodes_removed == 0
    assert any_store.graph_size(AGENT) == (n_nodes, n_edges)
    clock.advance(HALF_LIFE)  # 2^-7 = 0.0078: removed
    outcome = any_store.decay_graph(AGENT, HALF_LIFE)
    assert (outcome.nodes_removed, outcome.edges_removed) == (n_nodes, n_edges)
    assert any_store.graph_size(AGENT) == (0, 0)
    assert any_store.graph_size("agent-b") == other  # another agent's graph is untouched


def test_a_re_mentioned_node_is_refreshed(any_store: AnyStore, clock: Clock) -> None:
    seed(any_store)
    extracted(any_store)
    clock.advance(HALF_LIFE * 3)
    any_store.put(AGENT, "Maria Lopez is back from leave.")
    extracted(any_store)  # extract refreshes the node, then graph decay runs in the same cycle
    nodes, _ = graph(any_store)
    assert nodes["name:maria lopez"].weight == 1.0
    assert nodes["name:maria lopez"].mentions == 2
    assert nodes["name:dev patel"].weight == pytest.approx(0.125)


def test_a_re_mentioned_edge_is_refreshed(any_store: AnyStore, clock: Clock) -> None:
    seed(any_store)
    extracted(any_store)
    clock.advance(HALF_LIFE * 3)
    any_store.put(AGENT, "Maria Lopez reopened SUP-1234.")
    extracted(any_store)
    _, edges = graph(any_store)
    assert edges["ident:sup-1234\x00name:maria lopez"].weight == 1.0
