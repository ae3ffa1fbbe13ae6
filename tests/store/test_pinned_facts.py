"""`pinned_facts`: an agent's live pinned facts, newest first, read without decoding every
fact (a hook reads them at every session start). On both backends."""

from __future__ import annotations

from tests.support.backends import AnyStore


def test_pinned_facts_are_the_live_pinned_ones_of_the_agent_newest_first(
    any_store: AnyStore,
) -> None:
    assert any_store.pinned_facts("ops") == []
    first = any_store.put("ops", "first pinned", pinned=True)
    any_store.put("ops", "not pinned")
    second = any_store.put("ops", "second pinned", pinned=True)
    unpinned = any_store.put("ops", "pinned, then unpinned", pinned=True)
    any_store.unpin(unpinned.id)
    revised = any_store.put("ops", "pinned, then revised", pinned=True)
    replacement, _ = any_store.revise(revised.id, "pinned and revised")
    any_store.put("other", "another agent's pin", pinned=True)
    texts = [f.text for f in any_store.pinned_facts("ops")]
    assert texts == ["pinned and revised", "second pinned", "first pinned"]
    assert [f.id for f in any_store.pinned_facts("ops", limit=2)] == [replacement.id, second.id]
    assert all(f.pinned and f.is_live for f in any_store.pinned_facts("ops"))
    assert first.id in {f.id for f in any_store.pinned_facts("ops")}
