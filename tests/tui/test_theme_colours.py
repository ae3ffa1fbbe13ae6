"""Colours come from the theme: the parts of a row, the diff, journal outcomes, stage
marks and the histogram take their colours from component classes written with theme
variables, so a light theme and a dark one draw them differently, and NO_COLOR turns
them all grey. Read from the segments the widgets render under `run_test`."""

from __future__ import annotations

from typing import Any

import pytest
from rich.color import Color
from rich.segment import Segment
from textual.color import Color as TextualColor
from textual.widget import Widget

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from tests.tui.helpers import OPS, make_app, running, settle, static_text, wait_until

AGENT = "colour-agent"
LIGHT, DARK = "textual-light", "textual-dark"


def put_rows(store: LmdbStore) -> None:
    store.put_many(
        [
            NewFact(AGENT, "a fact near pruning", weight=0.05),
            NewFact(AGENT, "a healthy fact", weight=0.9),
            NewFact(AGENT, "a pinned fact", pinned=True),
        ]
    )


def widget_lines(widget: Widget) -> list[list[Segment]]:
    return [list(widget.render_line(y)) for y in range(widget.size.height)]


def row_parts(app: Any) -> dict[str, Color | None]:
    """The colours of the pinned star and of a healthy and a low weight bar, as the fact
    list draws them (a row is: pin cell, bar, numbers, text)."""
    parts: dict[str, Color | None] = {}
    for segments in widget_lines(app.query_one("#fact-list")):
        text = "".join(s.text for s in segments)
        if "a pinned fact" in text:
            parts["pinned"] = segments[0].style.color if segments[0].style else None
        elif "a healthy fact" in text:
            parts["weight"] = segments[1].style.color if segments[1].style else None
        elif "near pruning" in text:
            parts["weight_low"] = segments[1].style.color if segments[1].style else None
    assert set(parts) == {"pinned", "weight", "weight_low"}, parts
    return parts


async def test_row_colours_follow_the_theme(empty_store: LmdbStore) -> None:
    put_rows(empty_store)
    app = make_app(empty_store, agent=AGENT)
    seen: dict[str, dict[str, Color | None]] = {}
    async with running(app, size=(80, 24)) as pilot:
        for theme in (DARK, LIGHT, "gruvbox"):
            app.theme = theme
            await settle(pilot)
            seen[theme] = row_parts(app)
    for theme, parts in seen.items():
        assert None not in parts.values(), (theme, parts)
        assert parts["weight"] != parts["weight_low"], (theme, parts)
    for part in ("pinned", "weight", "weight_low"):
        assert seen[DARK][part] != seen[LIGHT][part], part
        assert seen[DARK][part] != seen["gruvbox"][part], part


def colours_of(widget: Widget) -> set[Color]:
    """The text colours a widget draws besides its own (the theme's plain text colour)."""
    plain_text = widget.rich_style.color
    return {
        segment.style.color
        for segments in widget_lines(widget)
        for segment in segments
        if segment.style is not None and segment.style.color not in (None, plain_text)
    }


async def test_diff_journal_stage_and_histogram_colours_follow_the_theme(
    demo_store: LmdbStore,
) -> None:
    """Consumed and summary rows of the diff, a journal outcome, a stage mark and the
    histogram's bars: each drawn in a colour of the current theme."""
    app = make_app(demo_store)
    drawn: dict[str, dict[str, set[Color]]] = {}
    async with running(app, size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        for theme in (DARK, LIGHT):
            app.theme = theme
            await settle(pilot)
            drawn[theme] = {"diff": colours_of(app.query_one("#diff-body"))}
            drawn[theme]["stepper"] = colours_of(app.query_one("#stepper"))
        await pilot.press("g")  # run to the end: an applied cycle for the journal
        await wait_until(pilot, lambda: "Outcome: applied" in static_text(app, "#stepper"))
        await pilot.press("4")
        await settle(pilot)
        for theme in (DARK, LIGHT):
            app.theme = theme
            await settle(pilot)
            drawn[theme]["journal"] = colours_of(app.query_one("#journal-table"))
        await pilot.press("5")
        await wait_until(pilot, lambda: "Weights of" in static_text(app, "#status-body"))
        for theme in (DARK, LIGHT):
            app.theme = theme
            await settle(pilot)
            drawn[theme]["status"] = colours_of(app.query_one("#status-body"))
    for part in ("diff", "stepper", "journal", "status"):
        # Both themes colour something there, and no colour is drawn in both: a fixed
        # colour would be.
        assert drawn[DARK][part] and drawn[LIGHT][part], (part, drawn)
        assert not drawn[DARK][part] & drawn[LIGHT][part], (part, drawn)


def assert_grey_after_filters(app: Any, widget: Widget) -> int:
    """Every colour left once the app's line filters (NO_COLOR's among them) have run is
    a grey, and a pinned star stays bold. Returns how many stars it saw."""
    stars = 0
    background = TextualColor.parse("black")
    for segments in widget_lines(widget):
        for line_filter in app._filters:
            segments = line_filter.apply(segments, background)
        for segment in segments:
            assert segment.style is not None
            for colour in (segment.style.color, segment.style.bgcolor):
                if colour is not None and colour.triplet is not None:
                    red, green, blue = colour.triplet
                    assert red == green == blue, (segment.text, colour)
            if "★" in segment.text:
                assert segment.style.bold
                stars += 1
    return stars


@pytest.mark.parametrize("theme", [DARK, LIGHT])
async def test_no_color_draws_no_colour(
    demo_store: LmdbStore, monkeypatch: pytest.MonkeyPatch, theme: str
) -> None:
    """Under NO_COLOR, Textual's filter turns every colour grey: the rows' coloured parts
    and the diff reach the terminal as greys (the pinned star stays bold, so it still
    stands out)."""
    monkeypatch.setenv("NO_COLOR", "1")
    demo_store.pin(demo_store.list_facts(OPS)[0].id)  # a star on the first row
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        app.theme = theme
        await settle(pilot)
        assert app.no_color
        assert assert_grey_after_filters(app, app.query_one("#fact-list")) == 1
        await pilot.press("3")
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        assert "would consume 2" in static_text(app, "#stepper")
        assert_grey_after_filters(app, app.query_one("#diff-body"))
        assert_grey_after_filters(app, app.query_one("#stepper"))
