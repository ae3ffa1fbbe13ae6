"""Live refresh from another process, untrusted text shown literally, read-only mode, and
store errors the app must survive."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import msgspec
from textual.pilot import Pilot
from textual.widgets import TabbedContent
from textual.widgets._toast import Toast

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.storage import NewFact
from graymatter_tui.tui.screens.detail import FactDetailScreen
from tests.tui.helpers import (
    OPS,
    cursor_fact_id,
    export_to,
    export_via_palette,
    fact_rows,
    make_app,
    notifications,
    open_store,
    remember_elsewhere,
    running,
    screen_lines,
    screen_text,
    settle,
    static_text,
    visible_texts,
    wait_until,
)

INJECT = "inject-agent"
# (stored text, what the screen must show instead)
HOSTILE = [
    ("[bold red]not bold[/]", "[bold red]not bold[/]"),
    ("[@click=app.quit]click me[/]", "[@click=app.quit]click me[/]"),
    ("\x1b]52;c;aGVsbG8=\x07 osc", "␛]52;c;aGVsbG8=␇ osc"),
    ("\x1b[2J clear", "␛[2J clear"),
    ("\u202e rtl", "<U+202E> rtl"),
]


def everything(store: LmdbStore) -> dict[str, Any]:
    return {
        "facts": {f.id: msgspec.to_builtins(f) for f in store.all_facts()},
        "counters": msgspec.to_builtins(store.counters()),
        "records": [msgspec.to_builtins(r) for r in store.records()],
        "generation": store.generation(),
    }


def toasts(app: Any) -> list[str]:
    """The text of every toast (notification) on screen, as drawn."""
    return [toast.render().plain for toast in app.screen.query(Toast)]


def svg_text(svg: str) -> str:
    """The characters of an SVG screenshot (Rich writes spaces as no-break spaces)."""
    return html.unescape(svg).replace("\xa0", " ")


async def test_write_from_another_process_appears_without_a_key(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("down", "down", "down")
        focused_id = cursor_fact_id(app)
        assert fact_rows(app).ids.index(focused_id) == 3
        new_id, _err = await remember_elsewhere(
            OPS, "written elsewhere", "--dir", str(demo_store.path)
        )
        await wait_until(
            pilot,
            lambda: "written elsewhere" in visible_texts(app),
            timeout=10.0,
            what="the poll to pick up the other process's write",
        )
        assert fact_rows(app).ids[0] == new_id  # newest first
        assert cursor_fact_id(app) == focused_id  # the cursor followed its fact
        assert app.query_one("#fact-list").cursor == 4  # type: ignore[attr-defined]
        await wait_until(pilot, lambda: "written elsewhere" in screen_text(app), timeout=30.0)
        assert "(101 live)" in static_text(app, "#topbar")


async def test_hostile_text_is_shown_literally(empty_store: LmdbStore) -> None:
    for stored, _ in HOSTILE:
        empty_store.put(INJECT, stored)
    app = make_app(empty_store, agent=INJECT)
    async with running(app) as pilot:
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "\x07" not in svg and "\u202e" not in svg
        drawn = svg_text(svg)
        for _, shown in HOSTILE:
            assert shown in drawn, shown
        lines = screen_lines(app)
        for _, shown in HOSTILE:
            assert any(line.rstrip().endswith(shown) for line in lines), shown
        assert "\x1b" not in "\n".join(lines)

        # clicking the [@click=app.quit] row only moves the cursor
        row = next(i for i, (text, _) in enumerate(reversed(HOSTILE)) if "@click" in text)
        await pilot.click("#fact-list", offset=(30, row))
        await pilot.pause()
        assert app.is_running
        assert app.query_one("#fact-list").cursor == row  # type: ignore[attr-defined]
        assert fact_rows(app).fact(row).text == HOSTILE[1][0]  # type: ignore[union-attr]

        # the detail modal shows every text literally too
        ids = fact_rows(app).ids
        for index, fact_id in enumerate(ids):
            stored = empty_store.require(fact_id).text
            shown = dict(HOSTILE)[stored]
            await pilot.press("home", *["down"] * index, "enter")
            await pilot.pause()
            assert isinstance(app.screen, FactDetailScreen)
            assert static_text(app, "#detail-text") == shown
            assert shown in screen_text(app)
            assert "\x1b" not in app.export_screenshot()
            await pilot.press("escape")
            await pilot.pause()
        assert app.is_running


async def test_journal_shows_markup_in_agent_names_literally(empty_store: LmdbStore) -> None:
    agent = "[bold red]red agent[/]"
    empty_store.put(agent, "a fact")
    await Cycle(empty_store, agent, None).run()
    app = make_app(empty_store, agent=agent)
    async with running(app) as pilot:
        await pilot.press("4")
        await pilot.pause()
        row = next(line for line in screen_lines(app) if " skipped " in line)
        assert "red agent" in row
        assert "[bold red]red agen" in row  # the column keeps 20 characters


async def test_read_only_mode_changes_nothing(demo_store: LmdbStore) -> None:
    await Cycle(demo_store, OPS, LocalSummariser()).run()  # something for u to try to revert
    before = everything(demo_store)
    app = make_app(demo_store, read_only=True)
    # Every refusal's warning is counted at the end: on a busy machine the seven keys can
    # take longer than a warning's usual 5 s on screen.
    app.NOTIFICATION_TIMEOUT = 120
    async with running(app) as pilot:
        topbar = static_text(app, "#topbar")
        assert "[READ-ONLY]" in topbar
        assert app.query_one("#topbar").has_class("read-only")

        for key in ("p", "a", "e", "x"):
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, FactDetailScreen)
            assert app.screen is app.screen_stack[0], f"{key} opened a dialog"
        await pilot.press("3")
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        assert "No cycle yet." in static_text(app, "#stepper")
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("u")
        await settle(pilot)
        assert app.screen is app.screen_stack[0], "u opened a dialog"
        warnings = [m for severity, m in notifications(app) if severity == "warning"]
        assert warnings and all(m == "Read-only mode: changes are disabled." for m in warnings)
        assert len(warnings) == 7  # p a e x n g u: every one refused
    assert everything(demo_store) == before


async def test_read_only_badge_is_visible_with_a_long_store_path(tmp_path: Path) -> None:
    store = open_store(tmp_path / "memory-stores" / "production-agent-memory-readonly-copy")
    try:
        store.put(OPS, "a fact")
        app = make_app(store, read_only=True)
        async with running(app):
            assert "[READ-ONLY]" in static_text(app, "#topbar")
            assert "READ-ONLY" in screen_lines(app)[0]
    finally:
        store.close()


async def test_store_error_shows_the_error_bar_and_ctrl_r_recovers(demo_store: LmdbStore) -> None:
    path = demo_store.path
    app = make_app(demo_store)
    async with running(app) as pilot:
        errorbar = app.query_one("#errorbar")
        assert not errorbar.display
        app.store.close()  # every read now raises StoreError("the store is closed")
        await wait_until(pilot, lambda: errorbar.display, what="the error bar")
        assert static_text(app, "#errorbar") == " Store error: the store is closed — ctrl+r retries"
        await wait_until(  # drawn at the next frame
            pilot, lambda: "Store error: the store is closed" in screen_text(app), what="drawn"
        )
        assert app.is_running

        # switching tabs and retrying while the store is still closed does not crash
        await pilot.press("2")
        await pilot.pause()
        assert app.query_one("#tabs", TabbedContent).active == "tombstones"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert errorbar.display and app.is_running

        # point the app at the reopened store: ctrl+r clears the error and shows data again
        reopened = open_store(path)
        try:
            app.store = reopened
            await pilot.press("1", "ctrl+r")
            await settle(pilot)
            assert not errorbar.display
            assert app.last_error == ""
            assert ("information", "Reloaded.") in notifications(app)
            assert visible_texts(app) == [f.text for f in reopened.list_facts(OPS)]
            assert "Disk alerts fire at 90% usage" in screen_text(app)
        finally:
            if app.is_running:
                app.exit()
                await pilot.pause()
            reopened.close()


async def test_scrolling_while_the_store_is_unreadable_keeps_the_app_alive(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        app.store.close()
        await wait_until(pilot, lambda: app.query_one("#errorbar").display, what="error bar")
        await pilot.press("end")  # rows 64.. were never fetched
        await pilot.pause()
        assert app.is_running


async def test_export_to_an_unwritable_path_says_so(demo_store: LmdbStore, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "export.jsonl"
    notes = await export_via_palette(demo_store, target)
    assert not target.exists()
    assert any(severity == "error" for severity, _ in notes)


async def test_export_notification_names_the_file_literally(
    demo_store: LmdbStore, tmp_path: Path
) -> None:
    target = tmp_path / "exp[bold]ort.jsonl"
    app = make_app(demo_store)
    async with running(app) as pilot:
        await export_to(pilot, target)
        assert target.exists()
        await wait_until(pilot, lambda: bool(toasts(app)), what="the toast")
        (toast,) = toasts(app)
        assert toast.startswith("exported to")
        assert str(target) in toast


# Every character `neutralise` makes visible (controls, C1, bidi, invisible format
# characters): none may reach the terminal raw, on any screen.
RAW_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)
# An agent name may hold invisible marks (the store refuses only controls and bidi
# overrides in one); a fact's text may hold anything.
SLY_AGENT = "sly\u200fagent\ufeff"
SLY_A = "Vault key \x1b]52;c;aGk=\x07 is \u202ehidden\u202c \x9b2J, \u2066iso\u2069 \x1b[5m."
SLY_B = SLY_A + " Rotate it monthly."


def assert_no_raw_control(app: Any, where: str) -> None:
    drawn = screen_text(app)
    assert not RAW_CONTROL.search(drawn), (where, RAW_CONTROL.findall(drawn))
    svg = svg_text(app.export_screenshot())
    assert not RAW_CONTROL.search(svg), (where, RAW_CONTROL.findall(svg))


async def press_and_check(pilot: Pilot[Any], key: str, where: str) -> None:
    """Press `key`, let the app settle, and check that no screen draws a raw control."""
    await pilot.press(key)
    await settle(pilot)
    assert_no_raw_control(pilot.app, where)


async def test_no_screen_shows_a_raw_control_character(empty_store: LmdbStore) -> None:
    """A fact whose text holds ESC, BEL, C1 and bidi controls, of an agent whose name
    holds invisible marks, shown on every pane, dialog, detail screen and journal entry:
    the placeholders are drawn, the characters never are."""
    # The two weakest facts are the batch (the weaker half), and near-duplicates.
    empty_store.put_many(
        [
            NewFact(SLY_AGENT, "The office opens at nine."),
            NewFact(SLY_AGENT, "Lunch is served at noon."),
            NewFact(SLY_AGENT, SLY_A, weight=0.3),
            NewFact(SLY_AGENT, SLY_B, weight=0.3),
        ]
    )
    app = make_app(empty_store, agent=SLY_AGENT, threshold=0)  # both facts are a batch
    shown = "Vault key ␛]52;c;aGk=␇ is <U+202E>hidden<U+202C>"
    async with running(app) as pilot:
        await settle(pilot)
        assert shown in screen_text(app)
        assert "sly<U+200F>agent<U+FEFF>" in screen_text(app)  # the top bar
        assert_no_raw_control(app, "facts")
        assert "\x1b" in empty_store.require(cursor_fact_id(app)).text  # what e and x show

        for key, where in (
            ("enter", "fact detail"),
            ("e", "revise dialog"),
            ("a", "add dialog"),
            ("x", "retire dialog"),
            ("A", "agent chooser"),
        ):
            await press_and_check(pilot, key, where)
            assert app.screen is not app.screen_stack[0], where
            await pilot.press("escape")
            await settle(pilot)

        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"vault", "enter")
        await wait_until(pilot, lambda: "Vault key ␛" in screen_text(app), what="recall hits")
        assert_no_raw_control(app, "recall preview")
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("3")
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        assert shown in screen_text(app)
        assert_no_raw_control(app, "consolidate at review")
        await pilot.press("g")
        await wait_until(pilot, lambda: "Outcome: applied" in screen_text(app), what="apply")
        assert_no_raw_control(app, "consolidate applied")

        await press_and_check(pilot, "2", "tombstones")
        assert shown in screen_text(app)
        # the summary that replaced it, with its receipt chain
        await press_and_check(pilot, "enter", "summary detail")
        assert isinstance(app.screen, FactDetailScreen)
        await pilot.press("escape")
        await settle(pilot)

        await press_and_check(pilot, "4", "journal")
        await press_and_check(pilot, "enter", "journal replay")
        assert shown in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        await press_and_check(pilot, "u", "revert dialog")
        await pilot.press("escape")

        await pilot.press("5")
        await wait_until(pilot, lambda: "Weights of" in screen_text(app), what="status")
        assert "sly<U+200F>agent<U+FEFF>" in screen_text(app)
        assert_no_raw_control(app, "status")
