"""The dates a recall query names (`recall.dates`), and the date prior they give recall:
a fact written on a named date gains D (ADR 0069); a query naming none ranks as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall.dates import NamedDate, named_dates, written_on
from graymatter_tui.recall.explain_fields import signal_fields, signal_summary
from graymatter_tui.recall.ranking import DEFAULT_DATE, RecallWeights, rank
from graymatter_tui.storage import NewFact
from tests.recall.helpers import AGENT, FIXED, reference_rank


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the outage of 2026-11-30", [NamedDate(2026, 11, 30)]),
        ("shown on October 13, 2023?", [NamedDate(2023, 10, 13)]),
        ("found on 1 February, 2023", [NamedDate(2023, 2, 1)]),
        ("on the 3rd of June", [NamedDate(None, 6, 3)]),
        ("Sept 5th standup", [NamedDate(None, 9, 5)]),
        ("Jun 3 deploy", [NamedDate(None, 6, 3)]),
        ("what changed in December 2023", [NamedDate(2023, 12)]),
        ("camping in June", [NamedDate(None, 6)]),
        ("since March", [NamedDate(None, 3)]),
        ("the beach in 2023", [NamedDate(2023)]),
        ("in May 2023 and in June 2024", [NamedDate(2023, 5), NamedDate(2024, 6)]),
        ("June 3 and again June 3", [NamedDate(None, 6, 3)]),  # once each
        ("before April 10, 2023", [NamedDate(2023, 4, 10)]),  # no ranges: the day itself
        ("IN JULY", [NamedDate(None, 7)]),
    ],
)
def test_dates_a_query_names(query: str, expected: list[NamedDate]) -> None:
    assert list(named_dates(query)) == expected


@pytest.mark.parametrize(
    "query",
    [
        "may I ask who owns billing",  # a verb, not a month
        "what did we march for",
        "a decision we may revisit",
        "February 30, 2023",  # no such day
        "2023-13-01",
        "port 2023 on the gateway",  # a number, not a year in time
        "the june release",  # a month with nothing placing it
        "in 1850",  # outside the years memory holds
        "",
        "🙂🙂🙂",
        "показать в июне",  # other languages are not read
    ],
)
def test_what_names_no_date(query: str) -> None:
    assert named_dates(query) == ()


def test_written_on_holds_each_part_named() -> None:
    moment = datetime(2023, 6, 3, 23, 59, tzinfo=UTC)
    assert written_on(moment, (NamedDate(None, 6),))
    assert written_on(moment, (NamedDate(2023, 6, 3),))
    assert written_on(
        moment,
        (
            NamedDate(2022, 6),
            NamedDate(2023),
        ),
    )
    assert not written_on(moment, (NamedDate(2023, 6, 4),))
    assert not written_on(moment + timedelta(minutes=1), (NamedDate(2023, 6, 3),))
    assert not written_on(moment, ())


def test_a_long_query_full_of_dates_is_read_once_each() -> None:
    found = named_dates("in June 2023 " * 300)
    assert found == (NamedDate(2023, 6),)


# ---- the prior in recall ---------------------------------------------------------------

JUNE = datetime(2023, 6, 3, 12, tzinfo=UTC)
MARCH = datetime(2023, 3, 9, 12, tzinfo=UTC)


def _seed(gm: LmdbStore) -> dict[str, str]:
    """Two facts with the same words, the older written in March, the newer in June."""
    made = gm.put_many(
        [
            NewFact(AGENT, "Maria donated books to the shelter.", created_at=MARCH),
            NewFact(AGENT, "Maria donated coats to the shelter.", created_at=JUNE),
            NewFact(AGENT, "The garden needs water.", created_at=JUNE),
        ]
    )
    return {"march": made[0].id, "june": made[1].id, "garden": made[2].id}


def test_a_fact_written_on_the_named_date_ranks_first(gm: LmdbStore) -> None:
    made = _seed(gm)
    # Without a date, the tie goes to the older fact.
    assert [h.fact.id for h in rank(gm, AGENT, "what did Maria donate")][:2] == [
        made["march"],
        made["june"],
    ]
    hits = rank(gm, AGENT, "what did Maria donate in June")
    assert [h.fact.id for h in hits] == [made["june"], made["march"]]
    june, march = hits
    assert (june.dates_named, june.written_on_named_date) == (True, True)
    assert june.date_part == DEFAULT_DATE > 0
    assert (march.written_on_named_date, march.date_part) == (False, 0.0)
    assert june.score == pytest.approx(june.keyword_part + june.date_part)
    assert march.score == pytest.approx(june.score - DEFAULT_DATE)
    # The prior only lifts what a signal found: the garden fact of June is not recalled.
    assert made["garden"] not in {h.fact.id for h in hits}


def test_a_zero_date_weight_ranks_as_if_no_date_were_named(gm: LmdbStore) -> None:
    made = _seed(gm)
    off = RecallWeights(date=0.0)
    hits = rank(gm, AGENT, "what did Maria donate on 3 June 2023", weights=off)
    assert [h.fact.id for h in hits] == [made["march"], made["june"]]
    assert all(h.date_part == 0.0 for h in hits)


def test_the_day_named_must_be_the_day_written(gm: LmdbStore) -> None:
    made = _seed(gm)
    hits = rank(gm, AGENT, "what did Maria donate on June 4, 2023")
    assert [h.fact.id for h in hits] == [made["march"], made["june"]]
    assert all(h.dates_named and not h.written_on_named_date for h in hits)


def test_the_reference_ranking_agrees_with_dates(gm: LmdbStore) -> None:
    _seed(gm)
    for query in ("Maria donated in June", "Maria shelter 2023-03-09", "Maria in 2023"):
        expected = reference_rank(gm.list_facts(AGENT), query)
        assert [(h.fact.id, pytest.approx(h.score)) for h in rank(gm, AGENT, query)] == expected


def test_explain_says_what_the_date_gave(gm: LmdbStore) -> None:
    _seed(gm)
    june, march = rank(gm, AGENT, "Maria donated in June")
    fields = signal_fields(june, FIXED)
    assert (fields["date_match"], fields["date_part"]) == (True, DEFAULT_DATE)
    summary = signal_summary(fields)
    assert summary.endswith(f"+ date {DEFAULT_DATE:.4f} (written on a date the query names)")
    other = signal_fields(march, FIXED)
    assert (other["date_match"], other["date_part"]) == (False, 0.0)
    assert "not written on a date the query names" in signal_summary(other)
    (plain, *_rest) = rank(gm, AGENT, "Maria donated")
    plain_fields = signal_fields(plain, FIXED)
    assert plain_fields["date_match"] is None
    assert "date" not in signal_summary(plain_fields)
