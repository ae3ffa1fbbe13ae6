"""The real app under `run_test()` at the sizes, themes and colour settings people use:
the fact rows, the consolidation diff and the Status weight histogram must be on screen,
and `? Help` in the footer, everywhere. (TERM, the locale and the colour depth need a
real terminal: test_tmux.py runs those.)"""

from __future__ import annotations

from typing import Any

import pytest
from rich.style import Style

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.tui.widgets.fact_rows import FactRows
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    running,
    screen_lines,
    screen_text,
    settle,
    wait_until,
)

# (id, size, environment, theme)
CASES = [
    ("60x20", (60, 20), {}, None),
    ("80x24", (80, 24), {}, None),
    ("300x80", (300, 80), {}, None),
    ("80x24-no-color", (80, 24), {"NO_COLOR": "1"}, None),
    ("80x24-light", (80, 24), {}, "textual-light"),
    ("60x20-no-color-light", (60, 20), {"NO_COLOR": "1"}, "textual-light"),
]


def on_screen(app: Any, text: str) -> bool:
    return any(text in line for line in screen_lines(app))


@pytest.mark.parametrize(
    ("size", "env", "theme"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_every_screen_works(
    demo_store: LmdbStore,
    monkeypatch: pytest.MonkeyPatch,
    size: tuple[int, int],
    env: dict[str, str],
    theme: str | None,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    newest = demo_store.list_facts(OPS)[0].text
    app = make_app(demo_store)
    assert app.no_color == ("NO_COLOR" in env)
    width, _height = size
    async with running(app, size=size) as pilot:
        if theme:
            app.theme = theme
        await settle(pilot)
        # Facts: the column titles, the newest fact (cut to the width), the help key
        lines = screen_lines(app)
        assert any(line.startswith("pin") and "weight" in line for line in lines)
        assert on_screen(app, newest[: max(width - 40, 20)])
        assert "? Help" in lines[-1]

        # Consolidate, stepped to review: what goes, and (from 80×24 up) what replaces it
        await pilot.press("3")
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        assert on_screen(app, "would consume 2 of 32")
        assert on_screen(app, f"− {STAGING_A}"[: width - 6])
        if width >= 80:
            assert on_screen(app, f"+ {STAGING_B}")
        assert "? Help" in screen_lines(app)[-1]

        # Status: the weight histogram (scrolled to on a short terminal)
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("end")
        await wait_until(pilot, lambda: on_screen(app, "0.9–1.0"), what="the histogram")
        assert on_screen(app, f"Weights of {OPS}'s live facts")
        assert "? Help" in screen_lines(app)[-1]
        assert "Traceback" not in screen_text(app)
    assert app.return_code == 0


async def test_every_segment_of_a_list_line_has_a_style(demo_store: LmdbStore) -> None:
    """Textual's NO_COLOR filter reads every segment's style: none may be None, not in the
    rows, the cursor row, the padding, the empty list's text or the blank lines below."""
    await Cycle(demo_store, OPS, LocalSummariser()).run()  # two tombstones
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:

        def check(widget: Any) -> None:
            for y in range(widget.size.height):
                for segment in widget.render_line(y):
                    assert isinstance(segment.style, Style), (y, segment)

        facts: Any = app.query_one("#fact-list")
        check(facts)  # full rows, the cursor row
        facts.set_source(FactRows([], demo_store.find_many, demo_store.now()))
        check(facts)  # the empty list's text and blank lines
        await pilot.press("2")
        await settle(pilot)
        check(app.query_one("#tomb-list"))  # two rows, then blank lines


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_the_cursor_row_stands_out(demo_store: LmdbStore, theme: str) -> None:
    """The cursor row's background is not the other rows' (the list's colours go under
    each row's segments; the cursor's must still go over them)."""
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        app.theme = theme
        await settle(pilot)
        facts: Any = app.query_one("#fact-list")

        def backgrounds(y: int) -> set[Any]:
            return {segment.style.bgcolor for segment in facts.render_line(y)}

        assert facts.cursor == 0
        cursor, other = backgrounds(0), backgrounds(1)
        assert len(cursor) == 1 and len(other) == 1, (cursor, other)
        assert cursor != other
