"""Where embedding vectors live in the `vectors` table (ADR 0034), per agent:

    agent \\0 b \\0 block   -> up to BLOCK_ROWS float32 rows of the store's dimension
    agent \\0 i \\0 block   -> the fact id of each row, ID_WIDTH bytes, zeros for a free row
    agent \\0 s \\0 fact id -> (block, row) of that fact's vector
    agent \\0 f             -> free (block, row) slots, reused before the tail grows
    agent \\0 c \\0 block   -> the store generation that last changed the block (u64):
                             lets a per-process cache re-read only what changed (ADR 0045)

A query reads each block as one contiguous matrix (no per-fact record is decoded); a
write rewrites only the blocks it touches. `embed_queue` holds `agent \\0 fact id` of
live facts waiting for a vector."""

from __future__ import annotations

import struct

SEP = b"\x00"
BLOCK_ROWS = 128
ID_WIDTH = 64  # fact ids are at most 64 bytes (Tx.agent_of refuses longer)
BLOCK_NO = struct.Struct(">I")
SLOT = struct.Struct(">IH")
STAMP = struct.Struct(">Q")
EMPTY_ID = bytes(ID_WIDTH)


def agent_prefix(agent: str, kind: bytes) -> bytes:
    return agent.encode() + SEP + kind + SEP


def block_key(agent: str, kind: bytes, block: int) -> bytes:
    return agent_prefix(agent, kind) + BLOCK_NO.pack(block)


def slot_key(agent: str, fact_id: str) -> bytes:
    return agent_prefix(agent, b"s") + fact_id.encode()


def free_key(agent: str) -> bytes:
    return agent.encode() + SEP + b"f"


def queue_key(agent: str, fact_id: str) -> bytes:
    return agent.encode() + SEP + fact_id.encode()


def padded_id(fact_id: str) -> bytes:
    return fact_id.encode().ljust(ID_WIDTH, b"\x00")
