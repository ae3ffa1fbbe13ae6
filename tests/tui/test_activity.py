"""The Activity pane (key 6): every write from every process, newest first, live; filters
by source and agent; enter opens the fact or the cycle; a burst of writes is drawn in a
few redraws; hostile text stays literal."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList, TabbedContent

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.core import provenance
from graymatter_tui.core.model import ActivityEntry
from graymatter_tui.tui.app import GraymatterApp
from graymatter_tui.tui.screens.activity import HELD_MAX, PAGE, SCAN_STEP, ActivityPane
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.screens.dialogs import ChooseScreen
from graymatter_tui.tui.screens.journal import JournalPane
from tests.tui.helpers import (
    OPS,
    cli_env,
    make_app,
    notifications,
    run_cli,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)
from tests.tui.test_live_and_safety import HOSTILE

DEV = "dev-agent"


def pane(app: GraymatterApp) -> ActivityPane:
    return app.query_one("#activity-pane", ActivityPane)


def shown(app: GraymatterApp) -> list[ActivityEntry]:
    return list(pane(app).entries)


def cursor_entry(app: GraymatterApp) -> ActivityEntry:
    entry = pane(app).current_entry()
    assert entry is not None
    return entry


async def show_activity(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.press("6")
    await settle(pilot)
    assert pilot.app.query_one("#tabs", TabbedContent).active == "activity"


async def choose(pilot: Pilot[Any], value: str) -> None:
    """In the open chooser, pick the option whose id is `value`."""
    screen = pilot.app.screen
    assert isinstance(screen, ChooseScreen)
    options = screen.query_one(OptionList)
    options.highlighted = next(
        i for i in range(options.option_count) if options.get_option_at_index(i).id == value
    )
    await pilot.press("enter")
    await settle(pilot)


async def test_writes_from_another_process_appear_newest_first(
    empty_store: LmdbStore,
) -> None:
    app = make_app(empty_store)
    async with running(app) as pilot:
        await show_activity(pilot)
        assert "No writes yet" in screen_text(app)
        for text in ("first from the shell", "second from the shell"):
            done = run_cli("remember", OPS, text, "--dir", str(empty_store.path))
            assert done.returncode == 0, done.stderr
        await wait_until(pilot, lambda: len(shown(app)) == 2, what="two rows")
        await settle(pilot)
        assert [(e.text, e.source, e.action) for e in shown(app)] == [
            ("second from the shell", "cli", "add"),
            ("first from the shell", "cli", "add"),
        ]
        lines = screen_text(app).splitlines()
        rows = [line for line in lines if "from the shell" in line]
        assert "second" in rows[0] and "first" in rows[1]
        assert all("cli" in row and OPS in row and " add " in row for row in rows)


WRITER = """
import sys, time
from pathlib import Path
from graymatter_tui.core import provenance
from graymatter_tui.backends.lmdb import LmdbStore

provenance.name_process("mcp:burst")
with LmdbStore.open(Path(sys.argv[1])) as store:
    for n in range(int(sys.argv[2])):
        # a word of its own per write, no number: no write holds a pair for review
        store.put("ops-agent", "burst " + "".join("abcdefghij"[int(d)] for d in f"{n:04d}"))
        time.sleep(0.02)  # about 50 writes a second
