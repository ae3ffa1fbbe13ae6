"""The Review tab: agents' held changes, oldest first, each drawn as a diff like a
consolidation's proposal; a approves (or the store discards it as stale, said as a
warning), x asks for a reason and rejects; j/k move between them; the top bar counts
what waits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import DataTable

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core import provenance
from graymatter_tui.core.model import ReviewProposal
from graymatter_tui.tui.app import TABS
from graymatter_tui.tui.screens.dialogs import LineEntryScreen
from tests.tui.helpers import (
    make_app,
    notifications,
    open_store,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)
from tests.tui.test_journal import plain, table_rows

AGENT = "ops"
OLD = "Staging database listens on port 5432."
NEW = "Staging database listens on port 5433."
PINNED = "Deploys freeze on Fridays."
REVIEW_KEY = str(TABS.index("review") + 1)


@pytest.fixture
def review_store(tmp_path: Path) -> Iterator[LmdbStore]:
    store = open_store(tmp_path / "store")
    try:
        yield store
    finally:
        store.close()


def _hold(store: LmdbStore, action: str, target: str, text: str = "") -> ReviewProposal:
    with provenance.writing_as("mcp:claude-code"):
        return store.hold_change(AGENT, action, target, text)


async def test_pending_changes_show_as_a_diff_and_approve_applies(review_store: LmdbStore) -> None:
    old = review_store.put(AGENT, OLD)
    review_store.put(AGENT, PINNED)
    update = _hold(review_store, "update", OLD, NEW)
    pin = _hold(review_store, "pin", PINNED)
    app = make_app(review_store, agent=AGENT)
    async with running(app) as pilot:
        assert "[2 TO REVIEW]" in static_text(app, "#topbar")
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        assert static_text(app, "#review-info").startswith(" 2 held changes to review")
        assert update.id in static_text(app, "#review-row")  # oldest first
        diff = static_text(app, "#review-diff #diff-body")
        assert f" − {OLD}" in diff and f" + {NEW}" in diff
        assert "1 fact would be superseded by 1 new fact · pending" in diff
        await pilot.press("j")
        await settle(pilot)
        assert pin.id in static_text(app, "#review-row")
        assert "1 fact would be pinned" in static_text(app, "#review-diff #diff-body")
        await pilot.press("k", "a")
        await settle(pilot)
        await wait_until(
            pilot, lambda: review_store.require_proposal(update.id).status != "pending"
        )
        assert review_store.require(old.id).is_tombstone
        await wait_until(pilot, lambda: "[1 TO REVIEW]" in static_text(app, "#topbar"))
        await wait_until(
            pilot, lambda: "1 held change to review" in static_text(app, "#review-info")
        )
        assert any("Approved update" in message for _s, message in notifications(app))


async def test_a_stale_approval_is_a_warning_and_changes_nothing(review_store: LmdbStore) -> None:
    old = review_store.put(AGENT, OLD)
    forget = _hold(review_store, "forget", OLD)
    revision, _ = review_store.revise(old.id, NEW)
    app = make_app(review_store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await wait_until(pilot, lambda: any(s == "warning" for s, _m in notifications(app)))
        warning = next(m for s, m in notifications(app) if s == "warning")
        assert f"stale: fact {old.id} was superseded by {revision.id} meanwhile" in warning
        assert review_store.require_proposal(forget.id).status == "discarded"
        assert review_store.require(revision.id).is_live


async def test_reject_asks_for_a_reason_and_shows_markup_literally(review_store: LmdbStore) -> None:
    review_store.put(AGENT, OLD)
    held = _hold(review_store, "update", OLD, "[bold red]Port[/] 5433 [link=x]y[/link]")
    app = make_app(review_store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        assert "[bold red]Port[/] 5433 [link=x]y[/link]" in screen_text(app)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, LineEntryScreen)
        await pilot.press(*"[b]no[/b]", "enter")
        await settle(pilot)
        await wait_until(pilot, lambda: review_store.require_proposal(held.id).status == "rejected")
        assert review_store.require_proposal(held.id).reason == "[b]no[/b]"
        await wait_until(
            pilot, lambda: "Nothing held for review" in static_text(app, "#review-info")
        )
        assert [f.text for f in review_store.list_facts(AGENT)] == [OLD]


async def test_a_reason_with_a_control_character_is_refused_and_loses_nothing(
    review_store: LmdbStore,
) -> None:
    review_store.put(AGENT, OLD)
    held = _hold(review_store, "forget", OLD)
    app = make_app(review_store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("tab")  # Input refuses typed controls; paste one in instead
        app.screen.query_one("Input").value = "bad\x1b[31m"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        await wait_until(pilot, lambda: any(s == "error" for s, _m in notifications(app)))
        assert any("control character" in m for s, m in notifications(app) if s == "error")
        assert review_store.require_proposal(held.id).pending


async def test_a_read_only_app_shows_the_queue_but_decides_nothing(review_store: LmdbStore) -> None:
    review_store.put(AGENT, OLD)
    held = _hold(review_store, "forget", OLD)
    app = make_app(review_store, agent=AGENT, read_only=True)
    async with running(app) as pilot:
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        assert held.id in static_text(app, "#review-row")
        await pilot.press("a")
        await settle(pilot)
        assert review_store.require_proposal(held.id).pending


async def test_the_journal_replays_and_reverts_an_approval(review_store: LmdbStore) -> None:
    old = review_store.put(AGENT, OLD)
    decision = review_store.approve_proposal(_hold(review_store, "update", OLD, NEW).id)
    record = decision.record
    app = make_app(review_store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press("4")
        await settle(pilot)
        (row,) = table_rows(app)
        assert row["outcome"] == "review applied"  # not to be read as a consolidation
        assert row["time"] == record.finished_at[:19].replace("T", " ")  # the decision's
        await pilot.press("enter")
        await settle(pilot)
        replay = static_text(app, "#replay #diff-body")
        assert f"Review of an agent's update (proposal {decision.proposal.id}" in replay
        assert "asked by mcp:claude-code), applied by api" in replay
        await pilot.press("escape", "u")
        await settle(pilot)
        assert f"Revert review {record.cycle_id}?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        await wait_until(pilot, lambda: review_store.require(old.id).is_live)
        assert review_store.require(record.summary_id).is_retired


async def test_a_possible_update_shows_both_facts_and_approving_supersedes_the_older(
    review_store: LmdbStore,
) -> None:
    old = review_store.put(AGENT, OLD)
    with provenance.writing_as("mcp:claude-code"):
        written = review_store.remember(AGENT, NEW)
    [item] = written.held
    app = make_app(review_store, agent=AGENT)
    async with running(app) as pilot:
        assert "[1 TO REVIEW]" in static_text(app, "#topbar")
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        table = app.query_one("#review-table", DataTable)
        assert table.row_count == 1
        row = [plain(cell) for cell in table.get_row_at(0)]
        assert row[2] == "possible_update" and row[4] == f"{OLD} → {NEW}"[:80]
        said = static_text(app, "#review-row")
        assert item.id in said and "possible update: details differ: new 5433; held 5432" in said
        assert f"found when mcp:claude-code wrote {written.fact.id}" in said
        diff = static_text(app, "#review-diff #diff-body")
        assert f" − {OLD}\n   {NEW}" in diff  # the held fact goes, the newer one stays
        assert "the held fact would be superseded by the newer one · pending" in diff
        await pilot.press("a")
        await wait_until(pilot, lambda: review_store.require_proposal(item.id).status != "pending")
        assert review_store.require(old.id).superseded_by == written.fact.id
        assert review_store.require(written.fact.id).is_live
        await wait_until(
            pilot, lambda: "Nothing held for review" in static_text(app, "#review-info")
        )
        assert any("Approved possible_update" in m for _s, m in notifications(app))
