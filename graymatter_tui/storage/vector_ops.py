"""Embedding vectors as functions over one transaction (layout: `vector_layout`, ADR
0034): the store's model and dimension, the queue of facts waiting, writing a batch of
vectors, the nearest live facts to a query vector, and a switch of model."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graymatter_tui.storage.transaction import EMBED_DIM, EMBED_MODEL, VectorTransaction
from graymatter_tui.storage.values import EmbedState, VectorBlocks
from graymatter_tui.storage.vector_layout import (
    BLOCK_NO,
    BLOCK_ROWS,
    EMPTY_ID,
    ID_WIDTH,
    SLOT,
    STAMP,
    agent_prefix,
    block_key,
    free_key,
    padded_id,
    queue_key,
    slot_key,
)
from graymatter_tui.storage.vector_rank import best_per_fact

if TYPE_CHECKING:  # numpy is imported when vectors are touched, not by every command
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]


def model(tx: VectorTransaction) -> tuple[str | None, int | None]:
    dimension = tx.meta_get(EMBED_DIM)
    return tx.meta_get(EMBED_MODEL), int(dimension) if dimension else None


def state(tx: VectorTransaction) -> EmbedState:
    name, dimension = model(tx)
    if not tx.has_vector_tables():
        return EmbedState(name, dimension, 0, 0)
    slots = sum(
        sum(1 for _ in tx.vector_rows(agent_prefix(agent, b"s"), keys_only=True))
        for agent in tx.agent_names()
    )
    return EmbedState(name, dimension, tx.queue_size(), slots)


def backlog(tx: VectorTransaction, agent: str | None = None) -> int:
    if agent is None:
        return tx.queue_size()
    return sum(1 for _ in tx.iter_queue(agent))


def start(tx: VectorTransaction, name: str, dimension: int | None = None) -> int:
    """Make `name` the store's model: every vector of another model (or of another
    dimension) goes, and every live fact waits for one of this model. Returns how many
    facts were queued. Vectors of two models are never held at once."""
    tx.clear_embeddings()
    tx.meta_put(EMBED_MODEL, name)
    if dimension is not None:
        tx.meta_put(EMBED_DIM, str(dimension))
    tx.embedding_started()
    keys = [queue_key(agent, i) for agent in tx.agent_names() for i in tx.iter_ids(agent, "live")]
    keys.sort()
    tx.queue_put_sorted(keys)
    return len(keys)


def waiting(
    tx: VectorTransaction, limit: int, agent: str | None = None
) -> list[tuple[str, str, str]]:
    """(agent, fact id, text) of up to `limit` queued facts, in queue order; the text is
    "" for an entry whose fact is no longer live (`store` then clears it)."""
    found: list[tuple[str, str, str]] = []
    if limit <= 0:
        return found
    for owner, fact_id in tx.iter_queue(agent):
        fact = tx.find(fact_id)
        found.append((owner, fact_id, fact.text if fact is not None and fact.is_live else ""))
        if len(found) >= limit:
            break
    return found


def store(
    tx: VectorTransaction, name: str, rows: list[tuple[str, str, str]], matrix: Vector
) -> tuple[int, int]:
    """Write the vectors (`matrix`'s rows) of facts given as (agent, id, the text that was
    embedded), but only while the store's model is still `name`, each fact is still live
    with that same text, and it is still queued. Consecutive rows of one fact are that
    fact's pieces (one vector per sentence, ADR 0038) and are written or skipped together.
    Returns (stored, skipped) counted in facts. The first vectors of a model record its
    dimension; vectors of another dimension are refused."""
    groups = _group_rows(rows, matrix)
    current, dimension = model(tx)
    if current != name or (dimension is not None and dimension != matrix.shape[1]):
        return 0, len(groups)
    by_agent: dict[str, list[tuple[str, list[Vector]]]] = defaultdict(list)
    skipped = 0
    for agent, fact_id, text, vectors in groups:
        fact = tx.find(fact_id)
        if not tx.queued(agent, fact_id):
            skipped += 1
            continue
        if fact is None or not fact.is_live or fact.agent_id != agent:
            tx.queue_delete(agent, fact_id)  # stale: the fact went
            skipped += 1
            continue
        if fact.text != text:
            skipped += 1  # embedded from another text: stays queued
            continue
        tx.queue_delete(agent, fact_id)
        by_agent[agent].append((fact_id, vectors))
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
    block when full); every touched block is rewritten once."""
    import numpy as np

    row_bytes = dimension * 4
    raw_free = tx.vector_row(free_key(agent)) or b""
    free = unpack_slots(raw_free)
    blocks: dict[int, tuple[bytearray, bytearray]] = {}

    def load(block: int) -> tuple[bytearray, bytearray]:
        if block not in blocks:
            data = tx.vector_row(block_key(agent, b"b", block)) or b""
            ids = tx.vector_row(block_key(agent, b"i", block)) or b""
            blocks[block] = (bytearray(data), bytearray(ids))
        return blocks[block]

    prefix = agent_prefix(agent, b"b")
    last = tx.last_vector_key(prefix)
    tail = None if last is None else BLOCK_NO.unpack(last[len(prefix) :])[0]
    for fact_id, vectors in items:
        old = unpack_slots(tx.vector_row(slot_key(agent, fact_id)) or b"")
        for block, row in reversed(old):  # popped back in their old order
            load(block)[1][row * ID_WIDTH : (row + 1) * ID_WIDTH] = EMPTY_ID
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
            slots.append((block, row))
        packed_slots = b"".join(SLOT.pack(*slot) for slot in slots)
        tx.put_vector_row(slot_key(agent, fact_id), packed_slots)
    for block, (data, ids) in blocks.items():
        tx.put_vector_row(block_key(agent, b"b", block), bytes(data))
        tx.put_vector_row(block_key(agent, b"i", block), bytes(ids))
        tx.stamp_vector_block(agent, block)
    packed = b"".join(SLOT.pack(*slot) for slot in free)
    if packed:
        tx.put_vector_row(free_key(agent), packed)
    elif raw_free:
        tx.delete_vector_row(free_key(agent))


