"""Small terminals: everything a pane needs fits 80×24, and 60×20 degrades gracefully
(the footer keeps `? Help`, dialogs stay inside the screen, the journal's header is
whole, the replay and the proposal diff keep room for the diff)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.containers import Vertical
from textual.widgets import DataTable

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.tui.app import TABS, GraymatterApp
from graymatter_tui.tui.screens.consolidate import ConsolidatePane
from graymatter_tui.tui.screens.facts import FactsPane
from graymatter_tui.tui.screens.journal import CycleDiffScreen, JournalPane
from graymatter_tui.tui.screens.review import ReviewPane
from graymatter_tui.tui.widgets.key_bar import Key, KeyBar, plan
from graymatter_tui.tui.widgets.top_bar import shorten_path
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    notifications,
    open_store,
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
    demo_store: LmdbStore, tab: str
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


async def test_at_80_columns_the_review_keys_fit_whole(demo_store: LmdbStore) -> None:
    """Review's two keys are short: the full footer (with the palette key) fits."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        shown = footer_keys(app)
        for binding in ReviewPane.BINDINGS:
            assert binding.action in shown, binding.action  # type: ignore[union-attr]
        assert "a Approve  x Reject  ? Help" in screen_lines(app)[-1]


async def test_the_footer_keeps_its_key_widgets_and_writes_new_keys_into_them(
    demo_store: LmdbStore,
) -> None:
    """Textual asks the footer to recompose on every change of bindings (each focus move);
    one that would show the same keys changes nothing, one that would not writes the new
    keys into the widgets it has (and mounts only the palette key, not shown before)."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        before = list(app.screen.query("FooterKey"))
        for _ in range(3):
            app.screen.bindings_updated_signal.publish(app.screen)
            await settle(pilot)
        assert list(app.screen.query("FooterKey")) == before
        await pilot.press(REVIEW_KEY)
        await settle(pilot)
        after = footer_keys(app)
        for binding in ReviewPane.BINDINGS:
            assert binding.action in after, binding.action  # type: ignore[union-attr]
        new = set(after.values()) - set(before)
        assert [key.action for key in new] == ["command_palette"]  # type: ignore[attr-defined]
        await pilot.press("1")
        await settle(pilot)
        assert set(footer_keys(app).values()) == set(before)
        assert set(footer_keys(app)) == {key.action for key in before}  # type: ignore[attr-defined]


def shown_keys(app: GraymatterApp) -> list[tuple[str, str, str, bool, str]]:
    """What each footer key on screen says and does, left to right."""
    keys = sorted(footer_keys(app).values(), key=lambda key: key.region.x)
    return [
        (key.key, key.key_display, key.description, key.has_class("-disabled"), key.action)
        for key in keys
    ]


@pytest.mark.parametrize("size", [(60, 20), (80, 24), (200, 40)], ids=["60", "80", "200"])
async def test_a_footer_written_in_place_reads_as_one_built_afresh(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        bar = app.query_one(KeyBar)
        tabs = [str(n) for n in range(1, len(TABS) + 1)]
        # Every tab, back and forth, then focus moves inside Facts (filter, list, tab bar).
        for tab in [*tabs, "1", REVIEW_KEY, "3", "1", "slash", "escape", "tab", "tab"]:
            await pilot.press(tab)
            await settle(pilot)
            in_place = shown_keys(app), screen_lines(app)[-1]
            old = set(app.screen.query("FooterKey"))
            bar._shown = None  # as before its first compose: Textual's own rebuild
            bar.call_later(bar.recompose)
            await settle(pilot)
            assert not set(app.screen.query("FooterKey")) & old
            assert (shown_keys(app), screen_lines(app)[-1]) == in_place, tab


@pytest.mark.parametrize("tab", ["1", "2", "3", "4", "5", REVIEW_KEY])
async def test_at_60_columns_help_is_always_in_the_footer(demo_store: LmdbStore, tab: str) -> None:
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
    demo_store: LmdbStore, size: tuple[int, int], which: str
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


async def applied(store: LmdbStore) -> Any:
    record = await Cycle(store, OPS, LocalSummariser()).run()
    assert record.outcome == "applied"
    return record


async def test_journal_fits_80_columns_and_gives_the_whole_id(demo_store: LmdbStore) -> None:
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


async def test_u_on_a_cycle_that_applied_nothing_warns_before_asking(demo_store: LmdbStore) -> None:
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


async def test_replay_at_80x24_shows_the_diff(demo_store: LmdbStore) -> None:
    await applied(demo_store)
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await press_each(pilot, "4", "enter")
        assert isinstance(app.screen, CycleDiffScreen)
        lines = screen_lines(app)
        assert any(f"− {STAGING_A}" in line for line in lines)
        assert any(f"+ {STAGING_B}" in line for line in lines)
        assert any("2 consumed" in line for line in lines)


async def test_consolidate_at_80x24_shows_the_summary_after_review(demo_store: LmdbStore) -> None:
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
    demo_store: LmdbStore, size: tuple[int, int]
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


def top_bar_path(app: GraymatterApp) -> str:
    """The store's location as the top bar shows it (after the last " · ")."""
    line = screen_lines(app)[0]
    assert cell_len(line) == app.size.width
    return line.rstrip().rsplit(" · ", 1)[-1]


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_the_top_bar_shortens_a_long_path_in_its_middle(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    deep = tmp_path.joinpath(*(f"level-{n}-of-a-deep-tree" for n in range(8)), "stores", "proj-x")
    assert len(str(deep)) > 200
    store = open_store(deep)
    try:
        store.put(OPS, "One fact.")
        app = make_app(store)
        async with running(app, size=size) as pilot:
            line = screen_lines(app)[0]
            assert f"agent {OPS} (1 live)" in line
            shown = top_bar_path(app)
            head, tail = shown.split("…")  # one cut, in the middle
            assert str(deep).startswith(head) and str(deep).endswith(tail)
            assert tail.endswith("/stores/proj-x") and head.startswith("/")
            # Every cell the line has left is used.
            assert cell_len(line.rstrip()) >= size[0] - len("level-0-of-a-deep-tree/")
            await pilot.resize_terminal(size[0] + 40, size[1])
            await settle(pilot)
            wider = top_bar_path(app)
            assert len(wider) > len(shown) and wider.endswith("/stores/proj-x")
    finally:
        store.close()


async def test_the_top_bar_shows_a_path_that_fits_whole(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    try:
        app = make_app(store)
        async with running(app, size=(200, 60)):
            assert top_bar_path(app) == str(tmp_path / "s")
    finally:
        store.close()


@pytest.mark.parametrize(
    "path",
    [
        "/home/u/work/clients/acme/stores/project-x",
        "postgresql://graymatter@db.internal.example.com:5432/graymatter_production",
        "/srv/データ/ストア/記憶",  # wide characters: two cells each
        "relative-name-without-any-separator-at-all",
    ],
)
def test_a_shortened_path_keeps_its_start_and_end_at_every_width(path: str) -> None:
    for cells in range(1, cell_len(path) + 5):
        shown = shorten_path(path, cells)
        assert cell_len(shown) <= cells, (cells, shown)
        if shown == path:
            assert cell_len(path) <= cells
            continue
        head, tail = shown.split("…")
        assert path.startswith(head) and path.endswith(tail), (cells, shown)
        assert tail or cells < 3, (cells, shown)  # the end shows once a character fits
        last = path.rsplit("/", 1)[-1]
        if cells >= cell_len("…/" + last):
            assert tail.endswith("/" + last) or tail == last, (cells, shown)
