"""Explain with a vector signal: each signal's rank and score, what each contributed to
the fused score (the parts sum to it), the age and the provenance, as `recall --explain`
(`cli.explain`) and MCP's `memory_search` with `explain: true` build them from the same
hits. Real stores, `ConceptVectors` as the signal (the CLI process has no embedder to test
it through; the subprocess tests in test_recall_explain_cli.py and tests/mcp_server check
the keys without one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.cli.explain import explanation_lines, explanations
from graymatter_tui.mcp.arguments import Arguments
from graymatter_tui.mcp.memory_tools import Session, memory_search
from graymatter_tui.recall.ranking import rank
from tests.recall.helpers import AGENT, FIXED, Clock
from tests.recall.test_recall_cli import run
from tests.support.concept_vectors import ConceptVectors

POLAR = "Payments go through Polar"
PARAPHRASE = "which billing vendor do we use"


def _seed(gm: LmdbStore, clock: Clock) -> tuple[str, str]:
    polar = gm.put(AGENT, POLAR).id
    clock.advance(days=1)
    both = gm.put(AGENT, "The billing vendor changed in May").id
    gm.put(AGENT, "weather sunny today")
    clock.advance(days=2)
    return polar, both


def test_cli_explanations_give_each_signal_rank_score_and_age(gm: LmdbStore, clock: Clock) -> None:
    polar, both = _seed(gm, clock)
    hits = rank(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm))
    assert [h.fact.id for h in hits] == [both, polar]
    why = explanations(gm, AGENT, hits)
    assert why[0]["vector_rank"] == 1 and why[0]["vector_score"] == 1.0
    assert why[0]["keyword_rank"] == 1 and why[0]["keyword_score"] > 0
    assert why[0]["age"] == "2d" and why[0]["age_seconds"] == 2 * 86_400
    assert (why[1]["vector_rank"], why[1]["keyword_rank"], why[1]["keyword_score"]) == (
        2,
        None,
        None,
    )
    assert why[1]["vector_score"] == pytest.approx(2**-0.5, abs=1e-6)
    assert why[1]["age"] == "3d" and why[1]["age_seconds"] == 3 * 86_400
    assert why[1]["recency_rank"] == 2 and why[1]["source"] == "api"
    # What each signal contributed: 0.7 of the cosine and 0.3 of the normalised keyword
    # score (the best keyword match: 1), no recency prior; the parts sum to the score.
    assert (why[0]["vector_part"], why[0]["keyword_part"], why[0]["recency_part"]) == (
        0.7,
        0.3,
        0.0,
    )
    assert why[0]["keyword_normalised"] == 1.0 and why[0]["vector_stand_in"] is False
    assert why[1]["vector_part"] == pytest.approx(0.7 * 2**-0.5, abs=1e-6)
    assert (why[1]["keyword_part"], why[1]["keyword_normalised"]) == (0.0, 0.0)
    # Recency: polar is the agent's oldest fact (0), the other two its newest (1).
    assert (why[0]["recency"], why[1]["recency"]) == (1.0, 0.0)
    for hit, w in zip(hits, why, strict=True):
        assert w["vector_part"] + w["keyword_part"] + w["recency_part"] == pytest.approx(
            hit.score, abs=1e-5
        )
    json.dumps(why)  # every value is JSON
    lines = explanation_lines(why[1])
    assert lines[0] == (
        "vector 0.4950 (cosine 0.7071, rank 2) + keyword – + recency 0.0000 "
        "(0.00 of the span, rank 2, age 3d)"
    )
    assert explanation_lines(why[0])[0].startswith(
        "vector 0.7000 (cosine 1.0000, rank 1) + keyword 0.3000 (tf-idf "
    )
    assert explanation_lines(why[0])[0].endswith(
        ", 1.00 of the best, rank 1) + recency 0.0000 (1.00 of the span, rank 1, age 2d)"
    )
    assert lines[1] == f"weight 1.000 · written {hits[1].fact.created_at} by api"
    assert lines[2] == "lineage: replaced nothing"


def test_mcp_explain_gives_the_same_signals(gm: LmdbStore, clock: Clock) -> None:
    polar, both = _seed(gm, clock)
    session = Session(gm, read_only=True, vectors=ConceptVectors(gm))
    reply = memory_search(
        session, Arguments({"agent_id": AGENT, "query": PARAPHRASE, "explain": True})
    )
    why = reply.structured["explain"]
    assert [w["fact_id"] for w in why] == [both, polar]
    hits = rank(gm, AGENT, PARAPHRASE, vectors=ConceptVectors(gm))
    cli = explanations(gm, AGENT, hits)
    shared = (
        "vector_rank",
        "vector_score",
        "keyword_rank",
        "keyword_score",
        "recency_rank",
        "keyword_normalised",
        "recency",
        "vector_part",
        "keyword_part",
        "recency_part",
        "vector_stand_in",
    )
    for mcp_why, cli_why, hit in zip(why, cli, hits, strict=True):
        assert {k: mcp_why[k] for k in (*shared, "age", "age_seconds")} == {
            k: cli_why[k] for k in (*shared, "age", "age_seconds")
        }
        assert mcp_why["score"] == round(hit.score, 6)
    assert f"2. id {polar} · vector 0.4950 (cosine 0.7071, rank 2) + keyword – + recency " in (
        reply.text
    )


def test_cli_json_explain_has_the_new_keys_and_the_age(tmp_path: Path) -> None:
    clock = Clock(FIXED)
    with LmdbStore.open(tmp_path, clock_fn=clock) as store:
        fact = store.put(AGENT, "router firmware upgrade scheduled")
    # run() pins the CLI's clock one hour after FIXED.
    done = run(tmp_path, "recall", AGENT, "router firmware", "--json", "--explain")
    assert done.returncode == 0, done.stderr
    (hit,) = json.loads(done.stdout)
    assert hit["id"] == fact.id
    assert (hit["vector_rank"], hit["vector_score"]) == (None, None)
    assert hit["keyword_rank"] == 1 and hit["keyword_score"] > 0
    assert (hit["age"], hit["age_seconds"]) == ("1h", 3600)
    # Without a vector signal: the keyword part is the normalised keyword score.
    assert (hit["vector_part"], hit["keyword_part"], hit["recency_part"]) == (0.0, 1.0, 0.0)
    assert (hit["keyword_normalised"], hit["recency"], hit["vector_stand_in"]) == (1.0, 0.0, False)
    assert hit["score"] == 1.0


@pytest.mark.parametrize(
    "query",
    ["the of and", "?!... ,,,", "привет мир"],
    ids=["stop-words", "punctuation", "cyrillic"],
)
def test_cli_explain_of_a_meaningless_or_foreign_query_is_empty_and_well_formed(
    tmp_path: Path, query: str
) -> None:
    with LmdbStore.open(tmp_path, clock_fn=Clock(FIXED)) as store:
        store.put(AGENT, "router firmware upgrade scheduled")
    done = run(tmp_path, "recall", AGENT, query, "--json", "--explain")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "[]", "")
    done = run(tmp_path, "recall", AGENT, query, "--explain")
    assert (done.returncode, done.stdout, done.stderr) == (0, "no matching facts\n", "")


@pytest.mark.parametrize("query", ["the of and", "?!...", "привет мир"])
def test_mcp_explain_of_a_meaningless_or_foreign_query_is_empty(
    gm: LmdbStore, clock: Clock, query: str
) -> None:
    _seed(gm, clock)
    gm.retire(gm.put(AGENT, "old billing vendor").id)  # every fact left carries a concept
    for fact in gm.list_facts(AGENT, "live"):
        if fact.text == "weather sunny today":
            gm.retire(fact.id)
    session = Session(gm, read_only=True, vectors=ConceptVectors(gm))
    reply = memory_search(session, Arguments({"agent_id": AGENT, "query": query, "explain": True}))
    assert reply.structured == {
        "agent_id": AGENT,
        "query": query,
        "count": 0,
        "facts": [],
        "explain": [],
        "vector": {"used": True},  # ConceptVectors reports no use of its own: taken as used
    }
    assert reply.text.startswith("No memories found")
