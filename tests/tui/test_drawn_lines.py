"""Rich content drawn off the UI thread (`tui/widgets/drawn_lines.py`) shows exactly as
the same content given to a Static, and its widget says when it is no longer the width
the lines were drawn at."""

from __future__ import annotations

import pytest
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static

from graymatter_tui.tui.widgets.drawn_lines import DrawnStatic, draw_lines


def content() -> RenderableType:
    """Tables with borders, styles, a cell that wraps, wide characters, dim text, and an
    emoji code (the app's console leaves it as written; a default one would replace it)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", justify="right")
    grid.add_column()
    grid.add_row("store", "/a/very/long/path/" * 6 + "store")
    grid.add_row("agents", Text("日本語のエージェント · ops", style="italic"))
    agents = Table(title="Agents", title_justify="left", expand=False)
    for column in ("agent", "live", "avg weight"):
        agents.add_column(column, justify="left" if column == "agent" else "right")
    agents.add_row("ops-agent :rocket:", "1,204", "0.731")
    agents.add_row("emoji 🚀 agent", "3", "0.100")
    bars = Text("\n", style="bold")
    bars.append("  0.0–0.1 ")
    bars.append("█" * 12, style="red")
    bars.append(" 7\n", style="dim")
    return Group(grid, Text(""), agents, bars)


class Side(App[None]):
    CSS = "Static { width: 1fr; color: $text; background: $surface; }"

    def compose(self) -> ComposeResult:
        yield Static(content(), id="given")
        yield DrawnStatic(id="drawn")


def lines_of(widget: Static) -> list[list[tuple[str, object]]]:
    return [
        [(segment.text, segment.style) for segment in widget.render_line(y)]
        for y in range(widget.size.height)
    ]


@pytest.mark.parametrize("columns", [24, 60, 120])
async def test_lines_drawn_elsewhere_show_as_the_content_itself(columns: int) -> None:
    app = Side()
    async with app.run_test(size=(columns, 60)) as pilot:
        await pilot.pause()
        drawn = app.query_one("#drawn", DrawnStatic)
        width = drawn.content_size.width
        drawn.show(draw_lines(content(), app.console, app.console_options, width))
        await pilot.pause()
        given = app.query_one("#given", Static)
        assert drawn.size == given.size
        assert lines_of(drawn) == lines_of(given)
        assert any("Agents" in "".join(t for t, _s in line) for line in lines_of(drawn))


class Resizes(App[None]):
    def compose(self) -> ComposeResult:
        yield DrawnStatic(id="drawn")

    asked = 0

    def on_drawn_static_resized(self, message: DrawnStatic.Resized) -> None:
        self.asked += 1


async def test_the_widget_asks_for_lines_at_its_new_width() -> None:
    app = Resizes()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        drawn = app.query_one("#drawn", DrawnStatic)
        drawn.show(draw_lines(content(), app.console, app.console_options, 80))
        await pilot.pause()
        assert app.asked == 0  # drawn at its width
        await pilot.resize_terminal(100, 24)
        await pilot.pause()
        assert app.asked == 1
        await pilot.resize_terminal(90, 24)  # not drawn again yet: asked once only
        await pilot.pause()
        assert app.asked == 1
        drawn.show(draw_lines(content(), app.console, app.console_options, 70))
        await pilot.pause()
        assert app.asked == 2  # lines of another width than its own
