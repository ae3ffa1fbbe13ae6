"""The coverage guard: a fact may be consumed only if its key details survive in the
summary. One section per kind of detail, then the modes and the verdicts."""

from __future__ import annotations

import pytest

from graymatter_tui.consolidation.guard import check
from graymatter_tui.core.details import key_details


def consumed(text: str, summary: str, mode: str = "keys") -> bool:
    return check("F", text, summary, mode).consumed


def missing(text: str, summary: str, mode: str = "keys") -> list[str]:
    return check("F", text, summary, mode).missing


# ---------------------------------------------------------------- identifiers


def test_identifiers_are_details() -> None:
    assert key_details("Ticket SUP-1234 and run EXP-12 were merged") == ["SUP-1234", "EXP-12"]


@pytest.mark.parametrize(
    "summary",
    ["SUP-1234 and EXP-12 merged", "sup-1234, exp-12", "Merged (EXP-12; SUP-1234)."],
)
def test_identifiers_present_in_any_case_or_order(summary: str) -> None:
    assert consumed("Ticket SUP-1234 and run EXP-12 were merged", summary)


@pytest.mark.parametrize(
    ("summary", "lost"),
    [
        ("ticket SUP-1234 merged", ["EXP-12"]),
        ("run EXP-12 merged", ["SUP-1234"]),
        ("SUP-12345 and EXP-123 merged", ["SUP-1234", "EXP-12"]),  # a longer id is another id
        ("SUP-1235 and EXP-12", ["SUP-1234"]),
        ("two tickets were merged", ["SUP-1234", "EXP-12"]),
    ],
)
def test_missing_identifiers_are_reported(summary: str, lost: list[str]) -> None:
    verdict = check("F", "Ticket SUP-1234 and run EXP-12 were merged", summary, "keys")
    assert not verdict.consumed
    assert verdict.id == "F"
    assert verdict.missing == lost


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize("written", ["5,432", "5432", "5 432", "5.432", "5\u00a0432"])
def test_number_detail_is_found(written: str) -> None:
    assert key_details(f"We invoiced {written} dollars") == [written]


@pytest.mark.parametrize("fact", ["5,432", "5432", "5 432"])
@pytest.mark.parametrize("summary", ["5,432", "5432", "5 432"])
def test_a_number_written_any_way_is_present(fact: str, summary: str) -> None:
    assert consumed(f"Revenue was {fact} dollars in March", f"March revenue: {summary} dollars")


@pytest.mark.parametrize("summary", ["5433", "5,433", "543", "54", "5,4320", "revenue grew"])
def test_a_different_number_is_missing(summary: str) -> None:
    assert missing("Revenue was 5,432 dollars", f"Revenue {summary}") == ["5,432"]


def test_decimals_match_across_comma_and_point() -> None:
    assert consumed("Version 3.5 shipped", "shipped version 3,5")
    assert not consumed("Version 3.5 shipped", "shipped version 3.6")
    assert not consumed("Version 3.5 shipped", "shipped version 35")


def test_scientific_notation_is_a_detail() -> None:
    assert key_details("learning rate 3e-4 worked") == ["3e-4"]
    assert consumed("learning rate 3e-4 worked", "lr 3e-4")
    assert not consumed("learning rate 3e-4 worked", "lr 3e-5")


# ---------------------------------------------------------------- dates and clock times


def test_dates_and_times_are_details() -> None:
    assert key_details("Launch on 2027-03-13 at 02:30") == ["2027-03-13", "02:30"]


@pytest.mark.parametrize(
    ("summary", "lost"),
    [
        ("launch 2027-03-13 02:30", []),
        ("launch on 2027-03-14 at 02:30", ["2027-03-13"]),
        ("launch on 2027-03-13 at 02:31", ["02:30"]),
        ("launch on 2027-03-13 at 14:30", ["02:30"]),
        ("launch in March", ["2027-03-13", "02:30"]),
    ],
)
def test_dates_and_times_must_survive(summary: str, lost: list[str]) -> None:
    assert missing("Launch on 2027-03-13 at 02:30", summary) == lost


def test_date_with_time_is_one_detail() -> None:
    assert key_details("deployed 2027-03-13T02:30:00 by cron") == ["2027-03-13T02:30:00"]


# ---------------------------------------------------------------- URLs and emails


def test_urls_and_emails_are_details() -> None:
    text = "SSO guide: https://docs.example.com/sso?v=2, questions to maria@example.org"
    assert key_details(text) == ["https://docs.example.com/sso?v=2", "maria@example.org"]


def test_trailing_punctuation_is_not_part_of_a_url() -> None:
    assert key_details("See https://example.com/guide.") == ["https://example.com/guide"]
    assert consumed("See https://example.com/guide.", "guide at https://example.com/guide")


@pytest.mark.parametrize(
    ("summary", "lost"),
    [
        ("guide https://example.com/a/b, mail bob@example.org", []),
        ("guide https://example.com/a, mail bob@example.org", ["https://example.com/a/b"]),
        ("guide https://example.com/a/b, mail bob@example.com", ["bob@example.org"]),
        ("guide https://example.com/a/b, mail bob", ["bob@example.org"]),
    ],
)
def test_urls_and_emails_must_survive(summary: str, lost: list[str]) -> None:
    assert missing("Guide at https://example.com/a/b; mail bob@example.org", summary) == lost


# ---------------------------------------------------------------- proper names


def test_multi_word_names_are_details() -> None:
    assert key_details("Billing is owned by Maria Lopez and Dev Patel") == [
        "Maria Lopez",
        "Dev Patel",
    ]


