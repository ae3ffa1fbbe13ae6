"""The near-duplicate / possible-update verdict, on pairs and on the labelled benchmark set."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from graymatter_tui.core.conflicts import compare, profile
from graymatter_tui.core.pair_details import pair_details

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


def test_another_customers_ticket_is_another_subject_not_an_update() -> None:
    verdict = compare(
        "Password reset emails to Initech were delayed by the spam filter on ticket SUP-6344.",
        "Password reset emails to Umbrella Health were delayed by the spam filter on ticket "
        "SUP-2775.",
    )
    assert verdict.kind == "related"
    # one customer's two tickets are two tickets too
    assert compare(
        "Wayne Foods reported ticket SUP-8564 about duplicate invoices in March.",
        "Wayne Foods reported ticket SUP-8504 about duplicate invoices in May.",
    ).kind == ("related")
    assert compare(
        "Experiment EXP-525 used learning rate 3e-4 and batch size 20.",
        "Experiment EXP-630 used learning rate 3e-4 and batch size 29.",
    ).kind == ("related")


def test_the_same_sentence_about_another_service_is_not_a_duplicate() -> None:
    for new, old in (
        (
            "gateway depends on Postgres 16 on port 5432 in staging.",
            "ledger depends on Postgres 16 on port 5432 in staging.",
        ),
        (
            "search-indexer runs 4 replicas in production behind the gateway.",
            "ledger runs 4 replicas in production behind the gateway.",
        ),
        (
            "On-call for notifications this week is Chen Wei (chen@example.com).",
            "On-call for ledger this week is Chen Wei (chen@example.com).",
        ),
        (
            "Initech is on the Enterprise plan with a renewal date of 2027-03-13.",
            "Globex is on the Enterprise plan with a renewal date of 2027-03-13.",
        ),
    ):
        assert compare(new, old).kind not in ("duplicate", "possible_update"), (new, old)


def test_another_service_with_another_value_is_not_an_update() -> None:
    for new, old in (
        (
            "gateway runs 9 replicas in production behind the gateway.",
            "notifications runs 1 replicas in production behind the gateway.",
        ),
        (
            "Deploy freeze for gateway starts on May 27.",
            "Deploy freeze for billing-api starts on January 5.",
        ),
        (
            "Paper by Maria Lopez (2024) reports a 36% gain on retrieval benchmarks.",
            "Paper by Lars Nilsson (2024) reports a 72% gain on retrieval benchmarks.",
        ),
    ):
        assert compare(new, old).kind == "related", (new, old)


def test_the_same_named_subject_with_another_value_is_an_update() -> None:
    verdict = compare(
        "Deploy freeze for gateway starts on March 18.",
        "Deploy freeze for gateway starts on July 17.",
    )
    assert verdict.kind == "possible_update"
    # a date written in words is one detail, as an ISO date is
    assert verdict.only_new == ["March 18"]
    assert verdict.only_old == ["July 17"]
    # dates sharing their year and month still differ as a whole
    assert compare(
        "Deploy freeze for billing-api starts on 2026-03-10.",
        "Deploy freeze for billing-api starts on 2026-03-03.",
    ).kind == ("possible_update")
    assert compare(
        "auth-service runs 5 replicas in production behind the gateway.",
        "auth-service runs 7 replicas in production behind the gateway.",
    ).kind == ("possible_update")


def test_a_role_held_by_another_person_is_an_update_a_person_doing_it_is_not() -> None:
    assert compare(
        "On-call for billing-api this week is Chen Wei (chen@example.com).",
        "On-call for billing-api this week is Yuki Tanaka (yuki@example.com).",
    ).kind == ("possible_update")
    # the name the fact opens with, or one before what it is about, is its subject
    assert compare(
        "Yuki Tanaka suggested comparing BM25 against dense retrieval on the support corpus.",
        "Chen Wei suggested comparing BM25 against dense retrieval on the support corpus.",
    ).kind == ("related")
    assert compare(
        "Maria Lopez at Acme Corp prefers email over phone; reach them at maria@example.com.",
        "Maria Lopez at Wayne Foods prefers email over phone; reach them at maria@example.com.",
    ).kind == ("related")


# ---- details written in other forms (core/pair_details.py) -----------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("The review is on March 4, 2027.", "The review is on 2027-03-04."),
        ("The review is on 4 March 2027.", "The review is on 2027-03-04."),
        ("The app's latest release is v2.3.1.", "The app's latest release is version 2.3.1."),
        ("The cache has a memory limit of 4GB.", "The cache has a memory limit of 4 GB."),
        ("The user runs 15 km every week.", "The user runs 15 kilometres every week."),
        ("The payments service runs three replicas.", "The payments service runs 3 replicas."),
    ],
)
def test_one_detail_in_two_spellings_is_the_same_detail(one: str, other: str) -> None:
    assert profile(one).details.keys() == profile(other).details.keys(), (one, other)
    assert compare(one, other).kind == "duplicate"


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("The health check path is /healthz.", "The health check path is /status."),
        ("The ingestion workers run four threads.", "The ingestion workers run two threads."),
        ("The app's latest release is v2.3.1.", "The app's latest release is v2.4.0."),
        (
            "Support escalations go to escalations@northwind.io.",
            "Support escalations go to leads@northwind.io.",
        ),
        ("The staging database is in eu-west-2.", "The staging database is in eu-west-1."),
    ],
)
def test_a_replaced_value_in_another_spelling_is_an_update(new: str, old: str) -> None:
    assert compare(new, old).kind == "possible_update", (new, old)


def test_what_only_looks_like_a_detail_is_left_alone() -> None:
    assert pair_details("Meet on March 45 with no one.")[0] == []  # no such day; "one"
    assert pair_details("🙂🙂🙂")[0] == []
    found, rest = pair_details("Visit https://ex.com/a/b and mail ops-2@ex-1.io at /srv/x")
    assert [key for key, _, _ in found] == ["/srv/x"]  # inside a URL or email: theirs
    assert "https://ex.com/a/b" in rest and "ops-2@ex-1.io" in rest
    long = "The review of v1.2.3 is on 4 March 2027. " * 1600  # 64 KiB
    assert {key for key, _, _ in pair_details(long)[0]} == {"v1.2.3", "2027 03 04"}


# ---- the verdict given the model's cosine (the embedder's pass) ------------------------


def test_by_meaning_a_rewording_with_every_detail_held_is_a_duplicate() -> None:
    new, old = "The user avoids coffee entirely.", "The user doesn't drink coffee."
    assert compare(new, old).kind != "duplicate"  # the words share only "coffee"
    assert compare(new, old, cosine=0.85).kind == "duplicate"
    assert compare(new, old, cosine=0.77).kind != "duplicate"  # below SAME_MEANING


def test_by_meaning_a_replaced_detail_of_its_kind_is_an_update() -> None:
    verdict = compare(
        "The kids' school now starts at 8:20.", "School for the kids begins at 8:00.", 0.86
    )
    assert verdict.kind == "possible_update"
    assert (verdict.only_new, verdict.only_old) == (["8:20"], ["8:00"])
    assert "cosine 0.86" in verdict.reason()


def test_by_meaning_an_added_detail_of_another_kind_is_related() -> None:
    new = "The TLS certificate is issued by Let's Encrypt."
    old = "The TLS certificate expires on 2027-05-19."
    assert compare(new, old, cosine=0.86).kind == "related"


def test_by_meaning_another_ticket_stays_another_subject() -> None:
    new = "The known workaround for ticket SUP-8062 is clearing the browser cache."
    old = "The known workaround for ticket SUP-1475 is clearing the browser cache."
    assert compare(new, old, cosine=0.95).kind == "related"


def test_by_meaning_a_pair_the_model_finds_far_apart_is_only_related() -> None:
    new, old = "Disk alerts fire at 85% usage.", "Disk alerts fire at 90% usage."
    assert compare(new, old).kind == "possible_update"
    assert compare(new, old, cosine=0.7).kind == "possible_update"  # the words decide
    assert compare(new, old, cosine=0.5).kind == "related"  # under UNLIKE_MEANING


def test_by_meaning_a_fact_that_says_it_replaces_another_is_an_update() -> None:
    new = "We moved the monorepo CI off Jenkins; it now runs on GitHub Actions."
    old = "The CI pipeline for the monorepo runs on Jenkins."
    verdict = compare(new, old, cosine=0.84)
    assert verdict.kind == "possible_update"
    assert "by meaning" in verdict.reason()
    assert compare(new, old, cosine=0.5).kind != "possible_update"  # far apart: no
    both = "The CI pipeline for the monorepo now runs on Jenkins."
    assert compare(new, both, cosine=0.84).kind != "possible_update"  # both say "now"
    tickets = (
        "The workaround for ticket SUP-8062 is now clearing the cache.",
        "The workaround for ticket SUP-1475 is clearing the cache.",
    )
    assert compare(*tickets, cosine=0.9).kind == "related"  # another ticket all the same
