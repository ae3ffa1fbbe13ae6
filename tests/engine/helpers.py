"""Shared helpers of the consolidation-engine tests: a settable clock, predictable stores,
snapshots for "nothing changed" assertions and a parser for the prompt rows."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import Fact
from graymatter_tui.storage import NewFact
from tests.support.clock import ManualClock

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
NOW_TEXT = "2026-03-01T12:00:00Z"
AGENT = "agent-a"
MODEL = "llama3.2"

PROMPT_ROW = re.compile(r"^- ([0-9A-HJKMNP-TV-Z]{26}): (.*)$", re.MULTILINE)


class Clock(ManualClock):
    """A store clock the test can move, starting at NOW."""

    def __init__(self, now: datetime = NOW) -> None:
        super().__init__(now)


def seed_weighted(
    store: LmdbStore,
    agent: str = AGENT,
    n: int = 30,
    *,
    texts: list[str] | None = None,
    at: datetime = NOW,
) -> list[Fact]:
    """`n` facts with distinct weights from 0.9 down to 0.1, accessed at `at` (so decay at
    `at` changes nothing). Returned weakest first: the order select uses."""
    texts = texts or [f"plain note {word} about the garden" for word in _words(n)]
    facts = store.put_many(
        NewFact(
            agent_id=agent,
            text=texts[i],
            created_at=at,
            accessed_at=at,
            weight=round(0.9 - 0.8 * i / max(n - 1, 1), 6),
        )
        for i in range(n)
    )
    return sorted(facts, key=lambda f: (f.weight, f.id))


def _words(n: int) -> list[str]:
    """Distinct lower-case words with no digits (so no key details)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [f"{letters[i % 26]}{letters[(i // 26) % 26]}zo" for i in range(n)]


def prompt_rows(prompt: str) -> list[tuple[str, str]]:
    """(id, text) of every `- <ID>: <text>` row of a prompt, in order."""
    return PROMPT_ROW.findall(prompt)


def snapshot(store: LmdbStore) -> dict[str, Any]:
    """Everything a failed cycle must leave alone: facts, counters, receipts, journal."""
    facts = {f.id: msgspec.to_builtins(f) for f in store.all_facts()}
    return {
        "facts": facts,
        "counters": msgspec.to_builtins(store.counters()),
        "receipts": {fid: store.receipts(fid) for fid in facts},
        "records": [msgspec.to_builtins(r) for r in store.records()],
    }


def curation_state(store: LmdbStore) -> dict[str, tuple[str, str, bool]]:
    """Text, superseded_by and pin of every fact (what only a curation or apply changes)."""
    return {f.id: (f.text, f.superseded_by, f.pinned) for f in store.all_facts()}


def weights(store: LmdbStore) -> dict[str, float]:
    return {f.id: f.weight for f in store.all_facts()}


def all_ok(checks: list[Any]) -> bool:
    return all(c.ok for c in checks)


def violations(checks: list[Any]) -> list[str]:
    return [f"{c.name}: {v}" for c in checks for v in c.violations]
