"""Knowledge-graph tables: nodes and co-mention edges per agent, and the extraction
watermark (a SHA-256 of each extracted fact's text) so unchanged facts are never
extracted twice."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.storage.codec import encode
from graymatter_tui.storage.transaction import SEP, GraphTable, Transaction
from graymatter_tui.storage.values import (
    PRUNE_BELOW,
    EntityLike,
    ExtractOutcome,
    GraphDecayOutcome,
    decay_weight,
)

MAX_EDGE_SOURCES = 10


class Node(msgspec.Struct, kw_only=True):
    id: str
    label: str
    type: str
    weight: float = 1.0
    last_seen: str = ""
    mentions: int = 0


class Edge(msgspec.Struct, kw_only=True):
    source: str
    target: str
    weight: float = 1.0
    created_at: str = ""
    last_seen: str = ""  # refreshed by every re-mention; decay counts from here
    sources: list[str] = []


_decode_node = msgspec.json.Decoder(Node).decode
_decode_edge = msgspec.json.Decoder(Edge).decode


def text_signature(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest().encode()


def extract_graph(
    tx: Transaction, agent: str, extract: Callable[[str], Sequence[EntityLike]]
) -> ExtractOutcome:
    """Extract entities from live facts whose text signature is new or changed."""
    stamp = clock.format_time(tx.now)
    extracted = 0
    # Many facts mention the same entities: gather the updates, write each once.
    nodes: dict[bytes, Node] = {}
    edges: dict[bytes, Edge] = {}
    head = agent.encode() + SEP
    # A fact's text never changes in place (a revision is a new fact), so an entry in the
    # watermark table means this text was extracted; only new ids decode.
    examined, fresh = tx.unextracted(agent)
    unchanged = examined - len(fresh)
    for fact_id in fresh:
        key = head + fact_id.encode()
        fact = tx.require(fact_id)
        signature = text_signature(fact.text)
        entities = list(extract(fact.text))
        for entity in entities:
            _upsert_node(tx, nodes, head, entity, stamp)
        for a, b in itertools.combinations(sorted(e.id for e in entities), 2):
            _link(tx, edges, head, a, b, fact.id, stamp)
        tx.put_extracted(key, signature)
        extracted += 1
    for node_key, node in nodes.items():
        tx.put_graph_row("graph_nodes", node_key, encode(node))
    for edge_key, edge in edges.items():
        tx.put_graph_row("graph_edges", edge_key, encode(edge))
    return ExtractOutcome(examined, extracted, unchanged, len(nodes), len(edges))


def decay_graph(tx: Transaction, agent: str, half_life_hours: float) -> GraphDecayOutcome:
    """`w = min(w, 2^(-hours/half_life))` on nodes and edges, counting from when each was
    last mentioned; entries below 0.01 are removed. Run once per cycle."""
    seen = [0, 0]
    removed = [0, 0]
    tables: tuple[GraphTable, GraphTable] = ("graph_nodes", "graph_edges")
    # Everything one extraction touched shares its stamp: each is parsed once.
    hours: dict[str, float] = {}
    for index, table in enumerate(tables):
        decode: Callable[[bytes], Node | Edge] = _decode_node if index == 0 else _decode_edge
        # Decided over the whole scan first, then written: no write moves the scan.
        changes: list[tuple[bytes, Node | Edge | None]] = []
        for key, raw in tx.graph_rows(table, agent):
            item = decode(raw)
            seen[index] += 1
            stamp = item.last_seen or getattr(item, "created_at", "")
            since = hours.get(stamp)
            if since is None:
                since = hours[stamp] = _hours_since(tx, stamp)
            weight = decay_weight(item.weight, since, half_life_hours)
            if weight < PRUNE_BELOW:
                changes.append((key, None))
                removed[index] += 1
            elif weight < item.weight:
                item.weight = weight
                changes.append((key, item))
        for key, changed in changes:
            if changed is None:
                tx.delete_graph_row(table, key)
            else:
                tx.put_graph_row(table, key, encode(changed))
    return GraphDecayOutcome(seen[0], seen[1], removed[0], removed[1])


def _hours_since(tx: Transaction, stamp: str) -> float:
    return (tx.now - clock.parse_time(stamp)).total_seconds() / 3600 if stamp else 0


def graph_size(tx: Transaction, agent: str) -> tuple[int, int]:
    """(nodes, edges) of one agent's graph."""
    nodes = sum(1 for _ in tx.graph_rows("graph_nodes", agent))
    edges = sum(1 for _ in tx.graph_rows("graph_edges", agent))
    return nodes, edges


def _upsert_node(
    tx: Transaction, pending: dict[bytes, Node], head: bytes, entity: EntityLike, stamp: str
) -> None:
    key = head + entity.id.encode()
    node = pending.get(key)
    if node is None:
        raw = tx.graph_row("graph_nodes", key)
        node = (
            _decode_node(raw)
            if raw is not None
            else Node(id=entity.id, label=entity.label, type=entity.type)
        )
        pending[key] = node
    node.weight = 1.0
    node.last_seen = stamp
    node.mentions += 1


def _link(
    tx: Transaction,
    pending: dict[bytes, Edge],
    head: bytes,
    a: str,
    b: str,
    fact_id: str,
    stamp: str,
) -> None:
    key = head + a.encode() + SEP + b.encode()
    edge = pending.get(key)
    if edge is None:
        raw = tx.graph_row("graph_edges", key)
        edge = _decode_edge(raw) if raw is not None else Edge(source=a, target=b, created_at=stamp)
        pending[key] = edge
    if fact_id not in edge.sources:
        edge.sources = [*edge.sources, fact_id][-MAX_EDGE_SOURCES:]
    edge.weight = 1.0
    edge.last_seen = stamp