@pytest.mark.parametrize(
    "text", ["The billing team owns invoices", "The cat sat.", "This is fine", "We moved on."]
)
def test_sentence_initial_function_word_is_not_a_detail(text: str) -> None:
    assert key_details(text) == []
    assert consumed(text, "nothing in common at all")


def test_the_before_a_name_is_dropped() -> None:
    assert key_details("The Acme Corp renewal is due") == ["Acme Corp"]


def test_names_must_survive_whole() -> None:
    assert consumed("Billing is owned by Maria Lopez", "maria lopez owns billing")
    assert missing("Billing is owned by Maria Lopez", "Lopez owns billing") == ["Maria Lopez"]
    assert missing("Billing is owned by Maria Lopez", "Maria owns billing") == ["Maria Lopez"]


def test_lower_case_text_has_no_name_details() -> None:
    assert key_details("the garden needs water every morning") == []


# ---------------------------------------------------------------- non-English text


def test_spanish_names_numbers_and_dates() -> None:
    text = "El cliente Juan Pérez pagó 3,5 millones el 2027-03-13 en Madrid."
    assert key_details(text) == ["2027-03-13", "3,5", "Juan Pérez", "Madrid"]
    assert consumed(text, "Juan Pérez (Madrid) pagó 3.5 millones el 2027-03-13.")
    assert missing(text, "Juan Pérez pagó 3,5 millones el 2027-03-13.") == ["Madrid"]
    assert missing(text, "Juan Pérez pagó en Madrid el 2027-03-13.") == ["3,5"]


def test_spanish_accents_are_significant_but_case_is_not() -> None:
    text = "La reunión con Ana García es a las 14:30 en Barcelona."
    assert consumed(text, "ANA GARCÍA, 14:30, BARCELONA")
    assert missing(text, "Ana Garcia, 14:30, Barcelona") == ["Ana García"]


def test_german_names_and_numbers() -> None:
    text = "Der Vertrag mit Siemens AG läuft bis 2027-12-31 und kostet 12.500 Euro."
    details = key_details(text)
    assert "Der" not in " ".join(details)
    assert {"2027-12-31", "12.500", "Siemens AG"} <= set(details)
    assert consumed(text, "Vertrag mit Siemens AG: bis 2027-12-31, 12500 Euro.")
    lost = missing(text, "Vertrag mit Siemens AG bis 2027-12-31, 12600 Euro.")
    assert lost == ["12.500"]


# ---------------------------------------------------------------- modes and verdicts


TEXT = "Maria Lopez approved refund SUP-1234 for 5,432 dollars on 2027-03-13"


def test_mode_off_consumes_anything() -> None:
    verdict = check("F", TEXT, "something unrelated", "off")
    assert verdict.consumed
    assert verdict.missing == []


def test_mode_keys_reports_every_missing_detail() -> None:
    verdict = check("F", TEXT, "a refund was approved", "keys")
    assert not verdict.consumed
    assert verdict.missing == ["2027-03-13", "SUP-1234", "5,432", "Maria Lopez"]


def test_mode_keys_ignores_plain_words() -> None:
    assert consumed(TEXT, "SUP-1234: Maria Lopez, 5432, 2027-03-13")


def test_mode_strict_also_wants_most_content_words() -> None:
    terse = "SUP-1234: Maria Lopez, 5432, 2027-03-13"
    verdict = check("F", TEXT, terse, "strict")
    assert not verdict.consumed
    assert "word 'approved'" in verdict.missing
    assert "word 'refund'" in verdict.missing
    full = "Maria Lopez approved the refund SUP-1234 of 5432 dollars on 2027-03-13"
    assert check("F", TEXT, full, "strict").consumed


def test_mode_strict_tolerates_a_few_missing_words() -> None:
    text = "gardeners water tomatoes peppers cucumbers carrots onions beans daily"
    # nine content words; one absent (11%) is within the 20% allowance, three are not
    assert consumed(
        text, "gardeners water tomatoes peppers cucumbers carrots onions beans", "strict"
    )
    assert not consumed(text, "gardeners water tomatoes peppers cucumbers carrots", "strict")


def test_strict_on_text_without_content_words() -> None:
    assert consumed("it is so", "nothing", "strict")


def test_verdict_for_a_fact_without_details() -> None:
    verdict = check("F", "the garden needs water", "plants", "keys")
    assert verdict.consumed
    assert verdict.missing == []


def test_details_are_deduplicated() -> None:
    assert key_details("SUP-1234 again sup-1234 and 5432 and 5,432") == ["SUP-1234", "5432"]


# ---------------------------------------------------------------- regressions (bugs fixed)


@pytest.mark.parametrize(
    ("fact", "summary"),
    [
        ("The refund was 1234 dollars", "Refund processed for ticket SUP-1234"),
        ("We run 13 servers", "Servers were reviewed on 2027-03-13"),
        ("Refund of 12 dollars approved", "Refund approved in run EXP-12"),
    ],
)
def test_number_inside_an_identifier_or_date_is_not_the_number(fact: str, summary: str) -> None:
    assert not consumed(fact, summary)


@pytest.mark.parametrize(
    "text",
    ["Yesterday Maria Lopez approved the refund.", "Call Maria Lopez about the refund."],
)
def test_sentence_initial_word_is_not_part_of_a_name(text: str) -> None:
    assert "Maria Lopez" in key_details(text)
    assert consumed(text, "Maria Lopez and the refund.")


def test_url_at_the_end_of_a_sentence_keeps_the_boundary() -> None:
    text = "The runbook is at https://wiki.example.com/runbook. Check it first."
    assert key_details(text) == ["https://wiki.example.com/runbook"]
    assert consumed(text, "The runbook is at https://wiki.example.com/runbook")
