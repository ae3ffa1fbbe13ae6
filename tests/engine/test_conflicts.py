"""The near-duplicate / possible-update verdict, on pairs and on the labelled benchmark set."""

from __future__ import annotations

import csv
from pathlib import Path

from graymatter_tui.core.conflicts import compare

PAIRS = Path(__file__).parents[2] / "benchmarks" / "conflict_pairs.tsv"


def test_a_changed_date_is_a_possible_update_naming_both_dates() -> None:
    verdict = compare(
        "Deploy freeze starts 2026-12-18 for the holidays.",
        "Deploy freeze starts 2026-12-20 for the holidays.",
    )
    assert verdict.kind == "possible_update"
    assert verdict.only_new == ["2026-12-18"]
    assert verdict.only_old == ["2026-12-20"]
    assert "2026-12-18" in verdict.reason() and "2026-12-20" in verdict.reason()


def test_a_reworded_fact_with_the_same_details_is_a_duplicate() -> None:
    verdict = compare(
        "Daniel Kim is the on-call lead for checkout.",
        "The on-call lead for checkout is Daniel Kim.",
    )
    assert verdict.kind == "duplicate"


def test_a_fact_that_adds_a_detail_is_neither() -> None:
    verdict = compare(
        "The payments service runs 3 replicas in production and 2 in staging.",
        "The payments service runs 3 replicas in production.",
    )
    assert verdict.kind not in ("duplicate", "possible_update")


def test_other_subjects_are_unrelated() -> None:
    assert compare("Kafka topic orders has 12 partitions.", "The brand colour is teal.").kind == (
        "unrelated"
    )


def test_the_labelled_set_meets_the_precision_and_recall_goal() -> None:
    with PAIRS.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) >= 100
    got = [(r["kind"], compare(r["new"], r["old"]).kind) for r in rows]
    for kind in ("possible_update", "duplicate"):
        said = [want for want, have in got if have == kind]
        real = [have for want, have in got if want == kind]
        precision = said.count(kind) / len(said)
        recall = real.count(kind) / len(real)
        assert precision >= 0.9, (kind, precision)
        assert recall >= 0.7, (kind, recall)


def test_a_duplicate_needs_a_shared_detail_or_two_subject_words() -> None:
    # One shared word and nothing else in common is not the same fact.
    assert compare("while following", "before following 2").kind == "related"
    assert compare("Globex support hours are 9:00.", "Globex support hours are 9:00.").kind == (
        "duplicate"
    )


def test_a_possible_update_needs_a_shared_detail_or_two_subject_words() -> None:
    assert compare("note 1", "note 0").kind == "related"
    assert compare("Disk alerts fire at 90% usage.", "Disk alerts fire at 80% usage.").kind == (
        "possible_update"
    )