def nearest(
    tx: VectorTransaction, agent: str, name: str, query: Vector, limit: int
) -> list[tuple[str, float]] | None:
    """Up to `limit` (fact id, cosine similarity) of `agent`'s live facts nearest `query`
    (a unit vector of model `name`), best first, ties by id; None when the store holds no
    vectors of that model and dimension. A fact's similarity is its best row's (a row per
    sentence, ADR 0038). Each block is one matrix product over the mapped bytes: no
    per-fact record is read. Retired facts lost their rows when retired."""
    import numpy as np

    current, dimension = model(tx)
    if not tx.has_vector_tables() or dimension is None or current != name or limit <= 0:
        return None
    if dimension != query.shape[0]:
        return None
    scores: list[npt.NDArray[np.float32]] = []
    id_rows: list[bytes] = []
    prefix = agent_prefix(agent, b"b")
    for key, value in tx.vector_rows(prefix):
        matrix = np.frombuffer(value, dtype=np.float32).reshape(-1, dimension)
        ids = tx.vector_row(agent_prefix(agent, b"i") + key[len(prefix) :]) or b""
        taken = np.frombuffer(ids, dtype=np.uint8).reshape(-1, ID_WIDTH)[:, 0] != 0
        scores.append(np.where(taken, matrix @ query, -np.inf).astype(np.float32))
        id_rows.append(ids)
    if not scores:
        return None
    flat = np.concatenate(scores)
    offsets = np.cumsum([0] + [len(r) // ID_WIDTH for r in id_rows])

    def id_at(position: int) -> str:
        block = int(np.searchsorted(offsets, position, side="right")) - 1
        row = position - int(offsets[block])
        return id_rows[block][row * ID_WIDTH : (row + 1) * ID_WIDTH].rstrip(b"\x00").decode()

    return best_per_fact(flat, id_at, limit) or None


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
        scores = matrix[[row for row, _ in kept]] @ vector
        for (_, fact_id), score in zip(kept, scores.tolist(), strict=True):
            if score > found.get(fact_id, -np.inf):
                found[fact_id] = float(score)
    return found


def _holds(ids: bytes, row: int, fact_id: str) -> bool:
    """Whether row `row` of a block whose ids are `ids` is `fact_id`'s."""
    return bytes(ids[row * ID_WIDTH : (row + 1) * ID_WIDTH]).rstrip(b"\x00") == fact_id.encode()


def blocks_since(tx: VectorTransaction, agent: str, name: str, since: int) -> VectorBlocks | None:
    """`agent`'s vector blocks of model `name` as of this snapshot: every block number, and
    a copy of each block changed after generation `since` (a block without a stamp, from
    before stamps existed, counts as changed). None when the store holds no vectors of
    that model. Costs one key walk over the agent's blocks plus the changed blocks."""
    import numpy as np

    current, dimension = model(tx)
    if not tx.has_vector_tables() or dimension is None or current != name:
        return None
    prefix = agent_prefix(agent, b"b")
    stamp_prefix = agent_prefix(agent, b"c")
    stamps = {
        BLOCK_NO.unpack(key[len(stamp_prefix) :])[0]: STAMP.unpack(bytes(value))[0]
        for key, value in tx.vector_rows(stamp_prefix)
    }
    numbers: list[int] = []
    changed: dict[int, tuple[Vector, tuple[str, ...]]] = {}
    for key, _ in tx.vector_rows(prefix, keys_only=True):
        block = BLOCK_NO.unpack(key[len(prefix) :])[0]
        numbers.append(block)
        if stamps.get(block, since + 1) > since:
            data = tx.vector_row(key) or b""
            ids = tx.vector_row(block_key(agent, b"i", block)) or b""
            matrix = np.frombuffer(data, dtype=np.float32).reshape(-1, dimension)
            names = tuple(
                ids[i : i + ID_WIDTH].rstrip(b"\x00").decode() for i in range(0, len(ids), ID_WIDTH)
            )
            changed[block] = (matrix, names)
    generation = tx.meta_int("generation")
    return VectorBlocks(generation, name, dimension, BLOCK_ROWS, tuple(numbers), changed)
