"""The Facts tab: the list, the filter, the sort, the detail modal and every curation key
(p pin/unpin, a add, e revise, x retire), checked on screen and in the store."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import msgspec
import pytest
from textual.widgets import Input, TextArea

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import RETIRED
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.screens.dialogs import ConfirmScreen, TextEntryScreen
from tests.tui.helpers import (
    FIXED,
    FIXED_TEXT,
    OPS,
    STAGING_A,
    STAGING_B,
    cursor_fact_id,
    detail_fields,
    fact_rows,
    make_app,
    notifications,
    running,
    screen_lines,
    screen_text,
    settle,
    static_text,
    visible_texts,
    wait_until,
)


def everything(store: LmdbStore) -> dict[str, object]:
    return {f.id: msgspec.to_builtins(f) for f in store.all_facts()}


def row_of(app: object, text: str) -> str:
    """The screen line that shows `text` (the fact rows are drawn line by line)."""
    matches = [line for line in screen_lines(app) if text in line]  # type: ignore[arg-type]
    assert matches, f"{text!r} is not on screen"
    return matches[0]


async def test_list_filter_and_sort(demo_store: LmdbStore) -> None:
    live = demo_store.list_facts(OPS, "live")
    app = make_app(demo_store)
    async with running(app) as pilot:
        # newest first: the ids (ULIDs, time-ordered) descend, and the screen agrees
        assert fact_rows(app).ids == [f.id for f in live]
        assert fact_rows(app).ids == sorted(fact_rows(app).ids, reverse=True)
        created = [fact_rows(app).fact(i).created_at for i in range(100)]  # type: ignore[union-attr]
        assert created == sorted(created, reverse=True)
        assert static_text(app, "#facts-info") == "100 live · sorted by recency"
        lines = screen_lines(app)
        first_row = next(i for i, line in enumerate(lines) if live[0].text in line)
        assert live[1].text in lines[first_row + 1]
        assert "1d" in row_of(app, live[0].text)  # created one day before the fixed clock

        # the filter narrows case-insensitively as you type
        await pilot.press("slash")
        assert app.focused is app.query_one("#filter", Input)
        await pilot.press(*"STAGING")
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("9 of 100"))
        staging = [f.text for f in live if "staging" in f.text.casefold()]
        assert len(staging) == 9
        assert visible_texts(app) == staging
        shown = screen_text(app)
        for text in (STAGING_A, STAGING_B, "Staging DB port is 5432."):
            assert text in shown
        assert live[0].text not in shown
        await pilot.press("enter")
        assert app.focused is app.query_one("#fact-list")

        # clearing the filter restores the whole list
        await pilot.press("slash", *["backspace"] * len("STAGING"), "escape")
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("100 live"))
        assert app.focused is app.query_one("#fact-list")
        assert visible_texts(app) == [f.text for f in live]

        # s sorts by weight, heaviest first; s again goes back to recency
        await pilot.press("s")
        await pilot.pause()
        assert static_text(app, "#facts-info") == "100 live · sorted by weight"
        weights = demo_store.weights(OPS, "live")
        ids = fact_rows(app).ids
        assert [weights[i] for i in ids] == sorted(weights.values(), reverse=True)
        heaviest = demo_store.require(ids[0])
        assert heaviest.weight == max(weights.values())
        # the list starts at its top, the cursor on the heaviest fact
        assert cursor_fact_id(app) == heaviest.id
        assert screen_text(app).index(heaviest.text) < screen_text(app).index(
            demo_store.require(ids[1]).text
        )
        await pilot.press("s")
        await pilot.pause()
        assert fact_rows(app).ids == [f.id for f in live]
        assert cursor_fact_id(app) == live[0].id


def cursor_in_view(app: Any) -> bool:
    """The cursor's row is one of the rows the list shows, and its text is on screen."""
    fact_list = app.query_one("#fact-list")
    top, height = fact_list.scroll_offset.y, fact_list.scrollable_content_region.height
    text = fact_rows(app).fact(fact_list.cursor).text[:30]
    return bool(top <= fact_list.cursor < top + height and text in screen_text(app))


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_a_new_sort_shows_its_direction_and_starts_at_the_top(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    """The header marks the sorted column with its direction; weight starts from the
    heaviest; wherever the cursor was, a new sort shows the list from its top with the
    cursor on its first row (as a new filter does)."""
    weights = demo_store.weights(OPS, "live")
    newest = demo_store.list_facts(OPS, "live")[0]
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        header = static_text(app, "#facts-header")
        assert "age ↑" in header and "↓" not in header
        for away, sort, arrow in (("end", "weight", "weight ↓"), ("pagedown", "recency", "age ↑")):
            await pilot.press(away, away)
            await settle(pilot)
            assert app.query_one("#fact-list").cursor > 0
            await pilot.press("s")
            await settle(pilot)
            header = static_text(app, "#facts-header")
            assert arrow in header and header.count("↑") + header.count("↓") == 1, header
            # The title stands over its column: it ends where the column's values end.
            first = row_of(app, fact_rows(app).fact(0).text[:30])  # type: ignore[union-attr]
            columns = re.match(r"^.{11}(?P<weight> \d\.\d\d)(?P<recency> +\d+(mo|m|h|d|y)) ", first)
            assert columns is not None, first
            assert header.index(arrow) + len(arrow) == columns.end(sort), (header, first)
            assert app.query_one("#fact-list").cursor == 0
            assert app.query_one("#fact-list").scroll_offset.y == 0
            assert cursor_in_view(app)
            ids = fact_rows(app).ids
            if sort == "weight":
                assert [weights[i] for i in ids] == sorted(weights.values(), reverse=True)
            else:
                assert ids[0] == newest.id


async def test_detail_shows_every_field_and_p_pins_then_unpins(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("down", "down")
        fact_id = cursor_fact_id(app)
        fact = demo_store.require(fact_id)
        assert not fact.pinned

        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FactDetailScreen)
        fields = detail_fields(app)
        assert fields["id"] == fact.id
        assert fields["agent"] == OPS
        assert fields["state"] == "live"
        assert fields["weight"] == f"{fact.weight:.4f}"
        assert fields["created"] == fact.created_at
        assert fact.accessed_at in fields["accessed"]
        times = "time" if fact.access_count == 1 else "times"
        assert f"({fact.access_count} {times})" in fields["accessed"]
        assert fields["pinned at"] == "—"
        assert fields["cycle"] == "—"
        assert static_text(app, "#detail-text") == fact.text
        assert f"Fact {fact.id}" in static_text(app, "#detail-title")
        assert "No receipt chain" in static_text(app, "#detail-chain-title")
        shown = screen_text(app)
        assert fact.text in shown and fact.created_at in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, FactDetailScreen)

        await pilot.press("p")
        await settle(pilot)
        pinned = demo_store.require(fact_id)
        assert pinned.pinned and pinned.pinned_at == FIXED_TEXT.replace("Z", ".000000Z")
        assert cursor_fact_id(app) == fact_id
        assert "★" in row_of(app, fact.text)
        await pilot.press("enter")
        await pilot.pause()
        assert detail_fields(app)["state"] == "live, pinned"
        await pilot.press("escape", "p")
        await settle(pilot)
        assert not demo_store.require(fact_id).pinned
        assert demo_store.require(fact_id).pinned_at is None
        assert "★" not in row_of(app, fact.text)


