"""Embedding vectors as functions over one transaction (layout: `vector_layout`, ADR 0034;
the same rows on both backends, ADR 0058): the store's model and dimension, the queue of
facts waiting, writing a batch of vectors, the nearest live facts to a query vector, the
blocks a per-process copy needs, a switch of model, and a migration's copy."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING

from graymatter_tui.storage.transaction import EMBED_DIM, EMBED_MODEL, SEP, VectorTransaction
from graymatter_tui.storage.values import (
    EmbedState,
    FactVectors,
    VectorBlocks,
    VectorCopyMode,
    VectorSnapshot,
)
from graymatter_tui.storage.vector_layout import (
    BLOCK_NO,
    BLOCK_ROWS,
    EMPTY_ID,
    ID_WIDTH,
    SLOT,
    agent_prefix,
    block_key,
    free_key,
    padded_id,
    slot_key,
)
from graymatter_tui.storage.vector_rank import best_per_fact, row_cosines

QUEUE_CHUNK = 10_000  # facts queued per call when a model starts

if TYPE_CHECKING:  # numpy is imported when vectors are touched, not by every command
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]


def model(tx: VectorTransaction) -> tuple[str | None, int | None]:
    found = tx.meta_many((EMBED_MODEL, EMBED_DIM))
    dimension = found[EMBED_DIM]
    return found[EMBED_MODEL], int(dimension) if dimension else None


def state(tx: VectorTransaction, agent: str | None = None) -> EmbedState:
    """The store's model and dimension, with the backlog and the facts holding a vector
    of `agent` (or of every agent)."""
    name, dimension = model(tx)
    if not tx.has_vector_tables():
        return EmbedState(name, dimension, 0, 0)
    agents = tx.agent_names() if agent is None else [agent]
    slots = sum(tx.count_vector_rows(agent_prefix(each, b"s")) for each in agents)
    return EmbedState(name, dimension, tx.queue_size(agent), slots)


def backlog(tx: VectorTransaction, agent: str | None = None) -> int:
    return tx.queue_size(agent)


def start(tx: VectorTransaction, name: str, dimension: int | None = None) -> int:
    """Make `name` the store's model: every vector of another model (or of another
    dimension) goes, and every live fact waits for one of this model. Returns how many
    facts were queued. Vectors of two models are never held at once."""
    tx.clear_embeddings()
    tx.meta_put(EMBED_MODEL, name)
    if dimension is not None:
        tx.meta_put(EMBED_DIM, str(dimension))
    tx.embedding_started()
    # A chunk at a time: a store of 1M facts made a list of 1M entries, then one of 1M
    # keys, 200 MB at once in a TUI whose embedder starts while a person types.
    queued = 0
    for agent in sorted(tx.agent_names()):
        ids = tx.iter_ids(agent, "live", newest_first=False)
        while chunk := list(islice(ids, QUEUE_CHUNK)):
            tx.queue_put_many([(agent, fact_id) for fact_id in chunk])
            queued += len(chunk)
    return queued


def waiting(
    tx: VectorTransaction, limit: int, agent: str | None = None
) -> list[tuple[str, str, str]]:
    """(agent, fact id, text) of up to `limit` queued facts, in queue order; the text is
    "" for an entry whose fact is no longer live (`store` then clears it)."""
    if limit <= 0:
        return []
    entries = []
    for entry in tx.iter_queue(agent):
        entries.append(entry)
        if len(entries) >= limit:
            break
    facts = tx.find_many([fact_id for _, fact_id in entries])
    return [
        (owner, fact_id, fact.text if fact is not None and fact.is_live else "")
        for (owner, fact_id), fact in zip(entries, facts, strict=True)
    ]


def store(
    tx: VectorTransaction, name: str, rows: list[tuple[str, str, str]], matrix: Vector
) -> tuple[int, int]:
    """Write the vectors (`matrix`'s rows) of facts given as (agent, id, the text that was
    embedded), but only while the store's model is still `name`, each fact is still live
    with that same text, and it is still queued. Consecutive rows of one fact are that
    fact's pieces (one vector per sentence, ADR 0038) and are written or skipped together.
    Returns (stored, skipped) counted in facts. The first vectors of a model record its
    dimension; vectors of another dimension are refused. A fact given as one all-zero row
    leaves the queue with no vector (stored, not skipped)."""
    groups = _group_rows(rows, matrix)
    current, dimension = model(tx)
    if current != name or (dimension is not None and dimension != matrix.shape[1]):
        return 0, len(groups)
    facts = tx.find_many([fact_id for _, fact_id, _, _ in groups])
    queued = tx.queued_many([(agent, fact_id) for agent, fact_id, _, _ in groups])
    by_agent: dict[str, list[tuple[str, list[Vector]]]] = defaultdict(list)
    done: list[tuple[str, str]] = []
    skipped = 0
    for (agent, fact_id, text, vectors), fact in zip(groups, facts, strict=True):
        if (agent, fact_id) not in queued:
            skipped += 1
            continue
        queued.discard((agent, fact_id))  # a fact named twice in one batch is stored once
        if fact is None or not fact.is_live or fact.agent_id != agent:
            done.append((agent, fact_id))  # stale: the fact went
            skipped += 1
            continue
        if fact.text != text:
            skipped += 1  # embedded from another text: stays queued
            continue
        done.append((agent, fact_id))
        if len(vectors) == 1 and not vectors[0].any():
            # One all-zero row: nothing in the text the model can read (only emoji or
            # symbols, ADR 0058). Done, with no vector: it is found by keyword only. (A
            # queued fact holds no rows: its text change or the model switch freed them.)
            continue
        by_agent[agent].append((fact_id, vectors))
    tx.queue_delete_many(done)
    if dimension is None and by_agent:  # never from a batch that stored nothing
        tx.meta_put(EMBED_DIM, str(matrix.shape[1]))
    for agent, items in by_agent.items():
        _write_rows(tx, agent, items, matrix.shape[1])
    return len(groups) - skipped, skipped


def _group_rows(
    rows: list[tuple[str, str, str]], matrix: Vector
) -> list[tuple[str, str, str, list[Vector]]]:
    """(agent, id, text, its vectors) per run of consecutive rows naming one fact."""
    groups: list[tuple[str, str, str, list[Vector]]] = []
    for (agent, fact_id, text), vector in zip(rows, matrix, strict=True):
        if groups and groups[-1][:3] == (agent, fact_id, text):
            groups[-1][3].append(vector)
        else:
            groups.append((agent, fact_id, text, [vector]))
    return groups


def unpack_slots(raw: bytes) -> list[tuple[int, int]]:
    """The (block, row) slots packed in a slot or free-list value (an old store's slot
    value is one SLOT: the same packing, length 1)."""
    return [SLOT.unpack_from(raw, i) for i in range(0, len(raw), SLOT.size)]


def _write_rows(
    tx: VectorTransaction, agent: str, items: list[tuple[str, list[Vector]]], dimension: int
) -> None:
    """Each fact's vectors into rows: its old rows are freed first, then rows are taken
    from the freed ones (its own old rows come back first), else the tail block (a new
    block when full); every touched block is rewritten once, and every row is written
    in one call at the end."""
    import numpy as np

    row_bytes = dimension * 4
    slot_keys = [slot_key(agent, fact_id) for fact_id, _ in items]
    prefix = agent_prefix(agent, b"b")
    last = tx.last_vector_key(prefix)
    tail = None if last is None else BLOCK_NO.unpack(last[len(prefix) :])[0]
    held = tx.vector_rows_many([free_key(agent), *slot_keys])
    raw_free = held.get(free_key(agent), b"")
    free = unpack_slots(raw_free)
    old_slots = {key: unpack_slots(held.get(key, b"")) for key in slot_keys}
    blocks: dict[int, tuple[bytearray, bytearray]] = {}
    changed: set[int] = set()

    def fetch(numbers: set[int]) -> None:
        wanted = sorted(numbers - blocks.keys())
        keys = [block_key(agent, kind, block) for block in wanted for kind in (b"b", b"i")]
        found = tx.vector_rows_many(keys) if keys else {}
        for block in wanted:
            data = found.get(block_key(agent, b"b", block), b"")
            ids = found.get(block_key(agent, b"i", block), b"")
            blocks[block] = (bytearray(data), bytearray(ids))

    def load(block: int) -> tuple[bytearray, bytearray]:
        if block not in blocks:
            fetch({block})
        return blocks[block]

    # The blocks this batch surely touches, in one read: its facts' old rows, and the
    # tail when the free rows will not hold every vector.
    first = {block for slots in old_slots.values() for block, _ in slots}
    rows_wanted = sum(len(vectors) for _, vectors in items)
    if tail is not None and rows_wanted > len(free) + sum(map(len, old_slots.values())):
        first.add(tail)
    fetch(first)
    puts: list[tuple[bytes, bytes]] = []
    for (fact_id, vectors), key in zip(items, slot_keys, strict=True):
        for block, row in reversed(old_slots[key]):  # popped back in their old order
            load(block)[1][row * ID_WIDTH : (row + 1) * ID_WIDTH] = EMPTY_ID
            changed.add(block)
            free.append((block, row))
        slots: list[tuple[int, int]] = []
        for vector in vectors:
            if free:
                block, row = free.pop()
            else:
                if tail is None or len(load(tail)[1]) // ID_WIDTH >= BLOCK_ROWS:
                    tail = 0 if tail is None else tail + 1
                data, ids = load(tail)
                block, row = tail, len(ids) // ID_WIDTH
                data.extend(bytes(row_bytes))
                ids.extend(EMPTY_ID)
            data, ids = load(block)
            data[row * row_bytes : (row + 1) * row_bytes] = vector.astype(np.float32).tobytes()
            ids[row * ID_WIDTH : (row + 1) * ID_WIDTH] = padded_id(fact_id)
            changed.add(block)
            slots.append((block, row))
        puts.append((key, b"".join(SLOT.pack(*slot) for slot in slots)))
    for block in sorted(changed):
        data, ids = blocks[block]
        puts += [
            (block_key(agent, b"b", block), bytes(data)),
            (block_key(agent, b"i", block), bytes(ids)),
            tx.stamp_row(agent, block),
        ]
    packed = b"".join(SLOT.pack(*slot) for slot in free)
    if packed:
        puts.append((free_key(agent), packed))
    elif raw_free:
        tx.delete_vector_row(free_key(agent))
    tx.put_vector_rows(puts)


def nearest(
    tx: VectorTransaction, agent: str, name: str, query: Vector, limit: int
) -> list[tuple[str, float]] | None:
    """Up to `limit` (fact id, cosine similarity) of `agent`'s live facts nearest `query`
    (a unit vector of model `name`), best first, ties by id; None when the store holds no
    vectors of that model and dimension. A fact's similarity is its best row's (a row per
    sentence, ADR 0038). Each block is one matrix product over its bytes as read (LMDB:
    the map itself): no per-fact record is read. Retired facts lost their rows when
    retired."""
    import numpy as np

    current, dimension = model(tx)
    if not tx.has_vector_tables() or dimension is None or current != name or limit <= 0:
        return None
    if dimension != query.shape[0]:
        return None
    ids_prefix = agent_prefix(agent, b"i")
    id_rows = {key[len(ids_prefix) :]: bytes(ids) for key, ids in tx.vector_rows(ids_prefix)}
    scores: list[npt.NDArray[np.float32]] = []
    ordered: list[bytes] = []
    prefix = agent_prefix(agent, b"b")
    for key, value in tx.vector_rows(prefix):
        matrix = np.frombuffer(value, dtype=np.float32).reshape(-1, dimension)
        ids = id_rows.get(key[len(prefix) :], b"")
        taken = np.frombuffer(ids, dtype=np.uint8).reshape(-1, ID_WIDTH)[:, 0] != 0
        scores.append(np.where(taken, row_cosines(matrix, query), -np.inf).astype(np.float32))
        ordered.append(ids)
    if not scores:
        return None
    flat = np.concatenate(scores)
    offsets = np.cumsum([0] + [len(r) // ID_WIDTH for r in ordered])

    def id_at(position: int) -> str:
        block = int(np.searchsorted(offsets, position, side="right")) - 1
        row = position - int(offsets[block])
        return ordered[block][row * ID_WIDTH : (row + 1) * ID_WIDTH].rstrip(b"\x00").decode()

    return best_per_fact(flat, id_at, limit) or None


def close_to(
    tx: VectorTransaction,
    agent: str,
    name: str,
    queries: Vector,
    floor: float,
    limit: int | None = None,
) -> list[dict[str, float]] | None:
    """For each row of `queries` (unit vectors of model `name`), `agent`'s live facts
    whose best row's cosine to it is `floor` or more, with that cosine; with `limit`, only
    the `limit` closest of them (ties by id, as `nearest` ranks). The blocks are read
    once and scored a slice of queries at a time (the embedder's pass over a batch it has
    just stored). None when the store holds no vectors of that model.

    In a store of facts written from one template every fact is above the floor for
    every query: unbounded, 1,280 queries over 2,000 facts made 2.5M (id, cosine) pairs,
    and freeing them held the interpreter's lock for 120 ms, a frozen TUI (ADR 0077)."""
    import numpy as np

    current, dimension = model(tx)
    if not tx.has_vector_tables() or dimension is None or current != name:
        return None
    if queries.ndim != 2 or queries.shape[1] != dimension:
        return None
    ids_prefix = agent_prefix(agent, b"i")
    id_rows = {key[len(ids_prefix) :]: bytes(ids) for key, ids in tx.vector_rows(ids_prefix)}
    prefix = agent_prefix(agent, b"b")
    blocks: list[tuple[bytes, Vector]] = []
    for key, value in tx.vector_rows(prefix):
        ids = id_rows.get(key[len(prefix) :], b"")
        blocks.append((ids, np.frombuffer(value, dtype=np.float32).reshape(-1, dimension)))
    found: list[dict[str, float]] = [{} for _ in range(queries.shape[0])]
    total = sum(matrix.shape[0] for _, matrix in blocks)
    if not total:
        return found
    ordered = [ids for ids, _ in blocks]
    offsets = np.cumsum([0] + [matrix.shape[0] for _, matrix in blocks])
    # A free slot's id is all zero bytes.
    padded = b"".join(ids.ljust(matrix.shape[0] * ID_WIDTH, b"\x00") for ids, matrix in blocks)
    taken = np.frombuffer(padded, dtype=np.uint8).reshape(-1, ID_WIDTH)[:, 0] != 0

    def id_at(position: int) -> str:
        block = int(np.searchsorted(offsets, position, side="right")) - 1
        row = position - int(offsets[block])
        return ordered[block][row * ID_WIDTH : (row + 1) * ID_WIDTH].rstrip(b"\x00").decode()

    # A slice of queries at a time keeps the scores to about 32 MB whatever the store.
    width = max(1, min(queries.shape[0], (32 << 20) // (4 * total)))
    for first in range(0, queries.shape[0], width):
        transposed = np.ascontiguousarray(queries[first : first + width].T, dtype=np.float32)
        scores = np.concatenate([matrix @ transposed for _, matrix in blocks])
        scores[~taken] = -np.inf
        scores[scores < floor] = -np.inf
        for column in range(scores.shape[1]):
            row_scores = np.ascontiguousarray(scores[:, column])
            best = best_per_fact(row_scores, id_at, limit or total)
            found[first + column] = dict(best)
    return found


def similarities(
    tx: VectorTransaction, agent: str, name: str, query: Vector, fact_ids: Sequence[str]
) -> dict[str, float]:
    """The cosine of `query` (a unit vector of model `name`) to each of `fact_ids` that
    holds a vector of that model: its best row's, as `nearest` scores it. A fact without
    one (not embedded yet, or another model) is left out. Reads each fact's slots, then
    each block they name once (no matrix product over the agent's other rows)."""
    import numpy as np

    current, dimension = model(tx)
    if not tx.has_vector_tables() or dimension is None or current != name:
        return {}
    if dimension != query.shape[0] or not fact_ids:
        return {}
    wanted: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for fact_id in fact_ids:
        raw = tx.vector_row(slot_key(agent, fact_id))
        for block, row in unpack_slots(bytes(raw) if raw else b""):
            wanted[block].append((row, fact_id))
    found: dict[str, float] = {}
    vector = query.astype(np.float32)
    for block, rows in wanted.items():
        value = tx.vector_row(block_key(agent, b"b", block))
        ids = tx.vector_row(block_key(agent, b"i", block)) or b""
        if value is None:
            continue
        matrix = np.frombuffer(value, dtype=np.float32).reshape(-1, dimension)
        kept = [(row, fact_id) for row, fact_id in rows if _holds(ids, row, fact_id)]
        if not kept:
            continue
        scores = row_cosines(matrix[[row for row, _ in kept]], vector)
        for (_, fact_id), score in zip(kept, scores.tolist(), strict=True):
            if score > found.get(fact_id, -np.inf):
                found[fact_id] = float(score)
    return found


def fact_vectors(tx: VectorTransaction, agent: str, fact_ids: Sequence[str]) -> FactVectors | None:
    """The rows of each of `agent`'s `fact_ids` holding a vector of the store's model, as
    copies (a fact without one is left out); None when the store holds no vectors. Reads
    each fact's slots, then each block they name once."""
    import numpy as np

    current, dimension = model(tx)
    if not tx.has_vector_tables() or current is None or dimension is None:
        return None
    wanted: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for fact_id in dict.fromkeys(fact_ids):
        raw = tx.vector_row(slot_key(agent, fact_id))
        for block, row in unpack_slots(bytes(raw) if raw else b""):
            wanted[block].append((row, fact_id))
    pieces: dict[str, list[Vector]] = defaultdict(list)
    for block, rows in sorted(wanted.items()):
        value = tx.vector_row(block_key(agent, b"b", block))
        ids = tx.vector_row(block_key(agent, b"i", block)) or b""
        if value is None:
            continue
        matrix = np.frombuffer(value, dtype=np.float32).reshape(-1, dimension)
        for row, fact_id in rows:
            if row < len(matrix) and _holds(ids, row, fact_id):
                pieces[fact_id].append(matrix[row].copy())
    found = {fact_id: np.stack(rows) for fact_id, rows in pieces.items()}
    return FactVectors(current, dimension, found)


def _holds(ids: bytes, row: int, fact_id: str) -> bool:
    """Whether row `row` of a block whose ids are `ids` is `fact_id`'s."""
    return bytes(ids[row * ID_WIDTH : (row + 1) * ID_WIDTH]).rstrip(b"\x00") == fact_id.encode()


def blocks_since(tx: VectorTransaction, agent: str, name: str, since: int) -> VectorBlocks | None:
    """`agent`'s vector blocks of model `name` as of this snapshot: every block number, and
    a copy of each block changed after generation `since` (a block without a stamp, from
    before stamps existed, counts as changed). None when the store holds no vectors of
    that model. One read (`VectorTransaction.vector_blocks`): on PostgreSQL, one
    statement."""
    import numpy as np

    if not tx.has_vector_tables():
        return None
    found = tx.vector_blocks(agent, name, since)
    dimension = found.dimension
    if dimension is None or found.model != name:
        return None
    numbers: list[int] = []
    changed: dict[int, tuple[Vector, tuple[str, ...]]] = {}
    for block, data, ids in found.blocks:
        numbers.append(block)
        if data is not None and ids is not None:
            matrix = np.frombuffer(data, dtype=np.float32).reshape(-1, dimension)
            names = tuple(
                ids[i : i + ID_WIDTH].rstrip(b"\x00").decode() for i in range(0, len(ids), ID_WIDTH)
            )
            changed[block] = (matrix, names)
    return VectorBlocks(found.generation, name, dimension, BLOCK_ROWS, tuple(numbers), changed)


# ---- a migration's copy (ADR 0046, ADR 0058) ---------------------------------------------
def snapshot(tx: VectorTransaction) -> VectorSnapshot:
    """The store's model, dimension, vector rows (block stamps aside: they are the
    generations of this store) and queue, for a migration."""
    name, dimension = model(tx)
    if not tx.has_vector_tables():
        return VectorSnapshot(name, dimension, [], [])
    rows = [(key, bytes(value)) for key, value in tx.vector_rows(b"") if _kind(key) != b"c"]
    return VectorSnapshot(name, dimension, rows, list(tx.iter_queue(None)))


def _kind(key: bytes) -> bytes:
    """The kind of a vectors row (`vector_layout`): b, i, s, c, or f."""
    parts = key.split(SEP, 2)
    return parts[1] if len(parts) > 1 else b""


def copy_mode(
    tx: VectorTransaction, copy: VectorSnapshot, configured: str | None
) -> VectorCopyMode:
    """How this store takes the vectors of a migration's source, decided before its facts
    go in. `copy`: the source's rows and queue come along (the store holds no model, or
    the same model in a dimension that agrees). `queue`: the store holds vectors of
    another model (or dimension), which it keeps: the copied facts wait for one of its
    model. `switch`: the store holds no model, and `configured` (the model the target's
    embedder will use) is another than the source's: the store starts on it as a switch
    of model does, every live fact queued. `none`: the source never embedded."""
    if copy.model is None:
        return "none"
    current, dimension = model(tx)
    if current is None:
        return "switch" if configured is not None and configured != copy.model else "copy"
    if current != copy.model:
        return "queue"
    if dimension is not None and copy.dimension is not None and dimension != copy.dimension:
        return "queue"
    return "copy"


def load_copy(tx: VectorTransaction, copy: VectorSnapshot) -> None:
    """Write the source's vectors and queue into this store (`copy_mode` said `copy`). An
    agent this store holds no vectors of gets the source's rows byte for byte, its blocks
    stamped with this write; into an agent that has some, each fact's vectors are written
    as the embedder would (`_write_rows`), so neither side's rows are overwritten."""
    import numpy as np

    current, dimension = model(tx)
    if current is None and copy.model is not None:
        tx.meta_put(EMBED_MODEL, copy.model)
        tx.embedding_started()
    if dimension is None and copy.dimension is not None:
        tx.meta_put(EMBED_DIM, str(copy.dimension))
        dimension = copy.dimension
    by_agent: dict[bytes, list[tuple[bytes, bytes]]] = defaultdict(list)
    for key, value in copy.rows:
        by_agent[key.split(SEP, 1)[0]].append((key, value))
    for head, rows in by_agent.items():
        agent = head.decode()
        if tx.last_vector_key(head + SEP) is None:
            stamps = [
                tx.stamp_row(agent, BLOCK_NO.unpack(key[-BLOCK_NO.size :])[0])
                for key, _ in rows
                if _kind(key) == b"b"
            ]
            tx.insert_vector_rows([*rows, *stamps])
            continue
        assert dimension is not None  # rows exist, so the source recorded a dimension
        held = dict(rows)
        row_bytes = dimension * 4
        items: list[tuple[str, list[Vector]]] = []
        slot_prefix = agent_prefix(agent, b"s")
        for key, value in rows:
            if not key.startswith(slot_prefix):
                continue
            vectors = []
            for block, row in unpack_slots(value):
                data = held[block_key(agent, b"b", block)]
                piece = data[row * row_bytes : (row + 1) * row_bytes]
                vectors.append(np.frombuffer(piece, dtype=np.float32))
            items.append((key[len(slot_prefix) :].decode(), vectors))
        _write_rows(tx, agent, items, dimension)
    tx.queue_put_many(copy.queue)


def facts_with_vectors(copy: VectorSnapshot) -> int:
    """How many facts have vectors in `copy` (one slot row each)."""
    return sum(1 for key, _ in copy.rows if _kind(key) == b"s")


def vector_digests(copy: VectorSnapshot) -> dict[tuple[str, str], bytes]:
    """A digest of each fact's vectors, (agent, fact id) -> blake2b of its rows in slot
    order: what a migration's verification compares, whatever blocks and rows they sit
    in, without copying them."""
    if copy.dimension is None:
        return {}
    held = {key: memoryview(value) for key, value in copy.rows if _kind(key) == b"b"}
    row_bytes = copy.dimension * 4
    found: dict[tuple[str, str], bytes] = {}
    for key, value in copy.rows:
        if _kind(key) != b"s":
            continue
        head, _, fact_id = key.split(SEP, 2)
        agent = head.decode()
        digest = hashlib.blake2b(digest_size=16)
        for block, row in unpack_slots(value):
            data = held.get(block_key(agent, b"b", block), memoryview(b""))
            digest.update(data[row * row_bytes : (row + 1) * row_bytes])
        found[agent, fact_id.decode()] = digest.digest()
    return found
