"""A list drawn line by line (Textual's Line API), for lists of any length.

Only the rows on screen are ever built: the widget asks its `RowSource` for row N when
line N scrolls into view, so 1M facts cost no more to show than 100. There is no widget
and no row object per item (compare the stock DataTable, which builds every row).

Every segment drawn carries a real `Style` (never None): Textual's line filters (the
monochrome filter of `NO_COLOR`, for one) read each segment's style, and a bare segment
crashes them.

The rows' coloured parts (`fact-rows--*`, widgets/row_styles.py) are component classes
of this list: it resolves them against the theme once per frame and passes them to the
source, so a row source stays a plain object that knows no app and no theme.
"""

from __future__ import annotations

from typing import Protocol

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from graymatter_tui.tui.widgets import row_styles
from graymatter_tui.tui.widgets.row_styles import RowStyles
from graymatter_tui.tui.widgets.themed import component_styles


class RowSource(Protocol):
    def __len__(self) -> int: ...

    def row(self, index: int, width: int, styles: RowStyles) -> list[Segment]:
        """Segments for row `index`, text already neutralised, any length, each with a
        real `Style` (`Style.null()` for plain text); colours from `styles`."""
        ...


class EmptySource:
    def __len__(self) -> int:
        return 0

    def row(self, index: int, width: int, styles: RowStyles) -> list[Segment]:
        return []


class VirtualList(ScrollView, can_focus=True):
    """A cursor over rows of a RowSource; posts Highlighted and Selected messages."""

    COMPONENT_CLASSES = {
        "virtual-list--cursor",
        "virtual-list--empty",
        *row_styles.COMPONENT_CLASSES,
    }
    DEFAULT_CSS = (
        """
    VirtualList { height: 1fr; background: $surface; overflow-x: hidden; }
    VirtualList > .virtual-list--cursor { background: $accent 40%; }
    VirtualList:focus > .virtual-list--cursor { background: $accent; color: $text; }
    VirtualList > .virtual-list--empty { color: $text-muted; }
    """
        + row_styles.DEFAULT_CSS
    )
    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class _RowMessage(Message):
        def __init__(self, sender: VirtualList, index: int) -> None:
            super().__init__()
            self.list = sender
            self.index = index

        @property
        def control(self) -> VirtualList:
            return self.list

    class Highlighted(_RowMessage):
        """The cursor moved to row `index`."""

    class Selected(_RowMessage):
        """Row `index` was chosen (enter or double click)."""

    def __init__(
        self,
        *,
        empty_text: str = "Nothing here.",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source: RowSource = EmptySource()
        self.empty_text = empty_text
        self._pending_top: int | None = None
        self._frame_style: Style | None = None
        self._frame_rows: RowStyles | None = None

    def set_source(self, source: RowSource, *, cursor: int | None = None) -> None:
        """Show a new source; put the cursor where asked (clamped).

        The view follows what a reader expects of a list whose rows can arrive above the
        cursor (newest first): a view at the top stays at the top, so new rows come into
        sight and push the cursor's row down; a view scrolled elsewhere keeps the
        cursor's row on the same screen line, so nothing jumps under the reader's eyes.
        """
        screen_row = self.cursor - self.scroll_offset.y
        at_top = self.scroll_offset.y == 0
        self.source = source
        count = len(source)
        # Rows are cut to the width, never scrolled sideways: no horizontal scrollbar.
        self.virtual_size = Size(0, count)
        target = self.cursor if cursor is None else cursor
        target = max(0, min(target, count - 1)) if count else 0
        self._pending_top = 0 if at_top else target - screen_row
        self._place_view(target)
        self.cursor = target
        self.refresh()

    def _place_view(self, cursor: int) -> None:
        """Scroll to the pending top line, moved just enough to keep `cursor` in view.
        A list not laid out yet (a hidden tab) keeps it pending until it has a height."""
        height = self.scrollable_content_region.height
        if self._pending_top is None or height <= 0:
            return
        top = self._pending_top
        self._pending_top = None
        top = min(max(top, cursor - height + 1), cursor)
        top = max(0, min(top, len(self.source) - height))
        self.scroll_to(y=top, animate=False, force=True, immediate=True)

    def on_resize(self) -> None:
        if self._pending_top is not None:
            self._place_view(self.cursor)
        elif len(self.source):
            # Fewer rows (a toast or the error bar took some): the cursor's stays in view.
            self.scroll_to_region(
                Region(0, self.cursor, 1, 1), animate=False, force=True, immediate=True
            )

    # ---- drawing ---------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        # The list's colours are looked up once per frame, not once per line.
        self._frame_style = self.rich_style
        self._frame_rows = self.row_styles()
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None
            self._frame_rows = None

    def row_styles(self) -> RowStyles:
        """The rows' coloured parts in the current theme."""
        return RowStyles.from_components(component_styles(self, row_styles.COMPONENT_CLASSES))

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = max(self.scrollable_content_region.width, 1)
        # The list's own colours go under every segment (a segment's own style wins), the
        # cursor's over the list's: one base style, applied once.
        base = self._frame_style or self.rich_style
        count = len(self.source)
        if count == 0 and y == 0:
            style = self.get_component_rich_style("virtual-list--empty")
            strip = Strip([Segment(" " + self.empty_text, style)])
        elif index >= count:
            return Strip.blank(width, base)
        else:
            rows = self._frame_rows or self.row_styles()
            strip = Strip(self.source.row(index, width, rows))
            if index == self.cursor:
                base += self.get_component_rich_style("virtual-list--cursor")
        return strip.adjust_cell_length(width, Style.null()).apply_style(base)

    # ---- cursor ------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._refresh_row(new)
        if self._pending_top is None:  # else the view is placed once the list has a height
            self.scroll_to_region(Region(0, new, 1, 1), animate=False, force=True, immediate=True)
        if len(self.source):
            self.post_message(self.Highlighted(self, new))

    def _refresh_row(self, index: int) -> None:
        top = self.scroll_offset.y
        self.refresh(Region(0, index - top, self.size.width, 1))

    def _move(self, delta: int) -> None:
        count = len(self.source)
        if count:
            self.cursor = max(0, min(self.cursor + delta, count - 1))

    def action_cursor_up(self) -> None:
        self._move(-1)

    def action_cursor_down(self) -> None:
        self._move(1)

    def action_page_up(self) -> None:
        self._move(-max(self.size.height - 1, 1))

    def action_page_down(self) -> None:
        self._move(max(self.size.height - 1, 1))

    def action_first(self) -> None:
        self._move(-len(self.source))

    def action_last(self) -> None:
        self._move(len(self.source))

    def action_select(self) -> None:
        if len(self.source):
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event: object) -> None:
        offset = getattr(event, "y", None)
        if offset is None or not len(self.source):
            return
        index = self.scroll_offset.y + int(offset)
        if 0 <= index < len(self.source):
            if index == self.cursor and getattr(event, "chain", 1) >= 2:
                self.action_select()
            self.cursor = index
