"""Small terminals: everything a pane needs fits 80×24, and 60×20 degrades gracefully
(the footer keeps `? Help`, dialogs stay inside the screen, the journal's header is
whole, the replay and the proposal diff keep room for the diff)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.containers import Vertical
from textual.widgets import DataTable

from graymatter_tui.app import TABS, GraymatterApp
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.screens.consolidate import ConsolidatePane
from graymatter_tui.screens.facts import FactsPane
from graymatter_tui.screens.journal import CycleDiffScreen, JournalPane
from graymatter_tui.screens.review import ReviewPane
from graymatter_tui.store import Store
from graymatter_tui.widgets.key_bar import Key, plan
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    notifications,
    press_each,
    running,
    screen_lines,
    settle,
    static_text,
)

# Every key a pane needs, by the action it runs.
REVIEW_KEY = str(TABS.index("review") + 1)
PANE_KEYS = {
    "1": FactsPane.BINDINGS,
    "3": ConsolidatePane.BINDINGS,
    "4": JournalPane.BINDINGS,
}


def footer_keys(app: GraymatterApp) -> dict[str, Any]:
    """The footer's keys that are wholly inside the screen, by action."""
    width = app.size.width
    keys = app.screen.query("FooterKey")
    return {
        key.action: key  # type: ignore[attr-defined]
        for key in keys
        if key.region.width and key.region.x >= 0 and key.region.right <= width
    }


@pytest.mark.parametrize("tab", sorted(PANE_KEYS))
async def test_at_80_columns_the_footer_shows_every_key_of_the_pane(
    demo_store: Store, tab: str
) -> None:
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press(tab)
        await settle(pilot)
        shown = footer_keys(app)
        for binding in PANE_KEYS[tab]:
            assert binding.action in shown, binding.action  # type: ignore[union-attr]
        assert "help" in shown
        assert screen_lines(app)[-1].rstrip().endswith("? Help")