async def test_a_adds_and_e_revises(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, TextEntryScreen)
        await pilot.press(*"Added in the TUI")
        await pilot.press("ctrl+s")
        await settle(pilot)
        added = [f for f in demo_store.list_facts(OPS) if f.text == "Added in the TUI"]
        assert len(added) == 1
        assert added[0].agent_id == OPS and added[0].is_live
        assert fact_rows(app).ids[0] == added[0].id  # newest first
        assert "Added in the TUI" in screen_text(app)
        assert "(101 live)" in static_text(app, "#topbar")

        # revise the fact under the cursor: the text area starts with its text
        await pilot.press("down")
        old = demo_store.require(cursor_fact_id(app))
        await pilot.press("e")
        await pilot.pause()
        area = app.screen.query_one("#entry-text", TextArea)
        assert area.text == old.text
        await pilot.press("end", *" Revised")
        await pilot.press("ctrl+s")
        await settle(pilot)
        tomb = demo_store.require(old.id)
        assert tomb.is_tombstone
        revision = demo_store.require(tomb.superseded_by)
        assert revision.text == old.text + " Revised"
        assert revision.is_live and revision.agent_id == OPS
        assert old.id not in fact_rows(app).ids
        assert revision.id in fact_rows(app).ids
        assert old.text + " Revised" in screen_text(app)
        assert old.id in demo_store.fact_ids(OPS, "tombstones")


