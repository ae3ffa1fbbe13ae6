"""`in_one_snapshot`: every read of the view comes from one snapshot while another
writer commits, the view refuses writes, and closing the view leaves the store open."""

from __future__ import annotations

import threading

import pytest

from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core.errors import ReadOnlyStore
from graymatter_tui.storage import MemoryStore
from tests.conformance.conftest import AnyStore


def test_the_view_reads_one_state_while_another_writer_commits(any_store: AnyStore) -> None:
    any_store.put("a", "before the snapshot")
    seen: dict[str, object] = {}

    def check(view: MemoryStore) -> None:
        seen["first"] = [f.text for f in view.all_facts()]
        writer = threading.Thread(target=lambda: any_store.put("a", "written meanwhile"))
        writer.start()
        writer.join()
        seen["second"] = [f.text for f in view.all_facts()]
        seen["agents"] = [(a.agent_id, a.live_facts) for a in view.agents()]
        seen["generation"] = view.generation()
        with pytest.raises(ReadOnlyStore):
            view.put("a", "from the view")
        view.close()

    any_store.in_one_snapshot(check)
    assert seen["first"] == seen["second"] == ["before the snapshot"]
    assert seen["agents"] == [("a", 1)]  # the count of the same snapshot, not the newer one
    assert any_store.generation() > seen["generation"]  # type: ignore[operator]
    assert sorted(f.text for f in any_store.all_facts()) == [
        "before the snapshot",
        "written meanwhile",
    ]  # the store is still open after the view was closed


def test_the_invariants_checked_in_one_snapshot(any_store: AnyStore) -> None:
    any_store.put("a", "one fact")
    checks = any_store.in_one_snapshot(check_invariants)
    assert checks and all(check.ok for check in checks)
