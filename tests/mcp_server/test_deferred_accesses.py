"""A server records what searches returned after answering, many searches per write, and
writes what is left when it stops: no access is lost on a clean stop, and none is
recorded by a read-only server."""

from __future__ import annotations

from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.mcp.deferred_accesses import DeferredAccesses
from tests.mcp_server.client import connected


def test_a_burst_of_accesses_is_written_in_few_transactions(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        facts = [store.put("a", f"fact {n}") for n in range(20)]
        before = store.generation()
        recorder = DeferredAccesses(store, gather_seconds=0.5)
        for _ in range(10):
            recorder.record(f.id for f in facts)
        recorder.close()
        counts = [store.require(f.id).access_count for f in facts]
        writes = store.generation() - before
    assert counts == [10] * 20  # every search counts, though they share transactions
    assert recorder.written == writes and 1 <= writes <= 2


def test_accesses_recorded_after_close_are_written_at_once(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        fact = store.put("a", "late")
        recorder = DeferredAccesses(store)
        recorder.close()
        recorder.record([fact.id])
        recorder.close()
        assert store.require(fact.id).access_count == 1


async def test_searches_over_stdio_are_all_counted_when_the_server_stops(tmp_path: Path) -> None:
    async with connected(tmp_path / "store") as agent:
        await agent.ok("memory_add", agent_id="a", text="The deploy key rotates on Fridays")
        for _ in range(5):
            await agent.ok("memory_search", agent_id="a", query="deploy key")
    with LmdbStore.open(tmp_path / "store", read_only=True) as store:
        (fact,) = store.list_facts("a")
    assert fact.access_count == 5
