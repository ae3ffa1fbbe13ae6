"""Rich content drawn off the UI thread, shown as it was drawn.

A Static given a table measures and renders it on the UI thread twice per layout (once to
know its height, once to draw it): for the Status tab's tables, ~25 ms a frame. Drawn in
a worker at the width it will be shown at (`draw_lines`), the UI thread only copies the
lines out (`DrawnLines`). Textual still applies the widget's own style, and its filters
(`NO_COLOR`, dimming) to the result, as it does to anything a Static shows."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from textual.message import Message
from textual.widgets import Static


@dataclass(frozen=True)
class DrawnLines:
    """Lines of segments, each at most `width` cells: a Rich renderable that yields them
    as they are (no measuring, no wrapping)."""

    lines: tuple[tuple[Segment, ...], ...]
    width: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines:
            yield from line
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.width, self.width)


def draw_lines(
    renderable: RenderableType, console: Console, options: ConsoleOptions, width: int
) -> DrawnLines:
    """`renderable` drawn `width` cells wide with the app's console and options (taken on
    the UI thread), as Textual would draw it in a Static. Safe in a worker: rendering
    reads the console's theme and writes nothing to it."""
    width = max(width, 1)
    segments = console.render(renderable, options.update_width(width).update(highlight=False))
    lines = Segment.split_and_crop_lines(segments, width, include_new_lines=False, pad=False)
    return DrawnLines(tuple(tuple(line) for line in lines), width)


class DrawnStatic(Static):
    """A Static that shows `DrawnLines`, and says when it is no longer the width they
    were drawn at (a resize, a scroll bar come or gone): its parent draws them again."""

    class Resized(Message):
        """The width the lines were drawn at is not this widget's any more."""

    drawn_width = 0

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def show(self, lines: DrawnLines) -> None:
        self.drawn_width = lines.width
        self.update(lines)
        self._check_width()

    def on_resize(self) -> None:
        self._check_width()

    def _check_width(self) -> None:
        width = self.content_size.width
        if self.drawn_width and width and width != self.drawn_width:
            self.drawn_width = 0  # asked once: the next drawing sets it again
            self.post_message(self.Resized())
