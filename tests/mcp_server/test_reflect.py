"""memory_reflect as an agent calls it: add, update, forget, pin, unpin by exact text,
each in one transaction, with upstream's argument rules (agent_id or the deprecated
agent; target wins over text)."""

from __future__ import annotations

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.mcp_server.conftest import Served

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

OLD = "The staging database listens on port 5432"
NEW = "The staging database listens on port 5433"


def _seed(served: Served) -> tuple[str, str]:
    """The test's agent `a` and another agent `b`, seeded."""
    a, b = served.agent, served.agent + "-b"
    with LmdbStore.open(served.store) as store:
        store.put(a, OLD)
        store.put(a, OLD)  # an exact twin: both are the fact the agent means
        store.put(a, "The staging database needs the VPN")
        store.put(b, OLD)  # another agent's: never touched
    return a, b


async def test_update_supersedes_every_live_exact_match_with_one_replacement(
    served: Served,
) -> None:
    a, b = _seed(served)
    async with served.connect() as agent:
        text, structured = await agent.ok(
            "memory_reflect", action="update", agent_id=a, target=OLD, text=NEW
        )
        assert structured == {"action": "update", "agent": a, "ok": True}
        assert text == f'Reflected "update" for agent "{a}": 2 facts superseded.'
        _, found = await agent.ok("memory_search", agent_id=a, query="staging database port")
    assert OLD not in found["facts"] and NEW in found["facts"]
    with LmdbStore.open(served.store, read_only=True) as store:
        facts = store.list_facts(a, "all")
        replacement = next(f for f in facts if f.text == NEW)
        tombs = [f for f in facts if f.text == OLD]
        assert replacement.is_live
        assert [t.superseded_by for t in tombs] == [replacement.id, replacement.id]
        assert [f.text for f in store.list_facts(b)] == [OLD]


async def test_forget_pin_unpin_by_exact_text_and_target_wins(served: Served) -> None:
    a, _ = _seed(served)
    async with served.connect() as agent:
        text, _ = await agent.ok(
            "memory_reflect", action="pin", agent=a, target=OLD, text="ignored: target wins"
        )
        assert text == f'Reflected "pin" for agent "{a}": 2 facts pinned.'
        refused = await agent.error("memory_reflect", action="forget", agent_id=a, text=OLD)
        assert "is pinned; unpin it" in refused
        await agent.ok("memory_reflect", action="unpin", agent_id=a, text=OLD)
        text, structured = await agent.ok(
            "memory_reflect", action="forget", agent_id=a, agent="ignored", target=OLD
        )
    assert text == f'Reflected "forget" for agent "{a}": 2 facts forgotten.'
    assert structured["agent"] == a  # agent_id wins over the deprecated agent
    with LmdbStore.open(served.store, read_only=True) as store:
        assert [f.text for f in store.list_facts(a)] == ["The staging database needs the VPN"]
        assert {f.superseded_by for f in store.list_facts(a, "tombstones")} == {"agent"}


async def test_add_through_reflect(served: Served) -> None:
    async with served.connect() as agent:
        a = served.agent
        text, structured = await agent.ok(
            "memory_reflect", action="add", agent_id=a, text="Backups run at 02:00"
        )
    assert text == f'Reflected "add" for agent "{a}": 1 fact added.'
    assert structured == {"action": "add", "agent": a, "ok": True}


async def test_bad_reflect_calls_are_refused_by_name_and_change_nothing(served: Served) -> None:
    a, _ = _seed(served)
    cases = [
        ({"agent_id": a, "text": "x"}, "action is required"),
        ({"action": "rewrite", "agent_id": a}, "unknown action"),
        ({"action": "rewrite", "agent_id": a}, "add, update, forget, link, pin, unpin"),
        ({"action": "add", "text": "x"}, "agent_id or agent is required"),
        ({"action": "update", "agent_id": a, "text": NEW}, "target is required"),
        ({"action": "update", "agent_id": a, "target": OLD}, "text is required"),
        ({"action": "update", "agent_id": a, "target": OLD, "text": OLD}, "unchanged"),
        (
            {"action": "update", "agent_id": a, "target": "no such fact", "text": NEW},
            "no live fact",
        ),
        ({"action": "forget", "agent_id": a}, "target (or text) is required"),
        ({"action": "pin", "agent_id": a, "target": "not stored"}, "no live fact"),
        ({"action": "add", "agent_id": a, "text": "bell \x07"}, "U+0007"),
        (
            {"action": "link", "agent_id": a, "text": "x", "target": "y"},
            "knowledge graph not available",
        ),
        ({"action": "add", "agent": "a\u202eb", "text": "x"}, "U+202E"),
    ]
    with LmdbStore.open(served.store, read_only=True) as store:
        before = [(f.id, f.text, f.superseded_by, f.pinned) for f in store.list_facts(a, "all")]
    async with served.connect() as agent:
        for arguments, expected in cases:
            error = await agent.error("memory_reflect", **arguments)
            assert expected in error, (arguments, error)
    with LmdbStore.open(served.store, read_only=True) as store:
        after = [(f.id, f.text, f.superseded_by, f.pinned) for f in store.list_facts(a, "all")]
    assert after == before


async def test_a_read_only_server_refuses_reflect(served: Served) -> None:
    a, _ = _seed(served)
    async with served.connect("--read-only") as agent:
        error = await agent.error("memory_reflect", action="forget", agent_id=a, target=OLD)
    assert "read-only" in error
    with LmdbStore.open(served.store, read_only=True) as store:
        assert len(store.list_facts(a)) == 3
