"""Curation by exact text (what an agent's memory_reflect names): every live match of
that agent, found through the index or, for a text with no keyword, by a scan; each
operation one transaction."""

from __future__ import annotations

import pytest

from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from tests.support.backends import AnyStore


def test_only_live_exact_matches_of_that_agent(any_store: AnyStore) -> None:
    keep = any_store.put("a", "Port 5432 is staging")
    twin = any_store.put("a", "Port 5432 is staging")
    any_store.put("a", "Port 5432 is staging.")  # not exact
    any_store.put("b", "Port 5432 is staging")  # another agent
    gone = any_store.put("a", "Port 5432 is staging")
    any_store.retire(gone.id)
    replacement, tombs = any_store.supersede_text(
        "a", "Port 5432 is staging", "Port 5433 is staging"
    )
    assert sorted(t.id for t in tombs) == sorted([keep.id, twin.id])
    assert any_store.require(gone.id).superseded_by == "agent"  # the old tombstone untouched
    assert len(any_store.list_facts("b")) == 1
    assert replacement.is_live


def test_a_text_with_no_keyword_is_found_by_scan(any_store: AnyStore) -> None:
    any_store.put("a", "it is what it is")  # stop-words only: nothing in the index
    assert len(any_store.retire_text("a", "it is what it is")) == 1
    assert any_store.list_facts("a") == []


def test_a_pin_moves_to_the_replacement(any_store: AnyStore) -> None:
    old = any_store.put("a", "The VPN is required", pinned=True)
    replacement, [tomb] = any_store.supersede_text("a", old.text, "The VPN and MFA are required")
    assert replacement.pinned and not tomb.pinned


def test_refusals_change_nothing(any_store: AnyStore) -> None:
    pinned = any_store.put("a", "same text", pinned=True)
    plain = any_store.put("a", "same text")
    with pytest.raises(Conflict, match="pinned"):
        any_store.retire_text("a", "same text")  # one of the two is pinned: neither goes
    with pytest.raises(NotFound, match="no live fact"):
        any_store.pin_text("a", "other text")
    with pytest.raises(InvalidInput):
        any_store.supersede_text("a", "same text", " ")
    assert any_store.require(pinned.id).is_live and any_store.require(plain.id).is_live
    assert len(any_store.list_facts("a")) == 2
