"""Curation by exact text (what an agent's memory_reflect names): every live match of
that agent, found through the index or, for a text with no keyword, by a scan; each
operation one transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from graymatter_tui.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "store")


def test_only_live_exact_matches_of_that_agent(store: Store) -> None:
    keep = store.put("a", "Port 5432 is staging")
    twin = store.put("a", "Port 5432 is staging")
    store.put("a", "Port 5432 is staging.")  # not exact
    store.put("b", "Port 5432 is staging")  # another agent
    gone = store.put("a", "Port 5432 is staging")
    store.retire(gone.id)
    replacement, tombs = store.supersede_text("a", "Port 5432 is staging", "Port 5433 is staging")
    assert sorted(t.id for t in tombs) == sorted([keep.id, twin.id])
    assert store.require(gone.id).superseded_by == "agent"  # the old tombstone untouched
    assert len(store.list_facts("b")) == 1
    assert replacement.is_live


def test_a_text_with_no_keyword_is_found_by_scan(store: Store) -> None:
    store.put("a", "it is what it is")  # stop-words only: nothing in the index
    assert len(store.retire_text("a", "it is what it is")) == 1
    assert store.list_facts("a") == []


def test_a_pin_moves_to_the_replacement(store: Store) -> None:
    old = store.put("a", "The VPN is required", pinned=True)
    replacement, [tomb] = store.supersede_text("a", old.text, "The VPN and MFA are required")
    assert replacement.pinned and not tomb.pinned


def test_refusals_change_nothing(store: Store) -> None:
    pinned = store.put("a", "same text", pinned=True)
    plain = store.put("a", "same text")
    with pytest.raises(Conflict, match="pinned"):
        store.retire_text("a", "same text")  # one of the two is pinned: neither goes
    with pytest.raises(NotFound, match="no live fact"):
        store.pin_text("a", "other text")
    with pytest.raises(InvalidInput):
        store.supersede_text("a", "same text", " ")
    assert store.require(pinned.id).is_live and store.require(plain.id).is_live
    assert len(store.list_facts("a")) == 2
