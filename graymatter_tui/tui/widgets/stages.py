"""A cycle's stage results as rows: a mark, the stage's name, its result. Long results
wrap under the result column (a hanging indent), never under the mark.

The mark says how the stage ended: a ✓ in the theme's success colour only for a stage
that did its job; a failed call or a discarded answer or plan (a stale apply, say) gets a
✗. The colours are the component classes `stage--*` of the widget that shows the rows
(the Consolidate pane, the journal replay), styled in app.tcss."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from graymatter_tui.consolidation.cycle import StageState, stage_state
from graymatter_tui.core.model import StageResult
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.themed import component_styles

MARKS: dict[StageState, str] = {
    "done": "✓",
    "failed": "✗",
    "discarded": "✗",
    "skipped": "–",
    "not_run": "·",
}
# A state → its component class; "not_run" is dim, not a colour.
COMPONENTS: dict[StageState, str] = {
    "done": "stage--done",
    "failed": "stage--failed",
    "discarded": "stage--discarded",
    "skipped": "stage--skipped",
}
NEXT = "stage--next"  # the stepper's next stage
COMPONENT_CLASSES = {*COMPONENTS.values(), NEXT}
NOT_RUN = Style(dim=True)
StageStyles = Mapping[str, Style]
TITLE_CELLS = 18


def stage_styles(widget: Widget) -> dict[str, Style]:
    """The stage marks' styles (by state, and "next") in the widget's current theme."""
    found = component_styles(widget, COMPONENT_CLASSES)
    styles: dict[str, Style] = {state: found[name] for state, name in COMPONENTS.items()}
    styles["next"] = found[NEXT]
    return styles


def mark_of(result: StageResult, styles: StageStyles) -> tuple[str, Style]:
    state = stage_state(result)
    return MARKS[state], styles.get(state, NOT_RUN)


def stage_grid(indent: int = 2, title_cells: int = TITLE_CELLS) -> Table:
    """An empty grid of stage rows: mark, name, result (the only column that wraps)."""
    grid = Table.grid(expand=True)
    grid.add_column(no_wrap=True, width=indent + 2)
    grid.add_column(no_wrap=True, width=title_cells)
    grid.add_column(ratio=1, overflow="fold")
    return grid


def mark_cell(mark: str, style: Style | str, indent: int = 2) -> Text:
    return Text(" " * indent + mark + " ", style=style)


def add_result(
    grid: Table,
    result: StageResult,
    title: str,
    styles: StageStyles,
    *,
    indent: int = 2,
    title_style: str = "bold",
) -> None:
    mark, style = mark_of(result, styles)
    grid.add_row(
        mark_cell(mark, style, indent),
        Text(title, style=title_style),
        literal(result.summary),
    )


def result_grid(
    results: Iterable[StageResult],
    styles: StageStyles,
    title: Callable[[str], str] = str,
    *,
    indent: int = 2,
    title_cells: int = TITLE_CELLS,
) -> Table:
    grid = stage_grid(indent, title_cells)
    for result in results:
        add_result(grid, result, title(result.stage), styles, indent=indent)
    return grid
