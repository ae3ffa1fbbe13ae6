"""The sentence splitter behind per-sentence vectors (ADR 0038)."""

from __future__ import annotations

from graymatter_tui.core.config import DEFAULT_MAX_BATCH
from graymatter_tui.embedding.sentences import MAX_PIECES, sentences
from graymatter_tui.storage.vector_rank import ROWS_PER_FACT


def test_one_sentence_is_the_whole_text() -> None:
    assert sentences("Payments go through Polar.") == ["Payments go through Polar."]
    assert sentences("no end mark at all") == ["no end mark at all"]


def test_splits_on_sentence_ends_and_newlines() -> None:
    text = "Deploys happen on Friday. Is that wise? Yes!\nThe vault code is 1234"
    assert sentences(text) == [
        "Deploys happen on Friday.",
        "Is that wise?",
        "Yes!",
        "The vault code is 1234",
    ]


def test_drops_empty_pieces() -> None:
    assert sentences("First.  \n\n\n  Second.\n") == ["First.", "Second."]


def test_decimals_and_hosts_are_not_split_mid_token() -> None:
    text = "Latency is 5.4 ms at example.com today. See v1.2.3 notes."
    assert sentences(text) == ["Latency is 5.4 ms at example.com today.", "See v1.2.3 notes."]


def test_caps_pieces_joining_the_rest_into_the_last() -> None:
    total = MAX_PIECES + 4
    text = " ".join(f"Sentence {n}." for n in range(total))
    pieces = sentences(text)
    assert len(pieces) == MAX_PIECES
    assert pieces[: MAX_PIECES - 1] == [f"Sentence {n}." for n in range(MAX_PIECES - 1)]
    assert pieces[-1] == " ".join(f"Sentence {n}." for n in range(MAX_PIECES - 1, total))


def test_a_full_consolidation_batch_keeps_a_piece_per_fact() -> None:
    # A summary of a default batch holds one sentence per consumed fact (ADR 0038).
    assert MAX_PIECES >= DEFAULT_MAX_BATCH


def test_the_search_takes_enough_rows_for_the_most_pieces_a_fact_has() -> None:
    assert ROWS_PER_FACT == MAX_PIECES


def test_blank_text_is_one_piece() -> None:
    assert sentences("   ") == ["   "]
