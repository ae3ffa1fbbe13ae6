"""Probes and the trial apply behave alike on both backends: saved, listed in the same
order, the same query twice is one probe, removed, each write in the feed; and a trial
apply sees the post-apply index and leaves the store exactly as it was."""

from __future__ import annotations

import pytest

from graymatter_tui.errors import NotFound
from graymatter_tui.store import ApplyRequest
from tests.conformance.conftest import AnyStore


def test_add_list_remove(any_store: AnyStore) -> None:
    first, created = any_store.add_probe("ops", "staging database restarts", 5)
    again, created_again = any_store.add_probe("ops", "staging database restarts", 5)
    second, _ = any_store.add_probe("ops", "deploy runbook")
    other, _ = any_store.add_probe("dev", "build cache")
    assert created and not created_again and again == first
    assert [p.id for p in any_store.probes("ops")] == [first.id, second.id]
    assert [p.id for p in any_store.probes()] == [other.id, first.id, second.id]
    assert any_store.remove_probe(first.id) == first
    with pytest.raises(NotFound):
        any_store.remove_probe(first.id)
    assert [e.action for e in any_store.activity()][:4] == ["probe"] * 4


def test_a_trial_apply_sees_the_applied_index_and_writes_nothing(any_store: AnyStore) -> None:
    facts = [any_store.put("ops", f"staging database note {n}") for n in range(3)]
    generation = any_store.generation()
    request = ApplyRequest(
        cycle_id="01JC0000000000000000000009",
        agent_id="ops",
        summary="Summary: staging database notes 0 and 1.",
        consume=[f.id for f in facts[:2]],
        snapshot={f.id: f.text for f in facts},
    )
    trial = any_store.trial_apply(
        request, lambda index: sorted(i for i, _, _ in index.iter_postings("ops", "stage"))
    )
    assert trial.applied, trial.reason
    assert trial.before == sorted(f.id for f in facts)
    assert set(trial.after) == {facts[2].id, trial.summary_id}
    assert any_store.generation() == generation
    assert sorted(f.id for f in any_store.list_facts("ops")) == sorted(f.id for f in facts)