async def test_x_then_n_changes_nothing_and_x_then_y_retires(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        target = cursor_fact_id(app)
        text = demo_store.require(target).text
        before = everything(demo_store)
        generation = demo_store.generation()

        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "Retire this fact?" in screen_text(app)
        assert text in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert everything(demo_store) == before
        assert demo_store.generation() == generation
        assert cursor_fact_id(app) == target

        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        retired = demo_store.require(target)
        assert retired.superseded_by == RETIRED
        assert target not in fact_rows(app).ids
        assert text not in screen_text(app)
        assert "(99 live)" in static_text(app, "#topbar")

        # a pinned fact is refused before any question is asked, and nothing changes
        pinned_id = next(f.id for f in demo_store.list_facts(OPS) if f.pinned)
        await pilot.press("s")  # weight 1.0: the heaviest fact, at the top
        assert cursor_fact_id(app) == pinned_id
        before = everything(demo_store)
        await pilot.press("x")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert any(
            severity == "warning" and "pinned: unpin it (p) before retiring it" in message
            for severity, message in notifications(app)
        )
        await pilot.press("y")
        await settle(pilot)
        assert everything(demo_store) == before

        await pilot.press("2")
        await pilot.pause()
        assert "retired by agent" in screen_text(app)


async def test_cursor_stays_on_the_fact_after_a_write_while_filtered(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("slash", *"staging", "enter")
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("9 of 100"))
        await pilot.press("down", "down")
        target = cursor_fact_id(app)
        await pilot.press("p")
        await settle(pilot)
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("9 of 100"))
        assert demo_store.require(target).pinned
        assert cursor_fact_id(app) == target


async def test_new_facts_above_the_cursor_come_into_view(demo_store: LmdbStore) -> None:
    """A list at its top stays at its top: facts written while another tab was open, or
    while the list was sorted by weight, are on screen above the cursor's fact."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        newest = cursor_fact_id(app)
        await pilot.press("2")
        await settle(pilot)
        demo_store.put(OPS, "Written while Tombstones was open (one).")
        demo_store.put(OPS, "Written while Tombstones was open (two).")
        await pilot.pause(2 * app.poll_seconds)
        await pilot.press("1")
        await settle(pilot)
        assert cursor_fact_id(app) == newest  # the cursor stayed on its fact
        shown = screen_text(app)
        assert "open (one)." in shown and "open (two)." in shown
        # (rows are cut at 80 columns)
        assert shown.index("open (two).") < shown.index(demo_store.require(newest).text[:40])

        await pilot.press("s")
        await settle(pilot)
        written = demo_store.put(OPS, "Written while sorted by weight.")
        await pilot.pause(2 * app.poll_seconds)
        await pilot.press("s")
        await settle(pilot)
        assert cursor_fact_id(app) == written.id  # back to recency: from the top
        shown = screen_text(app)
        for text in ("sorted by weight.", "open (one).", "open (two)."):
            assert text in shown, text


async def test_a_scrolled_list_keeps_the_cursor_on_its_screen_line(demo_store: LmdbStore) -> None:
    """Away from the top, a new fact above must not move what the reader is looking at."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("pagedown", "pagedown", "up", "up")
        await settle(pilot)
        target = cursor_fact_id(app)
        text = demo_store.require(target).text[:40]  # rows are cut at 80 columns
        line = next(i for i, row in enumerate(screen_lines(app)) if text in row)
        demo_store.put(OPS, "Arrived above the view.")
        await wait_until(pilot, lambda: len(fact_rows(app)) == 101, what="the new fact")
        await settle(pilot)
        assert cursor_fact_id(app) == target
        assert text in screen_lines(app)[line]


