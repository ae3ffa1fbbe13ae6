"""Knowledge-graph tables: nodes and co-mention edges per agent, and the extraction
watermark (a SHA-256 of each extracted fact's text, then the ids of the entities it
mentions) so unchanged facts are never extracted twice.

The graph's reads (`entities`, `facts_mentioning`, `neighbours`) count live facts only:
they read the entities each live fact mentions from its watermark, and extract the few
facts no cycle has extracted yet (new since the last cycle) themselves, without writing.
They leave out the date and time words a release before 0.9 took for names ("July",
"UTC"), which its watermarks still record."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from operator import itemgetter

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.entities import names_nothing
from graymatter_tui.storage.codec import decode_ids, encode
from graymatter_tui.storage.transaction import SEP, GraphTable, Transaction
from graymatter_tui.storage.values import (
    PRUNE_BELOW,
    EntityCount,
    EntityIndex,
    EntityLike,
    ExtractOutcome,
    GraphDecayOutcome,
    decay_weight,
)

MAX_EDGE_SOURCES = 10
SIGNATURE_BYTES = 64  # a SHA-256 in hex, the watermark's start
# Live facts a graph read extracts itself when no cycle has (the newest first); more are
# left out of its counts and said to be pending.
READ_EXTRACT_LIMIT = 2000
# A meta row per agent (this, then the agent's name): every watermark of the agent records
# its entities (set by the first cycle of a release that records them).
MENTIONS_RECORDED = "graph_mentions_recorded:"
Extract = Callable[[str], Sequence[EntityLike]]


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


def watermark(signature: bytes, entity_ids: Sequence[str]) -> bytes:
    """An extracted fact's watermark: its text's signature, then the ids of the entities
    it mentions (JSON). A release before 0.8 wrote the signature alone."""
    return signature + encode(list(entity_ids))


def _recorded(raw: bytes) -> list[str] | None:
    """The entity ids a watermark records; None for a signature alone (an older release's)."""
    return decode_ids(raw[SIGNATURE_BYTES:]) if len(raw) > SIGNATURE_BYTES else None


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
        tx.put_extracted(key, watermark(signature, [e.id for e in entities]))
        extracted += 1
    _record_mentions(tx, agent, extract, set(fresh))
    for node_key, node in nodes.items():
        tx.put_graph_row("graph_nodes", node_key, encode(node))
    for edge_key, edge in edges.items():
        tx.put_graph_row("graph_edges", edge_key, encode(edge))
    return ExtractOutcome(examined, extracted, unchanged, len(nodes), len(edges))


def _record_mentions(tx: Transaction, agent: str, extract: Extract, done: set[str]) -> None:
    """Facts an older release extracted (a signature alone): their mentions are recorded
    now, once, leaving the graph's nodes and edges as they are (they already count these
    facts). A meta row then says the agent's watermarks all record theirs, so later
    cycles do not look again."""
    flag = MENTIONS_RECORDED + agent
    if tx.meta_get(flag):
        return
    head = agent.encode() + SEP
    start = len(head)
    rows = tx.extracted_rows(agent)
    older = [k[start:].decode() for k, raw in rows if len(raw) <= SIGNATURE_BYTES]
    for fact in tx.find_many(older):
        if fact is not None and fact.id not in done:
            ids = [e.id for e in extract(fact.text)]
            tx.put_extracted(head + fact.id.encode(), watermark(text_signature(fact.text), ids))
    tx.meta_put(flag, "1")


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


# ---- the graph's reads: live facts only -------------------------------------------------
# At 100k facts these scan every watermark of the agent: the work per row is kept to a
# comparison or two, and the entity lists are decoded in one call (a read holds the GIL
# while it runs, and the TUI's keys wait for it).
_decode_lists = msgspec.json.Decoder(list[list[str]]).decode
_decode_nodes = msgspec.json.Decoder(list[Node]).decode


class _Scan:
    """One agent's watermarks, split: the live facts whose mentions are recorded (all
    of them, or only those whose watermark holds `needle`), and the live facts a cycle
    has not extracted yet (or an older release extracted without recording them), the
    newest `READ_EXTRACT_LIMIT` of them extracted here."""

    def __init__(self, tx: Transaction, agent: str, extract: Extract, needle: bytes = b"") -> None:
        head = agent.encode() + SEP
        self.start = start = len(head)
        rows = tx.extracted_rows(agent)
        # Watermarks of tombstones stay until their fact is pruned; they are fewer.
        tombs = {head + i.encode() for i in tx.iter_ids(agent, "tombstones")}
        # An older release's watermarks (the signature alone): looked for only if the
        # shortest watermark is one (a C-speed pass over the lengths).
        short = bool(rows) and min(map(len, map(itemgetter(1), rows))) <= SIGNATURE_BYTES
        recorded = [(k, raw) for k, raw in rows if needle in raw] if needle else rows
        if tombs or short:
            recorded = [
                (k, raw) for k, raw in recorded if len(raw) > SIGNATURE_BYTES and k not in tombs
            ]
        self.live = tx.live_count(agent)
        self.recorded = recorded
        self.found: dict[str, EntityLike] = {}
        self.extracted: dict[str, list[str]] = {}  # fact id -> entity ids, read here
        older = set()
        if short:
            older = {
                k[start:].decode()
                for k, raw in rows
                if len(raw) <= SIGNATURE_BYTES and k not in tombs
            }
        missing: list[str] = []
        # Every live fact has a watermark when there are as many as live facts (the few
        # tombstones without one only make this look for missing ones when none are).
        if older or self.live > len(rows) - len(tombs):
            _count, fresh = tx.unextracted(agent)
            missing = sorted({*fresh, *older}, reverse=True)  # ids grow with time: newest first
        for fact in tx.find_many(missing[:READ_EXTRACT_LIMIT]):
            if fact is not None and fact.is_live:
                entities = extract(fact.text)
                self.extracted[fact.id] = [e.id for e in entities]
                for entity in entities:
                    self.found.setdefault(entity.id, entity)
        self.pending = max(len(missing) - READ_EXTRACT_LIMIT, 0)

    def lists(self) -> list[list[str]]:
        """The entity ids of every live fact in the scan (in no particular order)."""
        joined = b",".join(raw[SIGNATURE_BYTES:] for _k, raw in self.recorded)
        return [*_decode_lists(b"[" + joined + b"]"), *self.extracted.values()]

    def mentioning(self, entity_id: str) -> list[tuple[str, list[str]]]:
        """(fact id, entity ids) of the live facts that mention `entity_id`, newest first."""
        start = self.start
        out = [(k[start:].decode(), decode_ids(raw[SIGNATURE_BYTES:])) for k, raw in self.recorded]
        out.extend(self.extracted.items())
        return sorted(((i, ids) for i, ids in out if entity_id in ids), reverse=True)


def _entity_count(
    tx: Transaction, agent: str, entity_id: str, facts: int, found: dict[str, EntityLike]
) -> EntityCount:
    """An entity with its label and type: the graph's node, else as a read extracted it,
    else from its id (a node decay pruned while live facts still name it)."""
    raw = tx.graph_row("graph_nodes", agent.encode() + SEP + entity_id.encode())
    if raw is not None:
        node = _decode_node(raw)
        return EntityCount(entity_id, node.label, node.type, facts)
    return _counted(entity_id, facts, found)


def _counted(entity_id: str, facts: int, found: dict[str, EntityLike]) -> EntityCount:
    entity = found.get(entity_id)
    if entity is not None:
        return EntityCount(entity_id, entity.label, entity.type, facts)
    kind, _, label = entity_id.partition(":")
    return EntityCount(entity_id, label or entity_id, kind if label else "", facts)


def _ranked(entities: list[EntityCount]) -> list[EntityCount]:
    """Most facts first, then by label."""
    return sorted(entities, key=lambda e: (-e.facts, e.label.casefold(), e.id))


def entities(tx: Transaction, agent: str, extract: Extract) -> EntityIndex:
    """The entities the agent's live facts mention, with how many mention each."""
    scan = _Scan(tx, agent, extract)
    counts = Counter(itertools.chain.from_iterable(scan.lists()))
    for noise in [i for i in counts if names_nothing(i)]:
        del counts[noise]
    nodes = _decode_nodes(
        b"[" + b",".join(raw for _k, raw in tx.graph_rows("graph_nodes", agent)) + b"]"
    )
    labels = {
        node.id: EntityCount(node.id, node.label, node.type, counts[node.id])
        for node in nodes
        if node.id in counts
    }
    listed = [labels.get(i) or _counted(i, n, scan.found) for i, n in counts.items()]
    return EntityIndex(_ranked(listed), scan.live, scan.pending)


def facts_mentioning(tx: Transaction, agent: str, entity_id: str, extract: Extract) -> list[str]:
    """Ids of the agent's live facts that mention the entity, newest first."""
    scan = _Scan(tx, agent, extract, encode(entity_id))
    return [fact_id for fact_id, _ids in scan.mentioning(entity_id)]


def neighbours(tx: Transaction, agent: str, entity_id: str, extract: Extract) -> list[EntityCount]:
    """The entities mentioned together with `entity_id` in the agent's live facts, each
    with how many such facts mention both; most first."""
    scan = _Scan(tx, agent, extract, encode(entity_id))
    together: Counter[str] = Counter()
    for _fact_id, ids in scan.mentioning(entity_id):
        together.update(i for i in ids if i != entity_id and not names_nothing(i))
    return _ranked([_entity_count(tx, agent, i, n, scan.found) for i, n in together.items()])
