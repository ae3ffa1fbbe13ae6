"""A cycle's stage results as rows: a mark, the stage's name, its result. Long results
wrap under the result column (a hanging indent), never under the mark.

The mark says how the stage ended: a green ✓ only for a stage that did its job; a
failed call or a discarded answer or plan (a stale apply, say) gets a ✗."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.table import Table
from rich.text import Text

from graymatter_tui.consolidation.cycle import StageState, stage_state
from graymatter_tui.model import StageResult
from graymatter_tui.textsafe import neutralise

MARKS: dict[StageState, tuple[str, str]] = {
    "done": ("✓", "green"),
    "failed": ("✗", "bold red"),
    "discarded": ("✗", "bold yellow"),
    "skipped": ("–", "yellow"),
    "not_run": ("·", "dim"),
}
TITLE_CELLS = 18


def stage_grid(indent: int = 2, title_cells: int = TITLE_CELLS) -> Table:
    """An empty grid of stage rows: mark, name, result (the only column that wraps)."""
    grid = Table.grid(expand=True)
    grid.add_column(no_wrap=True, width=indent + 2)
    grid.add_column(no_wrap=True, width=title_cells)
    grid.add_column(ratio=1, overflow="fold")
    return grid


def mark_cell(mark: str, style: str, indent: int = 2) -> Text:
    return Text(" " * indent + mark + " ", style=style)


def add_result(
    grid: Table, result: StageResult, title: str, *, indent: int = 2, title_style: str = "bold"
) -> None:
    mark, style = MARKS[stage_state(result)]
    grid.add_row(
        mark_cell(mark, style, indent),
        Text(title, style=title_style),
        Text(neutralise(result.summary, one_line=True)),
    )


def result_grid(
    results: Iterable[StageResult],
    title: Callable[[str], str] = str,
    *,
    indent: int = 2,
    title_cells: int = TITLE_CELLS,
) -> Table:
    grid = stage_grid(indent, title_cells)
    for result in results:
        add_result(grid, result, title(result.stage), indent=indent)
    return grid
