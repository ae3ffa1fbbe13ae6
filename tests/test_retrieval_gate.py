"""The recall-quality gate (the reversal condition of docs/decisions/0010), enforced.

Lossless consolidation must not lower recall@8 with the guard off or on; every lossy
summariser must not lower it with the coverage guard in `keys` mode. With the guard off
the lossy summariser that drops markers must show the damage, so the gate can fail.

Recall alone is one-sided (a guard that keeps every fact never lowers it), so the guard's
verdicts are also checked against what each summary visibly kept or lost: a fact whose
whole text is in the summary must be consumed, a fact with a number the summary lacks must
be kept. For the lossy summarisers every shown fact of this corpus is one or the other,
so this fixes the counts exactly; they are the ones in benchmarks/README.md's table. A
summary that rewords every fact but keeps each detail must consume them all, so a guard
that asks for the exact words fails as well.

Each canonical fact is also asked for in other inflections ("vaults codes projects
Falcons"): a stemming store (the default, English) must find them as well as the exact
queries, before and after consolidation; a store without stemming (keyword-only, what
every store was before schema 4) finds almost none, so this part of the gate can fail.

Hybrid recall: the corpus gains paraphrased questions that share no stemmed word with
their facts, only a concept of the fixed concept table (checked here, so the table cannot
quietly make them keyword matches). Keyword recall cannot find them; the vector signal
(the concept table's vectors, brute-force cosine) must, and must not cost the exact and
inflected questions anything. A summary needs its best sentence's vector (docs/decisions
0038): with one vector for its whole text the exact questions lose after consolidation,
which benchmarks/README.md reports rather than asserts.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.retrieval_quality.gate import PARAPHRASES, GateResult, run_gate  # noqa: E402
from benchmarks.retrieval_quality.summarisers import SUMMARISERS  # noqa: E402
from graymatter_tui.core.tokens import Analyzer  # noqa: E402
from tests.support.concepts import concept_vector  # noqa: E402
from tests.support.ollama_fake import FakeOllama  # noqa: E402

LOSSY = [name for name in SUMMARISERS if name not in ("lossless", "terse notes")]
CYCLES, MAX_BATCH = 6, 32  # run_gate's defaults: every cycle's batch is full
SHOWN = CYCLES * MAX_BATCH
# (consumed, kept by the guard) with guard `keys`, as in benchmarks/README.md.
EXPECTED_KEYS = {
    "drops markers": (159, 33),  # about half the markers dropped; fillers have none
    "truncates": (33, 159),  # only what fits in the first 400 characters survives
    "paraphrases numbers": (0, 192),  # every fact carries a number, all spelt out
    "consumes unseen ids": (96, 96),  # the first half of each batch is summarised
}


@functools.cache
def gate(summariser: str, guard: str, **options: Any) -> GateResult:
    """`run_gate`, run once per set of arguments in this module: several tests read the
    same run (a run is deterministic, and its result frozen)."""
    return run_gate(summariser, guard, **options)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOllama]:
    fake = FakeOllama()
    yield fake
    assert fake.errors == []


@pytest.mark.parametrize("guard", ["off", "keys"])
def test_lossless_summaries_never_lower_recall(server: FakeOllama, guard: str) -> None:
    result = gate("lossless", guard, server=server)
    assert result.applied_cycles == CYCLES
    assert result.recall_before >= 0.95
    assert result.recall_after >= result.recall_before
    # Every detail survives: everything shown is consumed, nothing kept.
    assert (result.shown, result.verbatim, result.lost) == (SHOWN, SHOWN, 0), result
    assert (result.consumed, result.kept_by_guard) == (SHOWN, 0), result


def test_the_guard_consumes_reworded_facts_whose_details_survive(server: FakeOllama) -> None:
    # No fact is held verbatim, none lost a number: a guard that asked for the exact
    # words (or kept everything) would keep them all.
    result = gate("terse notes", "keys", server=server)
    assert (result.shown, result.verbatim, result.lost) == (SHOWN, 0, 0), result
    assert (result.consumed, result.kept_by_guard) == (SHOWN, 0), result
    assert result.recall_after >= result.recall_before, result


@pytest.mark.parametrize("summariser", LOSSY)
def test_the_guard_keeps_lossy_summaries_from_lowering_recall(
    server: FakeOllama, summariser: str
) -> None:
    result = gate(summariser, "keys", server=server)
    assert result.recall_after >= result.recall_before, result
    # The guard consumes what survived and keeps what was lost, no more, no less.
    assert result.shown == SHOWN, result
    assert result.verbatim + result.lost == SHOWN, result
    assert result.consumed == result.verbatim, result
    assert result.kept_by_guard == result.lost, result
    assert (result.consumed, result.kept_by_guard) == EXPECTED_KEYS[summariser], result


def test_without_the_guard_a_lossy_summariser_does_damage(server: FakeOllama) -> None:
    guarded = gate("drops markers", "keys", server=server)
    unguarded = gate("drops markers", "off", server=server)
    assert unguarded.recall_after < unguarded.recall_before
    assert unguarded.lost > 0 and unguarded.kept_by_guard == 0
    assert guarded.kept_by_guard > 0
    assert unguarded.consumed > guarded.consumed


@pytest.mark.parametrize("guard", ["off", "keys"])
def test_stemming_finds_inflected_queries_before_and_after_consolidation(
    server: FakeOllama, guard: str
) -> None:
    stemmed = gate("lossless", guard, server=server)
    assert stemmed.inflected_before >= 0.95, stemmed
    assert stemmed.inflected_after >= stemmed.inflected_before, stemmed
    assert stemmed.recall_after >= stemmed.recall_before >= 0.95, stemmed
    keyword_only = gate("lossless", guard, server=server, stem_language="none")
    assert keyword_only.inflected_before <= 0.05, keyword_only  # only "Ibis" is as written
    assert keyword_only.recall_before == stemmed.recall_before  # exact queries: the same


def test_with_stemming_the_guard_still_keeps_lossy_summaries_from_lowering_recall(
    server: FakeOllama,
) -> None:
    guarded = gate("drops markers", "keys", server=server)
    assert guarded.inflected_after >= guarded.inflected_before >= 0.95, guarded
    unguarded = gate("drops markers", "off", server=server)
    assert unguarded.inflected_after < unguarded.inflected_before, unguarded


def _cosine(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(concept_vector(a), concept_vector(b), strict=True))


@pytest.mark.parametrize(("fact", "question"), PARAPHRASES, ids=[q for _, q in PARAPHRASES])
def test_a_paraphrase_shares_only_a_concept_with_its_fact(fact: str, question: str) -> None:
    text = fact.format(marker="12345")
    for language in ("english", "none"):
        analyzer = Analyzer(language)
        assert not set(analyzer.terms(text)) & set(analyzer.terms(question)), language
    assert _cosine(text, question) > 0  # a likeness: a vector candidate (no floor)
    # ... and no other paraphrased fact means the same to the table.
    for other, _ in PARAPHRASES:
        if other != fact:
            assert _cosine(other.format(marker="12345"), question) == 0.0, other


@pytest.mark.parametrize("guard", ["off", "keys"])
def test_hybrid_finds_paraphrases_that_keyword_recall_cannot(
    server: FakeOllama, guard: str
) -> None:
    for language in ("none", "english"):
        keyword = gate("lossless", guard, server=server, stem_language=language, paraphrases=True)
        assert keyword.paraphrase_before == keyword.paraphrase_after == 0.0, keyword
    hybrid = gate("lossless", guard, server=server, paraphrases=True, vectors="sentences")
    assert hybrid.paraphrase_before == hybrid.paraphrase_after == 1.0, hybrid
    whole = gate("lossless", guard, server=server, paraphrases=True, vectors="text")
    assert whole.paraphrase_before == 1.0, whole


@pytest.mark.parametrize(
    ("summariser", "guard"), [("lossless", "off"), ("lossless", "keys"), ("drops markers", "keys")]
)
def test_hybrid_does_not_lower_exact_or_inflected_recall(
    server: FakeOllama, summariser: str, guard: str
) -> None:
    stemmed = gate(summariser, guard, server=server, paraphrases=True)
    hybrid = gate(summariser, guard, server=server, paraphrases=True, vectors="sentences")
    assert hybrid.recall_before >= stemmed.recall_before >= 0.95, (hybrid, stemmed)
    assert hybrid.recall_after >= stemmed.recall_after, (hybrid, stemmed)
    assert hybrid.inflected_before >= stemmed.inflected_before, (hybrid, stemmed)
    assert hybrid.inflected_after >= stemmed.inflected_after, (hybrid, stemmed)
    whole = gate(summariser, guard, server=server, paraphrases=True, vectors="text")
    assert whole.recall_before >= stemmed.recall_before, whole
    assert whole.inflected_before >= stemmed.inflected_before, whole


@pytest.mark.parametrize(
    ("summariser", "guard"), [("lossless", "off"), ("lossless", "keys"), ("drops markers", "keys")]
)
def test_the_stored_pipeline_keeps_exact_recall_after_consolidation(
    server: FakeOllama, summariser: str, guard: str
) -> None:
    # The worker embedding a vector per sentence and the store's own search, against the
    # scripted embedding server (same concept table): what a user's recall answers.
    stemmed = gate(summariser, guard, server=server, paraphrases=True)
    stored = gate(summariser, guard, server=server, paraphrases=True, vectors="stored")
    assert stored.recall_before >= stemmed.recall_before >= 0.95, (stored, stemmed)
    assert stored.recall_after >= stemmed.recall_after, (stored, stemmed)
    assert stored.inflected_after >= stemmed.inflected_after, (stored, stemmed)
    assert stored.paraphrase_before == stored.paraphrase_after == 1.0, stored
