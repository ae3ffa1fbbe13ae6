"""Rows of the activity feed: time, source, agent, action, text, one line each, drawn
only for the rows on screen. Times are the stored UTC stamps, cut down as the terminal
narrows (the highlighted entry's whole stamp is on the pane's detail line)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style

from graymatter_tui.core.model import ActivityEntry
from graymatter_tui.core.words import counted
from graymatter_tui.tui.widgets.fact_rows import DIM, PLAIN, column, fit
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.row_styles import NO_COLOUR, RowStyles

BOLD = Style(bold=True)
# The longest action name ("consolidation"): actions are never cut.
ACTION_CELLS = 13
# Actions that drop or replace facts stand out (in the theme's colours, row_styles.py).
LOSSY = frozenset({"forget", "prune"})
MERGING = frozenset({"consolidation", "revert"})


@dataclass(frozen=True)
class Layout:
    """Cells of each column before the text, for one width of the list."""

    time_from: int  # where the shown part of "2026-11-30T12:00:05.123456Z" starts
    time_cells: int
    source_cells: int
    agent_cells: int


def layout_for(width: int) -> Layout:
    """Wide: the whole date; medium: month and day; narrow: the time of day only."""
    if width >= 120:
        return Layout(0, 19, 16, 16)
    if width >= 96:
        return Layout(5, 14, 14, 12)
    return Layout(11, 8, 12, 10)


def short_time(stamp: str, layout: Layout) -> str:
    return stamp[layout.time_from : 19].replace("T", " ")


def activity_header(width: int) -> str:
    """Column titles over `ActivityRows.row` at the same width."""
    lay = layout_for(width)
    title = "time (UTC)" if lay.time_cells >= len("time (UTC)") else "UTC"
    return (
        " "
        + title.ljust(lay.time_cells + 1)
        + "source".ljust(lay.source_cells + 1)
        + "agent".ljust(lay.agent_cells + 1)
        + "action".ljust(ACTION_CELLS + 1)
        + "text"
    )


def action_style(action: str, styles: RowStyles) -> Style:
    if action in LOSSY:
        return styles.weight_low
    if action in MERGING:
        return styles.summary
    if action in ("pin", "unpin"):
        return styles.pinned
    return BOLD


class ActivityRows:
    """Entries newest first (write numbers descending), as list rows."""

    def __init__(self, entries: Sequence[ActivityEntry]) -> None:
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, index: int) -> ActivityEntry | None:
        return self.entries[index] if 0 <= index < len(self.entries) else None

    def row(self, index: int, width: int, styles: RowStyles = NO_COLOUR) -> list[Segment]:
        entry = self.entry(index)
        if entry is None:
            return []
        lay = layout_for(width)
        text = entry.text
        if entry.count > 1 and not entry.fact_id and str(entry.count) not in text:
            text = f"{text} ({counted(entry.count, 'fact')})"
        return fit(
            [
                Segment(" " + short_time(entry.at, lay).ljust(lay.time_cells + 1), DIM),
                *column(literal(entry.source).plain, lay.source_cells, PLAIN),
                Segment(" ", PLAIN),
                *column(literal(entry.agent_id).plain, lay.agent_cells, PLAIN),
                Segment(" ", PLAIN),
                Segment(entry.action.ljust(ACTION_CELLS + 1), action_style(entry.action, styles)),
                Segment(literal(text).plain, PLAIN),
            ],
            width,
        )
