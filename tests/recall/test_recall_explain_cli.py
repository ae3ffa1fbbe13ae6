"""`graymatter-tui recall --explain` through the real CLI: why each fact ranked and what it
superseded (its lineage), as text for people and as JSON keys beside the usual ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import Fact
from tests.recall.test_recall_cli import run

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

AGENT = "ops"
STAMP = "2026-02-01T10:00:00.000000Z"
HOSTILE_ID = "01KG0000000000000000000001"


def _seed(path: Path) -> tuple[Fact, Fact, Fact]:
    with LmdbStore.open(path) as store:
        first = store.put(AGENT, "The build cache lives on disk one")
        second, _ = store.revise(first.id, "The build cache lives on disk two")
        third, _ = store.revise(second.id, "The build cache lives on disk three")
        other = store.put(AGENT, "The build cache is cleared on Sundays")
        store.retire(other.id)
    return first, second, third


def test_text_shows_ranks_source_and_the_lineage_nearest_first(tmp_path: Path) -> None:
    first, second, third = _seed(tmp_path)
    done = run(tmp_path, "recall", AGENT, "build cache disk", "--explain", "--preview")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(f"{third.id}  The build cache lives on disk three")
    # No vector signal in the CLI without an embedder: "vector –"; the best keyword
    # match's part is 1 (its share of the best keyword score), no recency prior.
    assert lines[1].startswith("    vector – + keyword 1.0000 (tf-idf ")
    assert ", 1.00 of the best, rank 1) + recency 0.0000 (" in lines[1]
    assert ", rank 1, age " in lines[1]
    assert lines[2].startswith("    weight 1.000 · written ")
    assert lines[2].endswith(" by api")  # written in-process by the test, not by the CLI
    assert lines[3] == "    lineage: replaced 2 facts (2 deep)"
    assert lines[4] == f"      {second.id}  The build cache lives on disk two"
    assert lines[5] == f"        {first.id}  The build cache lives on disk one"
    assert len(lines) == 6


def test_json_adds_the_explain_keys_and_keeps_the_old_ones(tmp_path: Path) -> None:
    first, second, third = _seed(tmp_path)
    plain = json.loads(run(tmp_path, "recall", AGENT, "build cache disk", "--json").stdout)
    assert set(plain[0]) == {"id", "text", "score"}  # unchanged without --explain
    done = run(tmp_path, "recall", AGENT, "build cache disk", "--json", "--explain")
    (hit,) = json.loads(done.stdout)
    assert {"id", "text", "score"} <= set(hit)
    assert hit["id"] == third.id and hit["keyword_rank"] == 1 and hit["source"] == "api"
    assert [(s["fact_id"], s["replaced_by"], s["depth"]) for s in hit["lineage"]] == [
        (second.id, third.id, 1),
        (first.id, second.id, 2),
    ]
    assert hit["lineage_capped"] is False and hit["lineage_cycle"] is False


def test_a_cycle_of_ids_and_hostile_stored_text_are_shown_safely(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path) as store:
        live = store.put(AGENT, "The release train leaves on Tuesday")
        hostile = Fact(
            id=HOSTILE_ID,
            agent_id=AGENT,
            text="old \x1b[31mred\x1b[0m release [bold]note[/bold]",
            created_at=STAMP,
            accessed_at=STAMP,
            superseded_by=live.id,
        )
        store.write(
            lambda tx: [
                tx.write_fact(hostile, None),
                tx.put_receipts(HOSTILE_ID, [live.id]),  # corrupt: closes a cycle of ids
            ]
        )
    done = run(tmp_path, "recall", AGENT, "release train", "--explain", "--preview")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[3] == (
        "    lineage: replaced 1 fact (1 deep); stopped at a cycle of ids "
        "(corrupt receipts, see doctor)"
    )
    assert lines[4].startswith(f"      {HOSTILE_ID}  old ") and "[bold]note[/bold]" in lines[4]
    (hit,) = json.loads(
        run(tmp_path, "recall", AGENT, "release train", "--json", "--explain").stdout
    )
    assert hit["lineage_cycle"] is True
    assert hit["lineage"][0]["text"] == hostile.text  # JSON carries it as stored