async def test_at_80_columns_the_review_keys_fit_whole(demo_store: Store) -> None:
    """Review's two keys are short: the full footer (with the palette key) fits."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        shown = footer_keys(app)
        for binding in ReviewPane.BINDINGS:
            assert binding.action in shown, binding.action  # type: ignore[union-attr]
        assert "a Approve  x Reject  ? Help" in screen_lines(app)[-1]


@pytest.mark.parametrize("tab", ["1", "2", "3", "4", "5", REVIEW_KEY])
async def test_at_60_columns_help_is_always_in_the_footer(demo_store: Store, tab: str) -> None:
    app = make_app(demo_store)
    async with running(app, size=(60, 20)) as pilot:
        await pilot.press(tab)
        await settle(pilot)
        assert "help" in footer_keys(app)
        assert "? Help" in screen_lines(app)[-1]


def open_dialog(app: GraymatterApp, which: str) -> None:
    if which == "export":
        app.action_export()
    elif which == "agent":
        app.action_choose_agent()
    else:
        getattr(app.query_one("#facts-pane"), f"action_{which}")()


@pytest.mark.parametrize("size", [(60, 20), (80, 24)], ids=["60x20", "80x24"])
@pytest.mark.parametrize("which", ["add", "revise", "retire", "export", "agent"])
async def test_dialogs_stay_inside_the_screen(
    demo_store: Store, size: tuple[int, int], which: str
) -> None:
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        open_dialog(app, which)
        await settle(pilot)
        dialog = app.screen.query_one(".dialog", Vertical)
        width, height = size
        assert dialog.region.x >= 0 and dialog.region.right <= width, dialog.region
        assert dialog.region.y >= 0 and dialog.region.bottom <= height, dialog.region
        title = static_text(app, ".dialog-title")
        assert any(title[:40] in line for line in screen_lines(app))


async def applied(store: Store) -> Any:
    record = await Cycle(store, OPS, LocalSummariser()).run()
    assert record.outcome == "applied"
    return record


async def test_journal_fits_80_columns_and_gives_the_whole_id(demo_store: Store) -> None:
    record = await applied(demo_store)
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        table: Any = app.query_one("#journal-table", DataTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert not table.show_horizontal_scrollbar
        header = next(line for line in screen_lines(app) if line.lstrip().startswith("time"))
        for title in ("time", "agent", "outcome", "consumed", "cycle"):
            assert f" {title}" in header
        assert any(f"cycle {record.cycle_id}" in line for line in screen_lines(app))

        await pilot.press("c")
        await settle(pilot)
        assert app.clipboard == record.cycle_id
        assert any(record.cycle_id in message for _, message in notifications(app))


async def test_u_on_a_cycle_that_applied_nothing_warns_before_asking(demo_store: Store) -> None:
    skipped = await Cycle(demo_store, OPS, None).run()
    assert skipped.outcome == "skipped"
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await press_each(pilot, "4", "u")
        assert app.screen is app.screen_stack[0]  # no confirmation asked
        assert any(
            severity == "warning" and "nothing was applied" in message
            for severity, message in notifications(app)
        )
    assert demo_store.counters().reverts == 0


async def test_replay_at_80x24_shows_the_diff(demo_store: Store) -> None:
    await applied(demo_store)
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await press_each(pilot, "4", "enter")
        assert isinstance(app.screen, CycleDiffScreen)
        lines = screen_lines(app)
        assert any(f"− {STAGING_A}" in line for line in lines)
        assert any(f"+ {STAGING_B}" in line for line in lines)
        assert any("2 consumed" in line for line in lines)


async def test_consolidate_at_80x24_shows_the_summary_after_review(demo_store: Store) -> None:
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("3")
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        lines = screen_lines(app)
        assert any("would consume 2 of 32" in line for line in lines)
        assert any(f"+ {STAGING_B}" in line for line in lines)


@pytest.mark.parametrize("size", [(64, 40), (64, 20)], ids=["tall", "short"])
async def test_wrapped_stage_results_hang_under_their_text(
    demo_store: Store, size: tuple[int, int]
) -> None:
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        await pilot.press("3", "g")
        await settle(pilot)
        lines = screen_lines(app)
        first = next(i for i, line in enumerate(lines) if "✓ Apply" in line)
        column = lines[first].index("summary ")
        assert "tombstoned" not in lines[first]  # too long for 64 columns: it wraps
        follow = lines[first + 1]
        assert follow[:column].strip() == "", follow
        assert follow[column:].strip().startswith(("written", "facts", "tombstoned")), follow


def keys_of(*specs: tuple[str, str, str, bool]) -> list[Key]:
    return [
        Key(
            key=k,
            display=k,
            description=d,
            short=sd,
            action=d,
            enabled=True,
            tooltip="",
            app_wide=app_wide,
            is_help=d == "Help",
        )
        for k, d, sd, app_wide in specs
    ]


PANE = keys_of(
    ("n", "Next stage", "Next", False),
    ("p", "Propose again", "Again", False),
    ("m", "Summariser", "LLM", False),
)
APP = keys_of(("?", "Help", "Help", True), ("A", "Agent", "Agent", True))


@pytest.mark.parametrize(
    ("width", "shown", "short", "more"),
    [
        (200, ["Next stage", "Propose again", "Summariser", "Help", "Agent"], False, False),
        (50, ["Next stage", "Propose again", "Summariser"], False, False),  # app keys go
        (60, ["Next stage", "Propose again", "Summariser", "Agent"], False, False),
        (30, ["Next", "Again", "LLM"], True, False),
        (20, ["Next"], True, True),
        (8, [], True, True),
    ],
)
def test_the_footer_plan_keeps_help_and_the_panes_keys_first(
    width: int, shown: list[str], short: bool, more: bool
) -> None:
    layout = plan([*PANE, *APP], width)
    assert [k.label(short=layout.short) for k in layout.keys] == shown
    assert (layout.short, layout.more) == (short, more)
    if width < 200:
        assert layout.help is not None and layout.compact and not layout.palette
