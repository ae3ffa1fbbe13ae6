"""The top bar: the store's badges, the app's name, the agent, and where the store is.

It is fitted to the terminal's width each time it is drawn. A location too long for the
line is shortened in its middle, whole components first, so its end (the directory or
database a person tells stores apart by) stays in sight: `/home/u/…/stores/project-x`.
The badges come first and are never cut. While the shown pane's read is slow, the bar's
right end says so (`READING`) and the location gives up the room."""

from __future__ import annotations

import sys

from rich.cells import cell_len
from rich.text import Text
from textual.app import RenderResult
from textual.widgets import Static

from graymatter_tui.tui.widgets.literal import literal

ELLIPSIS = "…"
NAME = "graymatter-tui · "
PATH_CELLS = 20  # with less room for the location, the app's name gives way
AGENT_CELLS = 8  # an agent's name is shortened to no fewer cells than this
READING = "reading…"  # at the bar's right end while the shown pane's read is slow


def cut_left(text: str, cells: int) -> str:
    """The end of `text` in `cells` cells, "…" first when something was left out."""
    if cell_len(text) <= cells:
        return text
    if cells <= 0:
        return ""
    end = ""
    for char in reversed(text):
        if cell_len(char + end) > cells - 1:
            break
        end = char + end
    return ELLIPSIS + end


def cut_middle(text: str, cells: int) -> str:
    """`text` in `cells` cells: its start and its end, "…" between."""
    if cell_len(text) <= cells:
        return text
    if cells <= 1:
        return ELLIPSIS[:cells]
    head = ""
    for char in text:
        if cell_len(head + char) > (cells - 1) // 2:
            break
        head += char
    return head + cut_left(text, cells - cell_len(head))


def shorten_path(path: str, cells: int, sep: str = "/") -> str:
    """`path` in at most `cells` cells, shortened in its middle: whole components taken
    from its end and its start in turn (the end first) around "…", as many as fit.
    When not even its last component fits, the end of that."""
    if cell_len(path) <= cells:
        return path
    parts = path.split(sep)
    head: list[str] = []
    tail = [parts[-1]]
    middle = parts[:-1]

    def joined(start: list[str], end: list[str]) -> str:
        return sep.join([*start, ELLIPSIS, *end])

    if cell_len(joined(head, tail)) > cells:
        return cut_left(path, cells)
    from_end = True
    stuck = 0
    while middle and stuck < 2:
        start, end = (head, [middle[-1], *tail]) if from_end else ([*head, middle[0]], tail)
        if cell_len(joined(start, end)) <= cells and len(middle) > 1:
            head, tail = start, end
            middle = middle[:-1] if from_end else middle[1:]
            stuck = 0
        else:
            stuck += 1
        from_end = not from_end
    return joined(head, tail)


def top_bar_line(
    badges: str, agent: str, live: int, location: str, width: int, mark: str = ""
) -> str:
    """The top bar's text in `width` cells (text already made literal): the badges, the
    app's name, the agent and its live facts, then the location, shortened to fit, and
    `mark` (if any) at the right end. A narrow terminal loses the app's name first, then
    the middle of a long agent name."""
    if mark:
        room = max(width - cell_len(mark) - 2, 1)
        line = top_bar_line(badges, agent, live, location, room)
        return line + " " * (width - cell_len(line) - cell_len(mark) - 1) + mark + " "
    # The room the location should have: its last component whole, and PATH_CELLS.
    last = ELLIPSIS + "/" + location.rsplit("/", 1)[-1]
    location_cells = min(cell_len(location), max(PATH_CELLS, cell_len(last)))
    for name in (NAME, ""):
        lead = f"{badges} {name}agent {agent} ({live} live) · "
        room = width - cell_len(lead)
        if room >= location_cells:
            return lead + shorten_path(location, room)
    spare = room - location_cells  # negative: what the agent's name must give up
    short = cut_middle(agent, max(AGENT_CELLS, cell_len(agent) + spare))
    lead = f"{badges} agent {short} ({live} live) · "
    return lead + shorten_path(location, max(width - cell_len(lead), 1))


class TopBar(Static):
    """The top bar, fitted to its width whenever it is drawn. Its content (what a test or
    a screen reader reads back) is the whole line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._parts: tuple[str, str, int, str] | None = None
        self._mark = ""

    def show(self, badges: str, agent: str, live: int, location: str) -> None:
        """Show the store's badges, the agent and its live facts, and the location
        (stored text: each is made literal here)."""
        parts = (literal(badges).plain, literal(agent).plain, live, literal(location).plain)
        if parts != self._parts:
            self._parts = parts
            self._update()

    def show_reading(self, reading: bool) -> None:
        """Mark (or unmark) the shown pane's read as slow."""
        mark = READING if reading else ""
        if mark != self._mark:
            self._mark = mark
            self._update()

    def _update(self) -> None:
        if self._parts is None:
            self.update(self._mark)
            return
        # The whole line as content; drawing fits it to the bar's width.
        line = top_bar_line(*self._parts, width=sys.maxsize)
        self.update(Text(f"{line}  {self._mark}" if self._mark else line))

    def render(self) -> RenderResult:
        if self._parts is None or self.size.width <= 0:
            return super().render()
        return Text(top_bar_line(*self._parts, width=self.size.width, mark=self._mark))