"""


class CountingApp(GraymatterApp):
    """Counts the times the app hears the store moved, to compare with the pane's
    redraws."""

    polls = 0

    def _store_moved(self, generation: int) -> None:
        self.polls += 1
        super()._store_moved(generation)


async def test_a_burst_of_writes_is_drawn_in_few_redraws_and_every_write_shows(
    empty_store: LmdbStore,
) -> None:
    writes = 150
    app = CountingApp(
        store=empty_store,
        settings=make_app(empty_store).settings,
        agent=OPS,
        poll_seconds=0.5,
    )
    app.animation_level = "none"
    async with running(app) as pilot:
        await show_activity(pilot)
        redraws_before, polls_before = pane(app).redraws, app.polls
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(empty_store.path), str(writes)],
            env=cli_env(),
            stdin=subprocess.DEVNULL,
        )
        try:
            await wait_until(
                pilot,
                lambda: writer.poll() is not None and len(shown(app)) == writes,
                timeout=120,
                what="every burst write shown",
            )
        finally:
            writer.wait(timeout=60)
        assert writer.returncode == 0
        redraws = pane(app).redraws - redraws_before
        polls = app.polls - polls_before
        # One redraw per poll tick at most, however many writes the tick found.
        assert 1 <= redraws <= polls
        assert redraws < writes / 3
        assert [e.text for e in shown(app)] == [
            "burst " + "".join("abcdefghij"[int(d)] for d in f"{n:04d}")
            for n in reversed(range(writes))
        ]
        assert {e.source for e in shown(app)} == {"mcp:burst"}


def _write_feed(store: LmdbStore, count: int, agent: str = OPS) -> None:
    for n in range(count):
        store.put(agent, f"note {n}")


async def test_cursor_stays_on_its_entry_when_rows_arrive_and_new_ones_are_counted(
    empty_store: LmdbStore,
) -> None:
    _write_feed(empty_store, 80)
    app = make_app(empty_store)
    async with running(app) as pilot:
        await show_activity(pilot)
        # On the newest row at the top, the cursor follows the feed.
        empty_store.put(OPS, "newest while following")
        await wait_until(pilot, lambda: len(shown(app)) == 81, what="a new row")
        await settle(pilot)
        assert pane(app).feed_list.cursor == 0
        assert cursor_entry(app).text == "newest while following"
        # Moved off it, the cursor stays on its entry.
        await pilot.press(*["down"] * 5)
        await settle(pilot)
        reading = cursor_entry(app)
        assert reading.text == "note 75"
        # (texts that make no duplicate or possible update, which would add entries)
        empty_store.put(OPS, "arrived while reading")
        empty_store.put(OPS, "came in meanwhile")
        await wait_until(pilot, lambda: len(shown(app)) == 83, what="two new rows")
        await settle(pilot)
        assert cursor_entry(app) == reading
        assert pane(app).feed_list.cursor == 7
        # Scrolled down: the view keeps the cursor's row where it was and counts what
        # arrived above it.
        await pilot.press("pagedown", "pagedown")
        await settle(pilot)
        reading = cursor_entry(app)
        row_on_screen = pane(app).feed_list.cursor - pane(app).feed_list.scroll_offset.y
        assert pane(app).feed_list.scroll_offset.y > 0
        for text in ("kiwis ripen slowly", "trains leave hourly", "arrived below the fold"):
            empty_store.put(OPS, text)
        await wait_until(pilot, lambda: len(shown(app)) == 86, what="three new rows")
        await settle(pilot)
        assert cursor_entry(app) == reading
        feed_list = pane(app).feed_list
        assert feed_list.cursor - feed_list.scroll_offset.y == row_on_screen
        assert "3 new ↑ home" in static_text(app, "#activity-info")
        await pilot.press("home")
        await settle(pilot)
        assert "new" not in static_text(app, "#activity-info")
        assert cursor_entry(app).text == "arrived below the fold"


async def test_filters_by_source_and_by_the_current_agent(empty_store: LmdbStore) -> None:
    with provenance.writing_as("mcp:claude"):
        empty_store.put(OPS, "claude wrote for ops")
        empty_store.put(DEV, "claude wrote for dev")
    with provenance.writing_as("mcp:cursor"):
        empty_store.put(DEV, "cursor wrote for dev")
    with provenance.writing_as("cli"):
        empty_store.put(OPS, "the shell wrote for ops")
    app = make_app(empty_store, agent=OPS)
    async with running(app) as pilot:
        await show_activity(pilot)
        assert len(shown(app)) == 4
        await pilot.press("s")
        await settle(pilot)
        await choose(pilot, "mcp")
        assert [e.text for e in shown(app)] == [
            "cursor wrote for dev",
            "claude wrote for dev",
            "claude wrote for ops",
        ]
        assert "source mcp" in static_text(app, "#activity-filter")
        await pilot.press("s")
        await settle(pilot)
        await choose(pilot, "mcp:claude")
        assert [e.text for e in shown(app)] == ["claude wrote for dev", "claude wrote for ops"]
        await pilot.press("a")  # the app's agent only
        await settle(pilot)
        assert [e.text for e in shown(app)] == ["claude wrote for ops"]
        assert f"agent {OPS}" in static_text(app, "#activity-filter")
        # A write of another source stays out; one that matches comes in live.
        with provenance.writing_as("cli"):
            empty_store.put(OPS, "the shell again")
        with provenance.writing_as("mcp:claude"):
            empty_store.put(OPS, "claude again")
        await wait_until(pilot, lambda: len(shown(app)) == 2, what="the matching write")
        assert [e.text for e in shown(app)] == ["claude again", "claude wrote for ops"]
        # An agent with no writes from that source: the list says so.
        app.agent = "nobody-agent"
        await settle(pilot)
        assert shown(app) == []
        assert "No write matches source mcp:claude · agent nobody-agent" in screen_text(app)
        await pilot.press("a", "s")
        await settle(pilot)
        await choose(pilot, "*")
        assert len(shown(app)) == 6


async def test_enter_opens_the_fact_or_says_it_was_pruned(empty_store: LmdbStore) -> None:
    kept = empty_store.put(OPS, "a fact that stays")
    gone = empty_store.put(OPS, "a fact that will be pruned")
    app = make_app(empty_store)
    async with running(app) as pilot:
        await show_activity(pilot)
        assert cursor_entry(app).fact_id == gone.id
        empty_store.delete([gone.id])
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, FactDetailScreen)
        assert any("pruned since" in message for _s, message in notifications(app))
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, FactDetailScreen)
        assert app.screen.fact_id == kept.id
        assert "a fact that stays" in screen_text(app)


async def test_enter_on_a_consolidation_or_revert_selects_its_cycle_in_the_journal(
    demo_store: LmdbStore,
) -> None:
    record = await Cycle(demo_store, OPS, LocalSummariser()).run()
    assert record.outcome == "applied"
    revert = demo_store.revert(record.cycle_id)
    app = make_app(demo_store)
    async with running(app) as pilot:
        journal = app.query_one("#journal-pane", JournalPane)
        for action, cycle_id in (
            ("revert", revert.cycle_id),
            ("consolidation", record.cycle_id),
        ):
            await show_activity(pilot)
            index = next(i for i, e in enumerate(shown(app)) if e.action == action)
            assert shown(app)[index].cycle_id == cycle_id
            pane(app).feed_list.cursor = index
            await pilot.press("enter")
            await settle(pilot)
            assert app.query_one("#tabs", TabbedContent).active == "journal"
            selected = journal.selected()
            assert selected is not None and selected.cycle_id == cycle_id, action
            assert app.focused is app.query_one("#journal-table", DataTable)


async def test_enter_on_a_bulk_write_says_it_names_no_single_fact(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await show_activity(pilot)
        # the demo's last bulk entry: the pairs it held for review, one entry per agent
        entry = cursor_entry(app)
        assert entry.text == f"held {entry.count} duplicates or possible updates for review"
        assert entry.count > 1 and not entry.fact_id
        await pilot.press("enter")
        await settle(pilot)
        assert len(app.screen_stack) == 1
        assert any("names no single fact" in m for _s, m in notifications(app))


async def test_hostile_text_is_shown_literally(empty_store: LmdbStore) -> None:
    for text, _shown in HOSTILE:
        empty_store.put("inject-agent", text)
    with provenance.writing_as("mcp:[red]x[/]"):
        empty_store.put("inject-agent", "from a strange client")
    app = make_app(empty_store, agent="inject-agent")
    async with running(app, size=(200, 40)) as pilot:
        await show_activity(pilot)
        assert app.is_running
        text = screen_text(app)
        for _stored, literal_text in HOSTILE:
            assert literal_text in text
        assert "mcp:[red]x[/]" in text
        assert "mcp:[red]x[/]" in static_text(app, "#activity-row")  # the newest


def consecutive(entries: list[ActivityEntry]) -> bool:
    """Write numbers one after the other, newest first: no gap, no repeat."""
    seqs = [e.seq for e in entries]
    return seqs == list(range(seqs[0], seqs[0] - len(seqs), -1))


async def test_a_long_feed_is_held_in_a_bounded_window_read_a_page_at_a_time(
    empty_store: LmdbStore,
) -> None:
    total = HELD_MAX + 2500

    def many(tx: Any) -> None:
        for n in range(total):
            tx.log("add", OPS, text=f"logged {n}")

    empty_store.write(many)
    app = make_app(empty_store)
    async with running(app) as pilot:
        await show_activity(pilot)
        first = len(shown(app))
        assert first < total
        assert f"{first}+ writes" in static_text(app, "#activity-info")
        # Down to the oldest write: older pages come in, the newest rows go out.
        for _ in range(100):
            if shown(app)[-1].seq == 1:
                break
            await pilot.press("end")
            await settle(pilot)
        assert shown(app)[-1].seq == 1
        assert len(shown(app)) <= HELD_MAX
        assert consecutive(shown(app))
        # New writes while down there are counted, not drawn.
        for word in ("pears", "plums", "figs"):  # no pair among them: no review entries
            empty_store.put(OPS, f"{word} at the bottom")
        await wait_until(
            pilot, lambda: "3 new" in static_text(app, "#activity-info"), what="the count"
        )
        assert shown(app)[-1].seq == 1
        # Going back up reads the rows let go of, just above the first one held.
        top = shown(app)[0].seq
        pane(app).feed_list.cursor = 5
        await settle(pilot)
        assert shown(app)[0].seq > top
        assert consecutive(shown(app))
        assert len(shown(app)) <= HELD_MAX + PAGE
        # home: the newest writes again.
        await pilot.press("home")
        await settle(pilot)
        assert shown(app)[0].text == "figs at the bottom"
        assert consecutive(shown(app))
        assert "new" not in static_text(app, "#activity-info")


async def test_a_filter_looks_through_a_long_feed_a_step_at_a_time(empty_store: LmdbStore) -> None:
    total = 4 * SCAN_STEP + 10

    def many(tx: Any) -> None:
        for n in range(total):
            tx.log("add", OPS, text=f"logged {n}")

    empty_store.write(many)
    with provenance.writing_as("mcp:claude"):
        empty_store.put(DEV, "the only write for dev, the oldest but one")  # newest
    app = make_app(empty_store, agent="nobody-agent")
    async with running(app) as pilot:
        await show_activity(pilot)
        await pilot.press("a")  # only nobody-agent's writes: there are none
        await wait_until(
            pilot,
            lambda: "No write matches agent nobody-agent" in screen_text(app),
            what="the end of the search",
        )
        assert shown(app) == []
        assert app.is_running