async def test_ages_follow_the_clock_without_a_store_read(store_path: object) -> None:
    now = [FIXED]
    store = LmdbStore.open(store_path, clock_fn=lambda: now[0])  # type: ignore[arg-type]
    try:
        create_demo(store)
        newest = store.list_facts(OPS)[0].text
        app = make_app(store)
        app.clock_seconds = 0.2
        async with running(app, size=(100, 24)) as pilot:
            assert "   1d " in row_of(app, newest)
            rows, generation = fact_rows(app), store.generation()
            now[0] = FIXED + timedelta(days=2)
            await wait_until(pilot, lambda: "   3d " in row_of(app, newest), what="3d")
            assert fact_rows(app) is rows  # redrawn, not reloaded
            assert store.generation() == generation
    finally:
        store.close()


async def test_column_titles_sit_over_their_columns(demo_store: LmdbStore) -> None:
    fact = demo_store.list_facts(OPS)[0]
    app = make_app(demo_store)
    async with running(app, size=(100, 24)):
        lines = screen_lines(app)
        header = next(line for line in lines if line.startswith("pin"))
        row = row_of(app, fact.text)
        number = f"{fact.weight:4.2f}"
        assert header.index("weight") + len("weight") == row.index(number) + len(number)
        age = row.index(" 1d ") + len(" 1d")
        assert header.index("age ↑") + len("age ↑") == age  # sorted by recency: newest first
        uses = row.index(f" {fact.access_count} ", age) + 1 + len(str(fact.access_count))
        assert header.index("uses") + len("uses") == uses
        assert header.index("text") == row.index(fact.text)
        assert row.index("█") >= len("pin")  # the weight bar is right of the pin column


async def test_a_filter_without_a_match_says_so(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("slash", *"no such [b]thing")
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("0 of 100"))
        shown = screen_text(app)
        assert "No live fact matches “no such [b]thing”." in shown
        assert "No live facts for this agent." not in shown


async def test_no_sideways_scrollbar_after_a_filter(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        fact_list: Any = app.query_one("#fact-list")
        await pilot.press("slash", *"staging")
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("9 of 100"))
        await pilot.press("escape")
        await pilot.press("slash", *["backspace"] * len("staging"), "escape")
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("100 live"))
        await settle(pilot)
        assert not fact_list.show_horizontal_scrollbar
        assert fact_list.max_scroll_x == 0


async def test_e_on_text_with_control_characters_edits_what_is_shown(
    empty_store: LmdbStore,
) -> None:
    """The editor holds the text as shown (placeholders for controls, which it would
    otherwise draw raw): saving it untouched revises nothing; an edit saves what is shown."""
    stored = "key \x1b]52;c;aGk=\x07 here\nsecond line"
    fact = empty_store.put(OPS, stored)
    app = make_app(empty_store)
    async with running(app) as pilot:
        await pilot.press("e")
        await pilot.pause()
        area = app.screen.query_one("#entry-text", TextArea)
        assert area.text == "key ␛]52;c;aGk=␇ here\nsecond line"
        generation = empty_store.generation()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert empty_store.generation() == generation
        assert empty_store.require(fact.id).is_live

        await pilot.press("e")
        await pilot.pause()
        area = app.screen.query_one("#entry-text", TextArea)
        area.move_cursor(area.document.end)
        await pilot.press(*" (rotated)")
        await pilot.press("ctrl+s")
        await settle(pilot)
        revision = empty_store.require(empty_store.require(fact.id).superseded_by)
        assert revision.text == "key ␛]52;c;aGk=␇ here\nsecond line (rotated)"
