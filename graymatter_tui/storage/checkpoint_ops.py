"""Checkpoints (an agent's working state saved for its next session) and aliases (terms
an agent declared equivalent, which widen its later searches), as functions over Transaction."""

from __future__ import annotations

import msgspec

from graymatter_tui.core import clock
from graymatter_tui.core.words import counted
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import Checkpoint


class _CheckpointRecord(msgspec.Struct, frozen=True):
    created_at: str
    state: str | None = None  # the JSON object the agent sent, exactly as sent


class _AliasRecord(msgspec.Struct, frozen=True):
    equivalents: list[str]


def save_checkpoint(tx: Transaction, agent: str, state: str | None) -> Checkpoint:
    checkpoint_id = tx.new_id()
    created_at = clock.format_time(tx.now)
    record = _CheckpointRecord(created_at=created_at, state=state)
    tx.put_checkpoint(agent, checkpoint_id, msgspec.json.encode(record))
    size = "no state" if state is None else f"{counted(len(state.encode()), 'byte')} of state"
    tx.log("checkpoint", agent, text=f"checkpoint {checkpoint_id} saved ({size})")
    return Checkpoint(id=checkpoint_id, agent_id=agent, created_at=created_at, state=state)


def latest_checkpoint(tx: Transaction, agent: str) -> Checkpoint | None:
    raw = tx.latest_checkpoint(agent)
    if raw is None:
        return None
    checkpoint_id, record_bytes = raw
    record = msgspec.json.decode(record_bytes, type=_CheckpointRecord)
    return Checkpoint(
        id=checkpoint_id, agent_id=agent, created_at=record.created_at, state=record.state
    )


def add_alias(tx: Transaction, agent: str, term: str, equivalents: list[str]) -> list[str]:
    """Join `equivalents` to what `term` already stands for; returns the whole set."""
    known = aliases(tx, agent).get(term, [])
    joined = list(dict.fromkeys([*known, *equivalents]))
    tx.put_alias(agent, term, msgspec.json.encode(_AliasRecord(joined)))
    tx.log("alias", agent, text=f"{term} = {', '.join(joined)}")
    return joined


def aliases(tx: Transaction, agent: str) -> dict[str, list[str]]:
    return {
        term: msgspec.json.decode(raw, type=_AliasRecord).equivalents
        for term, raw in tx.iter_aliases(agent)
    }
