"""The recall-quality gate (ADR-011's reversal condition), enforced.

Lossless consolidation must not lower recall@8 with the guard off or on; every lossy
summariser must not lower it with the coverage guard in `keys` mode. With the guard off
the lossy summariser that drops markers must show the damage, so the gate can fail.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.retrieval_quality.gate import run_gate  # noqa: E402
from benchmarks.retrieval_quality.summarisers import SUMMARISERS  # noqa: E402
from tests.support.ollama_server import ScriptedOllama  # noqa: E402

LOSSY = [name for name in SUMMARISERS if name != "lossless"]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as running:
        yield running


@pytest.mark.parametrize("guard", ["off", "keys"])
def test_lossless_summaries_never_lower_recall(server: ScriptedOllama, guard: str) -> None:
    result = run_gate("lossless", guard, server=server)
    assert result.applied_cycles >= 3
    assert result.recall_before >= 0.95
    assert result.recall_after >= result.recall_before


@pytest.mark.parametrize("summariser", LOSSY)
def test_the_guard_keeps_lossy_summaries_from_lowering_recall(
    server: ScriptedOllama, summariser: str
) -> None:
    result = run_gate(summariser, "keys", server=server)
    assert result.recall_after >= result.recall_before, result


def test_without_the_guard_a_lossy_summariser_does_damage(server: ScriptedOllama) -> None:
    guarded = run_gate("drops markers", "keys", server=server)
    unguarded = run_gate("drops markers", "off", server=server)
    assert unguarded.recall_after < unguarded.recall_before
    assert guarded.kept_by_guard > 0
    assert unguarded.consumed > guarded.consumed
