"""Every app-level binding: tabs 1–5, help (? and f1), the agent chooser (A), the command
palette (ctrl+p) and quit (q)."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input, OptionList, TabbedContent

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.screens.dialogs import ChooseScreen
from graymatter_tui.tui.screens.help import HelpScreen
from tests.tui.helpers import (
    OPS,
    SIZE,
    make_app,
    modal_text,
    running,
    screen_text,
    settle,
    static_text,
    type_in_palette,
    visible_texts,
    wait_until,
)

RESEARCH = "research-agent"
SUPPORT = "support-bot"

# What each pane shows on the demo store before anything has run.
TAB_KEYS = [
    ("2", "tombstones", "tomb-list", "No tombstones: nothing has been superseded."),
    ("3", "consolidate", "consolidate-pane", "No cycle yet."),
    ("4", "journal", "journal-table", "0 records, newest first"),
    ("5", "status", "status-pane", "300 live · 0 tombstones · 3 pinned"),
    ("6", "activity", "activity-list", "Showing everything"),
    ("1", "facts", "fact-list", "100 live · sorted by recency"),
]


async def test_number_keys_switch_tabs_and_focus(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        tabs = app.query_one("#tabs", TabbedContent)
        assert tabs.active == "facts"
        for key, tab, focused, shown in TAB_KEYS:
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab, key
            assert app.focused is not None and app.focused.id == focused, key
            assert shown in screen_text(app), key


async def test_tab_key_typed_ahead_at_startup(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")  # no pause: the key arrives with the first frame
        await pilot.pause()
        assert app.is_running
        assert app.query_one("#tabs", TabbedContent).active == "consolidate"


async def test_question_mark_and_f1_open_the_help(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        for key in ("question_mark", "f1"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen), key
            table = modal_text(app)
            for section in ("Everywhere", "Lists", "Facts", "Tombstones", "Consolidate"):
                assert section in table
            for description in (
                "Revert cycle",
                "Next stage",
                "Run to end",
                "Propose again",
                "Cancel call",
                "Pin/unpin",
                "Retire",
                "Replay the cycle's diff",
                "Open the summary that replaced it",
                "Command palette",
            ):
                assert description in table, description
            assert "? / f1" in table
            assert "Keys" in screen_text(app)
            await pilot.press(key)  # the key that opened it closes it again
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        assert app.query_one("#tabs", TabbedContent).active == "facts"


async def test_capital_a_chooses_another_agent(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        assert visible_texts(app) == [f.text for f in demo_store.list_facts(OPS)]
        await pilot.press("A")
        await pilot.pause()
        assert isinstance(app.screen, ChooseScreen)
        options = app.screen.query_one("#choices", OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert labels == [
            "ops-agent  (100 live, 0 tombstones)",
            "research-agent  (100 live, 0 tombstones)",
            "support-bot  (100 live, 0 tombstones)",
        ]
        assert options.highlighted == 0  # the current agent
        await pilot.press("down", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ChooseScreen)
        assert app.agent == RESEARCH
        expected = [f.text for f in demo_store.list_facts(RESEARCH)]
        assert visible_texts(app) == expected
        assert f"agent {RESEARCH} (100 live)" in static_text(app, "#topbar")
        shown = screen_text(app)
        assert expected[0] in shown
        assert "Disk alerts fire at 90% usage" not in shown  # ops-agent's newest fact

        # escape leaves the agent as it was
        await pilot.press("A")
        await pilot.pause()
        assert app.screen.query_one("#choices", OptionList).highlighted == 1
        await pilot.press("down", "escape")
        await settle(pilot)
        assert app.agent == RESEARCH
        assert visible_texts(app) == expected


async def test_palette_switch_agent_opens_the_chooser(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "Switch agent",
            "New cycle",
            "Step cycle",
            "Apply proposal",
            "Reject proposal",
            "Revert cycle",
            "Pin or unpin fact",
            "Export",
        ):
            assert title in titles
        await type_in_palette(pilot, "Switch agent", shows="Choose the agent to show")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChooseScreen), what="chooser")
        await wait_until(  # drawn at its first frame
            pilot,
            lambda: "research-agent  (100 live, 0 tombstones)" in screen_text(app),
            what="the chooser drawn",
        )
        await pilot.press("end", "enter")
        await settle(pilot)
        assert app.agent == SUPPORT
        assert visible_texts(app) == [f.text for f in demo_store.list_facts(SUPPORT)]


async def test_q_quits_but_is_typed_into_the_filter(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("slash", "q")
        await pilot.pause()
        assert app.is_running
        assert app.query_one("#filter", Input).value == "q"
        await pilot.press("escape", "q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_a_poll_tick_while_the_app_closes_is_harmless(demo_store: LmdbStore) -> None:
    """Closing removes the widgets before the poll timer stops; a tick in between must
    not turn a clean exit into a traceback."""
    app = make_app(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.query_one("#topbar").remove()  # as the teardown does
        demo_store.put(OPS, "written while closing")  # the next tick has work to do
        await pilot.pause(3 * app.poll_seconds)
        assert app.is_running
        assert app.return_code is None
        app.exit()
    assert app.return_code == 0


async def test_q_typed_as_the_app_starts_quits_cleanly(demo_store: LmdbStore) -> None:
    """`q` in the first moment, before the hidden tabs' panes have mounted (they mount
    just after the first frame): the exit must not try to mount them into tabs already
    torn down (it raised MountError and printed a traceback on the way out)."""
    app = make_app(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(events.Key("q", "q"))  # no pause: before the first refresh
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


@pytest.mark.parametrize("key", ["e", "a", "A", "R", "question_mark"])
async def test_a_key_typed_as_the_app_quits_opens_nothing(demo_store: LmdbStore, key: str) -> None:
    """`q` then `e` in one burst of input: the second key arrives after the app began to
    close. It must start nothing (a dialog mounted then crashed the exit with NoMatches)."""
    app = make_app(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # Both keys queued at once, as a terminal delivers a burst of input.
        for typed in ("q", key):
            char = "?" if typed == "question_mark" else typed
            app.post_message(events.Key(typed, char))
        await pilot.pause()
        assert len(app.screen_stack) == 1
    assert app.return_code == 0


async def test_a_pane_key_typed_in_the_same_burst_as_its_tab_reaches_the_pane(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        # Both keys queued before either is handled, as a terminal delivers "3n" typed fast.
        for key in ("3", "n"):
            app.post_message(events.Key(key, key))
        await wait_until(
            pilot, lambda: "cycle " in screen_text(app) and "Decay" in screen_text(app)
        )
        assert app.query_one("#tabs", TabbedContent).active == "consolidate"
