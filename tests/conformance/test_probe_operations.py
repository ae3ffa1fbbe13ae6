"""A trial apply behaves alike on both backends: it sees the post-apply index and leaves
the store exactly as it was; saving a probe says alike what it did. (Saving, listing and
removing probes runs on both backends in tests/store/test_probes.py.)"""

from __future__ import annotations

from graymatter_tui.storage import ApplyRequest
from tests.conformance.conftest import AnyStore


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


def test_saving_a_probe_says_whether_it_added_updated_or_left_it(any_store: AnyStore) -> None:
    added, outcome = any_store.save_probe("ops", "staging database", 5)
    assert outcome == "added" and added.k == 5
    generation = any_store.generation()
    same, outcome = any_store.save_probe("ops", "staging database", 5)
    assert (same, outcome) == (added, "unchanged")
    assert any_store.generation() == generation  # nothing written
    updated, outcome = any_store.save_probe("ops", "staging database", 12)
    assert outcome == "updated" and updated.id == added.id and updated.k == 12
    assert any_store.probes("ops") == [updated]
    again, created = any_store.add_probe("ops", "staging database", 7)  # the older surface
    assert created is False and again.k == 7
