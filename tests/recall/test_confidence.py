"""Confidence (upstream's ADR-016) on both backends: the label a fact is written with,
recall's `min_confidence` and `confidence_weight` (off by default: the ranking and the
explain keys exactly as without them), how a fact with no label ranks, and the
conservative label of a revision."""

from __future__ import annotations

import pytest

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.recall.explain_fields import signal_fields, signal_summary
from graymatter_tui.recall.ranking import Hit, rank
from graymatter_tui.recall.vector_signal import NO_VECTORS
from tests.recall.helpers import AGENT, FIXED
from tests.support.backends import AnyStore

# One query matching all four alike (the same keyword score), so only the confidence
# factor and the tie-break (older first) order them.
QUERY = "deploy window"
TEXTS = {
    None: "The deploy window opens Monday",
    "unverified": "The deploy window opens Tuesday",
    "inferred": "The deploy window opens Wednesday",
    "verified": "The deploy window opens Thursday",
}


def _seed(store: AnyStore) -> dict[str | None, str]:
    """label -> fact id, written oldest first in TEXTS' order."""
    return {
        label: store.put(AGENT, text, confidence=label).id  # type: ignore[arg-type]
        for label, text in TEXTS.items()
    }


def _order(hits: list[Hit]) -> list[str | None]:
    return [hit.fact.confidence for hit in hits]


def test_a_label_is_stored_and_read_back_and_no_label_is_none(any_store: AnyStore) -> None:
    ids = _seed(any_store)
    for label, fact_id in ids.items():
        assert any_store.require(fact_id).confidence == label


def test_off_by_default_the_ranking_and_explain_keys_are_as_without_confidence(
    any_store: AnyStore,
) -> None:
    _seed(any_store)
    plain = rank(any_store, AGENT, QUERY, vectors=NO_VECTORS)
    # The tie-break alone: oldest first, labels play no part.
    assert _order(plain) == list(TEXTS)
    assert all(hit.confidence_factor is None for hit in plain)
    assert all(h.score == h.vector_part + h.keyword_part + h.recency_part for h in plain)
    fields = signal_fields(plain[0], FIXED)
    assert "confidence" not in fields and "confidence_factor" not in fields
    assert "×" not in signal_summary(fields)
    explicit = rank(
        any_store, AGENT, QUERY, vectors=NO_VECTORS, min_confidence=None, confidence_weight=0.0
    )
    assert explicit == plain


def test_the_weight_lifts_verified_and_lowers_unverified_and_leaves_unknown_alone(
    any_store: AnyStore,
) -> None:
    _seed(any_store)
    hits = rank(any_store, AGENT, QUERY, vectors=NO_VECTORS, confidence_weight=0.25)
    assert _order(hits) == ["verified", None, "inferred", "unverified"]
    factors = {hit.fact.confidence: hit.confidence_factor for hit in hits}
    assert factors == {"verified": 1.25, None: 1.0, "inferred": 1.0, "unverified": 0.75}
    for hit in hits:
        fused = hit.vector_part + hit.keyword_part + hit.recency_part
        assert hit.score == pytest.approx(fused * factors[hit.fact.confidence])
    top = signal_fields(hits[0], FIXED)
    assert top["confidence"] == "verified" and top["confidence_factor"] == 1.25
    assert signal_summary(top).endswith("× confidence 1.2500 (verified)")
    unknown = signal_fields(hits[1], FIXED)
    assert unknown["confidence"] is None
    assert signal_summary(unknown).endswith("× confidence 1.0000 (unknown)")


def test_the_weight_can_lift_a_weaker_match_over_a_stronger_one(any_store: AnyStore) -> None:
    weak = any_store.put(AGENT, "The deploy window is long", confidence="verified")
    strong = any_store.put(AGENT, "The deploy window deploy window is short")
    plain = rank(any_store, AGENT, QUERY, vectors=NO_VECTORS)
    assert [h.fact.id for h in plain] == [strong.id, weak.id]
    ratio = plain[1].score / plain[0].score
    assert 1 / 1.5 < ratio < 1  # within what a weight of 0.5 can lift
    lifted = rank(any_store, AGENT, QUERY, vectors=NO_VECTORS, confidence_weight=0.5)
    assert [h.fact.id for h in lifted] == [weak.id, strong.id]
    # k = 1 finds the same winner: the early stop allows for the lift.
    first = rank(any_store, AGENT, QUERY, k=1, vectors=NO_VECTORS, confidence_weight=0.5)
    assert [h.fact.id for h in first] == [weak.id]


