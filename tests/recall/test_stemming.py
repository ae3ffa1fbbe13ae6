"""Stemmed terms: prose words reduced to their Snowball stems in the store's language;
words of URLs, emails and identifiers, and tokens holding a digit or underscore, kept as
folded. Expected stems are Snowball's published English/German/Russian outputs."""

from __future__ import annotations

import threading

import pytest

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.tokens import Analyzer, check_language, languages, tokens

ENGLISH = Analyzer("english")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Payments go through Polar", ["payment", "go", "through", "polar"]),
        ("which payment provider?", ["payment", "provid"]),
        ("running runs ran", ["run", "run", "ran"]),
        ("Deploying DEPLOYED deploys", ["deploy", "deploy", "deploy"]),
    ],
)
def test_prose_is_stemmed(text: str, expected: list[str]) -> None:
    assert ENGLISH.terms(text) == expected


def test_inflections_meet() -> None:
    assert ENGLISH.terms("payments") == ENGLISH.terms("payment") == ENGLISH.terms("PAYMENT")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("INC-9418", ["inc", "9418"]),
        ("OPS-7 ops", ["ops", "7", "op"]),  # the ticket's prefix kept, the word stemmed
        ("see ticket#9981 tickets", ["see", "ticket", "9981", "ticket"]),
        ("release v2.3.1 releases", ["releas", "v2", "3", "1", "releas"]),
        ("builds build_2024 2024s", ["build", "build_2024", "2024s"]),
        ("payments-v2 payments", ["payments", "v2", "payment"]),
    ],
)
def test_identifiers_and_numbers_are_not_stemmed(text: str, expected: list[str]) -> None:
    assert ENGLISH.terms(text) == expected


def test_emails_and_urls_are_not_stemmed() -> None:
    text = "mail bob.smiths@example.com about https://docs.example.org/payments/refunds now"
    assert ENGLISH.terms(text) == [
        "mail",
        "bob",
        "smiths",
        "example",
        "com",
        "https",
        "docs",
        "example",
        "org",
        "payments",
        "refunds",
        "now",
    ]


def test_a_ticket_id_is_found_as_written() -> None:
    written = ENGLISH.terms("Outage INC-9418 closed")
    for query in ("INC-9418", "inc-9418", "ＩＮＣ－９４１８"):
        assert set(ENGLISH.terms(query)) <= set(written)


def test_folding_stays() -> None:
    assert ENGLISH.terms("Straße STRASSE") == ["strass", "strass"]
    assert ENGLISH.terms("Mu\u0308ller") == ENGLISH.terms("MÜLLER")
    assert ENGLISH.terms("ＰＡＹＭＥＮＴＳ") == ["payment"]


def test_stop_words_and_punctuation_give_no_terms() -> None:
    assert ENGLISH.terms("the of and which?! ... —") == []


def test_another_script_is_left_alone_by_english() -> None:
    assert ENGLISH.terms("Правила оплаты") == ["правила", "оплаты"]
    assert ENGLISH.terms("東京タワー") == ["東京タワー"]


def test_other_languages() -> None:
    assert Analyzer("russian").terms("Правила оплаты") == ["прав", "оплат"]
    assert Analyzer("german").terms("Zahlungen Zahlung") == ["zahlung", "zahlung"]


def test_none_is_folding_only() -> None:
    text = "Payments INC-9418 running"
    assert Analyzer("none").terms(text) == tokens(text) == ["payments", "inc", "9418", "running"]


def test_term_counts_count_stems() -> None:
    assert ENGLISH.term_counts("payment payments paid") == {"payment": 2, "paid": 1}


def test_language_names() -> None:
    assert check_language(" English ") == "english"
    assert check_language("none") == "none"
    assert "english" in languages() and "russian" in languages()
    with pytest.raises(InvalidInput, match="unknown stemming language 'klingon'"):
        check_language("klingon")


def test_threads_each_get_a_stemmer() -> None:
    words = " ".join(f"payments{n % 7 and ''} connections" for n in range(2000))
    expected = ENGLISH.terms(words)
    results: list[list[str]] = []

    def work() -> None:
        for _ in range(20):
            results.append(ENGLISH.terms(words))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 80 and all(r == expected for r in results)
