"""`mcp --review`: an agent's curation is held for a person instead of applied. The held
reply says so with the proposal's id (text and structuredContent, still valid against the
declared outputSchema), no fact changes, and the person's decision later applies it,
discards it as stale, or is reverted like a cycle."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.core.model import RETIRED
from graymatter_tui.mcp.tools import MEMORY_ADD, MEMORY_REFLECT
from tests.mcp_server.client import connected

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

OLD = "The staging database listens on port 5432"
NEW = "The staging database listens on port 5433"


def _seed(path: Path) -> str:
    with LmdbStore.open(path) as store:
        return store.put("a", OLD).id


def _clean(store: LmdbStore) -> None:
    assert [v for check in check_invariants(store) for v in check.violations] == []


async def test_held_update_then_approve_leaves_a_tombstone_with_its_receipt(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    old_id = _seed(path)
    async with connected(path, "--review", "curation", client_name="claude-code") as agent:
        text, structured = await agent.ok(
            "memory_reflect", action="update", agent_id="a", target=OLD, text=NEW
        )
        proposal_id = structured["proposal_id"]
        assert structured == {
            "action": "update",
            "agent": "a",
            "ok": True,
            "held": True,
            "proposal_id": proposal_id,
        }
        jsonschema.validate(structured, MEMORY_REFLECT.output_schema)
        assert text == (
            f'Reflect "update" for agent "a" held for review as {proposal_id}: '
            "nothing changes until a person approves it."
        )
        _, found = await agent.ok("memory_search", agent_id="a", query="staging database port")
        assert found["facts"] == [OLD]  # nothing changed
    with LmdbStore.open(path) as store:
        held = store.require_proposal(proposal_id)
        assert held.pending and held.source == "mcp:claude-code"
        assert store.activity(limit=1)[0].action == "review"
        decision = store.approve_proposal(proposal_id)
        assert decision.applied
        shown = store.show(old_id)
        assert shown.replaced_by is not None and shown.replaced_by.text == NEW
        assert shown.replaced_by.source == "mcp:claude-code"
        assert shown.cycle is not None and shown.cycle.proposal_id == proposal_id
        _clean(store)


async def test_held_forget_on_a_fact_changed_meanwhile_is_discarded_as_stale(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    old_id = _seed(path)
    async with connected(path, "--review", "curation") as agent:
        _, structured = await agent.ok("memory_reflect", action="forget", agent_id="a", text=OLD)
        # The person revises the fact while the forget waits.
        with LmdbStore.open(path) as store:
            revision, _ = store.revise(old_id, NEW)
            decision = store.approve_proposal(structured["proposal_id"])
            assert not decision.applied
            assert decision.proposal.status == "discarded"
            assert f"fact {old_id} was superseded by {revision.id} meanwhile" in (
                decision.proposal.reason
            )
            assert store.require(revision.id).is_live
            _clean(store)


async def test_approve_then_revert(tmp_path: Path) -> None:
    path = tmp_path / "store"
    old_id = _seed(path)
    async with connected(path, "--review", "curation") as agent:
        _, structured = await agent.ok(
            "memory_reflect", action="update", agent_id="a", target=OLD, text=NEW
        )
    with LmdbStore.open(path) as store:
        decision = store.approve_proposal(structured["proposal_id"])
        store.revert(decision.record.cycle_id)
        assert store.require(old_id).is_live
        assert store.require(decision.record.summary_id).superseded_by == RETIRED
        _clean(store)
    async with connected(path) as agent:
        _, found = await agent.ok("memory_search", agent_id="a", query="staging database port")
        assert found["facts"] == [OLD]


async def test_curation_mode_holds_curation_and_applies_adds(tmp_path: Path) -> None:
    path = tmp_path / "store"
    old_id = _seed(path)
    async with connected(path, "--review", "curation") as agent:
        for action in ("pin", "unpin", "forget"):
            _, structured = await agent.ok(
                "memory_reflect", action=action, agent_id="a", target=OLD
            )
            assert structured["held"] is True
        _, structured = await agent.ok("memory_reflect", action="add", agent_id="a", text=NEW)
        jsonschema.validate(structured, MEMORY_REFLECT.output_schema)
        [item] = structured.pop("review")  # the add is applied; the pair it makes is held
        assert structured == {"action": "add", "agent": "a", "ok": True}
        assert (item["kind"], item["held_fact_id"]) == ("possible_update", old_id)
        _, stored = await agent.ok("memory_add", agent_id="a", text="Another plain fact")
        assert stored == {"agent_id": "a", "stored": True}
    with LmdbStore.open(path, read_only=True) as store:
        assert {f.text for f in store.list_facts("a")} == {OLD, NEW, "Another plain fact"}
        assert not any(f.pinned for f in store.list_facts("a"))
        assert [p.action for p in store.proposals("a")] == [
            "possible_update",
            "forget",
            "unpin",
            "pin",
        ]


async def test_memory_add_names_the_possible_update_it_raised_and_keeps_the_text(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    old_id = _seed(path)
    async with connected(path) as agent:  # no --review: the fact is stored at once
        text, structured = await agent.ok("memory_add", agent_id="a", text=NEW)
        assert text == 'Memory stored for agent "a".'  # upstream's text, unchanged
        jsonschema.validate(structured, MEMORY_ADD.output_schema)
        [item] = structured["review"]
        assert structured["stored"] is True and "held" not in structured
        assert item["kind"] == "possible_update" and item["held_fact_id"] == old_id
        assert item["why"] == "details differ: new 5433; held 5432"
        _, plain = await agent.ok("memory_add", agent_id="a", text="Lunch is on Thursdays")
        assert plain == {"agent_id": "a", "stored": True}
    with LmdbStore.open(path, read_only=True) as store:
        held = store.require_proposal(item["proposal_id"])
        assert held.pending and held.held_id == old_id and held.text == NEW
        assert held.source.startswith("mcp:") and held.source == store.require(held.fact_id).source
        assert {f.text for f in store.list_facts("a")} == {OLD, NEW, "Lunch is on Thursdays"}


async def test_all_mode_holds_adds_too(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _seed(path)
    async with connected(path, "--review", "all") as agent:
        text, structured = await agent.ok("memory_add", agent_id="a", text=NEW)
        jsonschema.validate(structured, MEMORY_ADD.output_schema)
        assert structured["stored"] is False and structured["held"] is True
        assert f"held for review as {structured['proposal_id']}" in text
        _, reflected = await agent.ok("memory_reflect", action="add", agent_id="a", text=NEW)
        assert reflected["held"] is True
    with LmdbStore.open(path) as store:
        assert [f.text for f in store.list_facts("a")] == [OLD]
        store.approve_proposal(structured["proposal_id"])
        assert {f.text for f in store.list_facts("a")} == {OLD, NEW}


async def test_a_change_that_can_never_apply_is_an_error_not_held(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _seed(path)
    async with connected(path, "--review", "curation") as agent:
        refused = await agent.error(
            "memory_reflect", action="forget", agent_id="a", target="never written"
        )
        assert "no live fact" in refused
        refused = await agent.error(
            "memory_reflect", action="update", agent_id="a", target=OLD, text=OLD
        )
        assert "unchanged" in refused
    async with connected(path, "--review", "curation", "--read-only") as agent:
        refused = await agent.error("memory_reflect", action="forget", agent_id="a", target=OLD)
        assert "read-only" in refused
    with LmdbStore.open(path, read_only=True) as store:
        assert store.proposals() == []


def test_an_unknown_review_mode_is_a_usage_error(tmp_path: Path) -> None:
    from tests.mcp_server.client import run_mcp

    done = run_mcp("--dir", str(tmp_path / "store"), "--review", "some")
    assert done.returncode == 2
    assert "'some' is not one of 'off', 'none', 'curation', 'all'" in done.stderr


@pytest.mark.parametrize("mode", ["off", "none"])
async def test_review_off_holds_nothing(tmp_path: Path, mode: str) -> None:
    # DESIGN.md names the mode `off`; release 0.4.0 called it `none`: both work.
    path = tmp_path / "store"
    old_id = _seed(path)
    async with connected(path, "--review", mode) as agent:
        _, structured = await agent.ok("memory_reflect", action="forget", agent_id="a", text=OLD)
        assert not structured.get("held")
    with LmdbStore.open(path, read_only=True) as store:
        assert not store.require(old_id).is_live and store.proposals() == []
