"""Recall over a stemming store (the default, English): an inflected query finds what a
fact says in another inflection; identifiers are found as written and never conflated
with a stemmed word; a query of only stop-words, punctuation, or another script gets an
empty, well-formed answer (through the real CLI too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall.ranking import rank
from graymatter_tui.storage import NewFact
from tests.recall.helpers import AGENT, texts
from tests.recall.test_recall_cli import run

FILLER = [f"routine call log {n} with no payment details" for n in range(1, 9)]
POLAR = "Payments go through Polar since March"


def test_an_inflected_query_finds_the_fact(gm: LmdbStore) -> None:
    # The case: `payment` never matched `payments`, and eight routine logs that
    # said `payment` outranked the one fact that answers the question.
    gm.put_many(NewFact(AGENT, text) for text in [POLAR, *FILLER])
    assert texts(rank(gm, AGENT, "which payment provider do we use?"))[0] == POLAR
    assert texts(rank(gm, AGENT, "payments provider"))[0] == POLAR
    assert texts(rank(gm, AGENT, "Polar's payment", k=1)) == [POLAR]


def test_inflections_of_every_kind_meet(gm: LmdbStore) -> None:
    gm.put_many(
        NewFact(AGENT, text)
        for text in [
            "The nightly backup failed twice on the replica.",
            "Deploying to staging requires approval.",
            "She connected the routers to the core switch.",
        ]
    )
    assert texts(rank(gm, AGENT, "backups failing", k=1)) == [
        "The nightly backup failed twice on the replica."
    ]
    assert texts(rank(gm, AGENT, "deployment approvals", k=1)) == [
        "Deploying to staging requires approval."
    ]
    assert texts(rank(gm, AGENT, "router connection", k=1)) == [
        "She connected the routers to the core switch."
    ]


def test_a_ticket_id_is_found_as_written(gm: LmdbStore) -> None:
    ticket = "Outage INC-9418: the payments API returned 502 for an hour."
    noise = [f"Incident review notes, part {n}: nothing was closed." for n in range(12)]
    gm.put_many(NewFact(AGENT, text) for text in [ticket, *noise])
    for query in ("INC-9418", "inc-9418", "ＩＮＣ－９４１８", "what was INC-9418?"):
        assert texts(rank(gm, AGENT, query))[0] == ticket, query
    # The words of the ticket id are not stemmed: "inc" never meets "incident" ("incid").
    assert texts(rank(gm, AGENT, "INC")) == [ticket]


def test_emails_and_urls_are_found_as_written(gm: LmdbStore) -> None:
    mail = "Refund requests go to billing.ops@example.com"
    link = "The runbook is at https://wiki.example.org/payments/refunds"
    gm.put_many(NewFact(AGENT, text) for text in [mail, link, "Refunds take a week."])
    assert texts(rank(gm, AGENT, "billing.ops@example.com"))[0] == mail
    assert texts(rank(gm, AGENT, "https://wiki.example.org/payments/refunds"))[0] == link


@pytest.mark.parametrize(
    "query",
    ["the of and", "?!... — ;;", "which is the", "Какой платёжный провайдер?", "東京タワー"],
)
def test_stop_words_punctuation_and_other_scripts_find_nothing(gm: LmdbStore, query: str) -> None:
    gm.put_many(NewFact(AGENT, text) for text in [POLAR, *FILLER])
    assert rank(gm, AGENT, query) == []


def test_the_cli_answers_such_queries_with_an_empty_list(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        store.put_many(NewFact(AGENT, text) for text in [POLAR, *FILLER])
    for query in ("the of and", "?!...", "Какой платёжный провайдер?"):
        done = run(tmp_path / "s", "recall", AGENT, query, "--json")
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "[]", ""), query
        done = run(tmp_path / "s", "recall", AGENT, query)
        assert (done.returncode, done.stdout.strip()) == (0, "no matching facts"), query
    done = run(tmp_path / "s", "recall", AGENT, "payments provider", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)[0]["text"] == POLAR
