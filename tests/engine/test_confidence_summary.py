"""A summary is no surer than what it consumes: it takes the lowest confidence among the
facts a cycle consumed, and none (unknown) when any of them has none. On both
backends."""

from __future__ import annotations

import pytest

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.confidence import Confidence
from graymatter_tui.storage import NewFact
from tests.engine.helpers import AGENT, MODEL, NOW
from tests.support.backends import AnyStore
from tests.support.ollama_fake import FakeOllama, Reply


def _seed(store: AnyStore, labels: list[Confidence | None]) -> list[str]:
    """30 facts, weakest first; the weakest carry `labels` in order. Returns their ids,
    weakest first (the order the cycle's batch takes them in)."""
    n = 30
    facts = store.put_many(
        NewFact(
            agent_id=AGENT,
            text=f"plain note {chr(97 + i % 26)}{chr(97 + i // 26)}zo about the garden",
            created_at=NOW,
            accessed_at=NOW,
            weight=round(0.1 + 0.8 * i / (n - 1), 6),
            confidence=labels[i] if i < len(labels) else None,
        )
        for i in range(n)
    )
    ordered = sorted(facts, key=lambda f: (f.weight, f.id))
    assert [f.confidence for f in ordered[: len(labels)]] == labels
    return [f.id for f in ordered]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["verified", "verified", "verified"], "verified"),
        (["verified", "inferred", "verified"], "inferred"),
        (["inferred", "unverified", "verified"], "unverified"),
        (["verified", None, "verified"], None),
    ],
)
def test_a_summary_takes_the_lowest_confidence_it_consumed(
    any_store: AnyStore,
    ollama: FakeOllama,
    labels: list[Confidence | None],
    expected: Confidence | None,
) -> None:
    ids = _seed(any_store, labels)
    consumed = ids[: len(labels)]
    ollama.script(Reply.proposal("merged garden notes", consumed))
    summariser = OllamaSummariser(ollama.url, MODEL, 2.0, transport=ollama.transport)
    record = Cycle(any_store, AGENT, summariser, CycleOptions(guard="off")).run_sync()
    assert record.outcome == "applied", record.reason
    summary = any_store.require(record.summary_id)
    assert summary.text == "merged garden notes"
    assert summary.confidence == expected
    # What it consumed keeps its own label, as a tombstone.
    assert [any_store.require(i).confidence for i in consumed] == labels