@pytest.mark.parametrize(
    ("minimum", "kept"),
    [
        ("verified", {"verified"}),
        ("inferred", {"verified", "inferred"}),
        ("unverified", {"verified", "inferred", "unverified", None}),
    ],
)
def test_min_confidence_keeps_facts_at_least_that_sure_and_unknown_only_at_the_floor(
    any_store: AnyStore, minimum: str, kept: set[str | None]
) -> None:
    _seed(any_store)
    hits = rank(any_store, AGENT, QUERY, vectors=NO_VECTORS, min_confidence=minimum)  # type: ignore[arg-type]
    assert set(_order(hits)) == kept
    assert all(hit.confidence_factor == 1.0 for hit in hits)


def test_min_confidence_still_fills_k_from_facts_past_the_first_k(any_store: AnyStore) -> None:
    for i in range(6):
        any_store.put(AGENT, f"The deploy window deploy window note {i}")
    sure = any_store.put(AGENT, "The deploy window note sure", confidence="verified")
    hits = rank(any_store, AGENT, QUERY, k=2, vectors=NO_VECTORS, min_confidence="verified")
    assert [h.fact.id for h in hits] == [sure.id]


def test_a_twin_below_the_minimum_does_not_hide_its_text(any_store: AnyStore) -> None:
    any_store.put(AGENT, "The deploy window is at noon")
    sure = any_store.put(AGENT, "The deploy window is at noon", confidence="verified")
    hits = rank(any_store, AGENT, QUERY, vectors=NO_VECTORS, min_confidence="verified")
    assert [h.fact.id for h in hits] == [sure.id]


@pytest.mark.parametrize(
    "options",
    [
        {"min_confidence": "sure"},
        {"confidence_weight": 0.51},
        {"confidence_weight": -0.1},
        {"confidence_weight": float("nan")},
    ],
)
def test_bad_confidence_options_are_refused(
    any_store: AnyStore, options: dict[str, object]
) -> None:
    _seed(any_store)
    with pytest.raises(InvalidInput):
        rank(any_store, AGENT, QUERY, vectors=NO_VECTORS, **options)  # type: ignore[arg-type]


def test_a_revision_keeps_the_old_label_unless_given_one(any_store: AnyStore) -> None:
    old = any_store.put(AGENT, "The deploy window opens at 9", confidence="verified")
    kept, _ = any_store.revise(old.id, "The deploy window opens at 10")
    assert kept.confidence == "verified"
    given, _ = any_store.revise(kept.id, "The deploy window opens at 11", confidence="unverified")
    assert given.confidence == "unverified"
    unknown = any_store.put(AGENT, "The deploy window closes at 5")
    still, _ = any_store.revise(unknown.id, "The deploy window closes at 6")
    assert still.confidence is None


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["verified", "inferred"], "inferred"),
        (["verified", "verified"], "verified"),
        (["verified", "unverified", "inferred"], "unverified"),
        (["verified", None], None),
    ],
)
def test_an_update_takes_the_lowest_confidence_among_the_facts_it_replaces(
    any_store: AnyStore, labels: list[str | None], expected: str | None
) -> None:
    target = "The deploy window opens at 9"
    for label in labels:
        any_store.put(AGENT, target, confidence=label)  # type: ignore[arg-type]
    replacement, tombs = any_store.supersede_text(AGENT, target, "The deploy window opens at 8")
    assert len(tombs) == len(labels)
    assert replacement.confidence == expected
    assert any_store.require(replacement.id).confidence == expected


def test_an_update_given_a_label_takes_it(any_store: AnyStore) -> None:
    target = "The deploy window opens at 9"
    any_store.put(AGENT, target, confidence="unverified")
    replacement, _ = any_store.supersede_text(
        AGENT, target, "The deploy window opens at 8", confidence="verified"
    )
    assert replacement.confidence == "verified"


def test_confidences_lists_the_labelled_live_facts_only(any_store: AnyStore) -> None:
    ids = _seed(any_store)
    old = any_store.put(AGENT, "The deploy window opened at 8", confidence="verified")
    any_store.revise(old.id, "The deploy window opens at 8", confidence="inferred")
    found = any_store.confidences(AGENT)
    assert found == {
        ids["unverified"]: "unverified",
        ids["inferred"]: "inferred",
        ids["verified"]: "verified",
        **{f.id: "inferred" for f in any_store.list_facts(AGENT) if f.text.endswith("at 8")},
    }
    assert old.id not in found and ids[None] not in found
    assert any_store.confidences(AGENT, "tombstones") == {old.id: "verified"}
