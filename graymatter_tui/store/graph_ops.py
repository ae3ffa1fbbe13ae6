"""Knowledge-graph tables: nodes and co-mention edges per agent, and the extraction
watermark (a SHA-256 of each extracted fact's text) so unchanged facts are never
extracted twice."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from graymatter_tui import clock
from graymatter_tui.store.codec import encode
from graymatter_tui.store.cycle_ops import PRUNE_BELOW, decay_weight
from graymatter_tui.store.tx import SEP, Tx

T = TypeVar("T")
MAX_EDGE_SOURCES = 10


class EntityLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def type(self) -> str: ...


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


@dataclass(frozen=True)
class ExtractOutcome:
    examined: int
    extracted: int
    skipped_unchanged: int
    nodes_touched: int
    edges_touched: int


@dataclass(frozen=True)
class GraphDecayOutcome:
    nodes: int
    edges: int
    nodes_removed: int
    edges_removed: int


def text_signature(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest().encode()


class GraphOps:
    if TYPE_CHECKING:

        def write(self, fn: Callable[[Tx], T]) -> T: ...

        def read(self, fn: Callable[[Tx], T]) -> T: ...

    def extract_graph(
        self, agent: str, extract: Callable[[str], Sequence[EntityLike]]
    ) -> ExtractOutcome:
        """Extract entities from live facts whose text signature is new or changed."""

        def run(tx: Tx) -> ExtractOutcome:
            stamp = clock.format_time(tx.now)
            examined = extracted = unchanged = 0
            # Many facts mention the same entities: gather the updates, write each once.
            nodes: dict[bytes, Node] = {}
            edges: dict[bytes, Edge] = {}
            head = agent.encode() + SEP
            # A fact's text never changes in place (a revision is a new fact), so an entry
            # in the watermark table means this text was extracted; only new ids decode.
            for fact_id in tx.iter_ids(agent, "live", newest_first=False):
                examined += 1
                key = head + fact_id.encode()
                if tx.txn.get(key, db=tx.dbs.extracted) is not None:
                    unchanged += 1
                    continue
                fact = tx.load(fact_id)
                signature = text_signature(fact.text)
                entities = list(extract(fact.text))
                for entity in entities:
                    _upsert_node(tx, nodes, head, entity, stamp)
                for a, b in itertools.combinations(sorted(e.id for e in entities), 2):
                    _link(tx, edges, head, a, b, fact.id, stamp)
                tx.txn.put(key, signature, db=tx.dbs.extracted)
                extracted += 1
            for node_key, node in nodes.items():
                tx.txn.put(node_key, encode(node), db=tx.dbs.graph_nodes)
            for edge_key, edge in edges.items():
                tx.txn.put(edge_key, encode(edge), db=tx.dbs.graph_edges)
            return ExtractOutcome(examined, extracted, unchanged, len(nodes), len(edges))

        return self.write(run)

    def decay_graph(self, agent: str, half_life_hours: float) -> GraphDecayOutcome:
        """`w = min(w, 2^(-hours/half_life))` on nodes and edges, counting from when each was
        last mentioned; entries below 0.01 are removed. Run once per cycle."""

        def run(tx: Tx) -> GraphDecayOutcome:
            now = tx.now
            head = agent.encode() + SEP
            counts = [0, 0, 0, 0]
            for index, (db, decoder, anchor) in enumerate(
                (
                    (tx.dbs.graph_nodes, _decode_node, "last_seen"),
                    (tx.dbs.graph_edges, _decode_edge, "last_seen"),
                )
            ):
                cursor = tx.txn.cursor(db=db)
                found = cursor.set_range(head)
                while found:
                    key = bytes(cursor.key())
                    if not key.startswith(head):
                        break
                    item: Any = decoder(cursor.value())
                    counts[index] += 1
                    stamp = getattr(item, anchor) or getattr(item, "created_at", "")
                    hours = (now - clock.parse_time(stamp)).total_seconds() / 3600 if stamp else 0
                    weight = decay_weight(item.weight, hours, half_life_hours)
                    if weight < PRUNE_BELOW:
                        cursor.delete()  # moves to the next entry
                        counts[index + 2] += 1
                        found = bool(cursor.key())
                        continue
                    if weight < item.weight:
                        item.weight = weight
                        cursor.put(key, encode(item))
                    found = cursor.next()
            return GraphDecayOutcome(*counts)

        return self.write(run)

    def graph_size(self, agent: str) -> tuple[int, int]:
        def run(tx: Tx) -> tuple[int, int]:
            head = agent.encode() + SEP
            sizes = []
            for db in (tx.dbs.graph_nodes, tx.dbs.graph_edges):
                cursor = tx.txn.cursor(db=db)
                n = 0
                found = cursor.set_range(head)
                while found and cursor.key().startswith(head):
                    n += 1
                    found = cursor.next()
                sizes.append(n)
            return sizes[0], sizes[1]

        return self.read(run)


def _upsert_node(
    tx: Tx, pending: dict[bytes, Node], head: bytes, entity: EntityLike, stamp: str
) -> None:
    key = head + entity.id.encode()
    node = pending.get(key)
    if node is None:
        raw = tx.txn.get(key, db=tx.dbs.graph_nodes)
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
    tx: Tx, pending: dict[bytes, Edge], head: bytes, a: str, b: str, fact_id: str, stamp: str
) -> None:
    key = head + a.encode() + SEP + b.encode()
    edge = pending.get(key)
    if edge is None:
        raw = tx.txn.get(key, db=tx.dbs.graph_edges)
        edge = _decode_edge(raw) if raw is not None else Edge(source=a, target=b, created_at=stamp)
        pending[key] = edge
    if fact_id not in edge.sources:
        edge.sources = [*edge.sources, fact_id][-MAX_EDGE_SOURCES:]
    edge.weight = 1.0
    edge.last_seen = stamp
