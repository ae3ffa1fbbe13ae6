"""A DataTable that keeps its drawn rows when its tab is shown again (ADR 0085).

Textual's DataTable caches each drawn cell, row and line, keyed by what they depend on
(the cursor, the hover, the widget's pseudo-classes such as `:focus`) and by an update
count. Three things threw the whole cache away on a tab switch, though the rows looked
the same as before, so showing the Review tab drew every visible row afresh (~10 ms of
a frame):

- a Resize, which bumps the update count: a table hidden with its tab gets one with the
  same size each time the tab is shown again;
- a style update, which clears every cache: the table gains or loses `:focus` on each
  switch, and the look that changes with it is already part of each key;
- the pane's read after the store moved (another process's write), which cleared the
  table and added the same rows back.

This table bumps the count only for a size it has not drawn at. On a style update it
keeps the keyed caches unless the styles it draws with (its own and its component
classes') have changed for the same pseudo-classes (a theme change, a CSS change): then
it clears all, as DataTable does; the unkeyed parts (the per-cell style lookup and the
border cache) are cleared every time. `show_rows` replaces its rows only when they
differ from those it shows.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Self

from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import DataTable

Row = tuple[str, tuple[Text, ...]]  # a row's key and its cells


def _look(cell: Text) -> Hashable:
    """All a cell draws with (`Text.__eq__` leaves out its own style, which a theme
    change alters)."""
    return (cell.plain, cell.style, tuple(cell.spans), cell.justify, cell.overflow, cell.no_wrap)


class KeptRowsTable(DataTable[Text]):
    """A DataTable whose drawn rows survive being hidden and shown, focus moves, and
    being given the same rows again."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._drawn_size: Size | None = None
        # The styles drawn with, by pseudo-class state, since the caches were last cleared.
        self._drawn_styles: dict[Hashable, Hashable] = {}
        self._shown_rows: list[tuple[str, tuple[Hashable, ...]]] | None = None

    def show_rows(self, rows: list[Row]) -> None:
        """Show `rows` in order, each under its key. Given exactly the rows it shows
        (keys and cells, styles included), it keeps them as drawn, and its cursor."""
        looks = [(key, tuple(_look(cell) for cell in cells)) for key, cells in rows]
        if looks == self._shown_rows:
            return
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        self._shown_rows = looks

    def clear(self, columns: bool = False) -> Self:
        self._shown_rows = None
        return super().clear(columns)

    def _on_resize(self, event: events.Resize) -> None:
        # In place of DataTable's handler, which bumps the update count on every Resize:
        # Textual calls one handler per class, innermost first, until prevent_default (a
        # subclass's `on_resize` still runs, before this).
        event.prevent_default()
        if event.size != self._drawn_size:
            self._drawn_size = event.size
            self._update_count += 1

    def notify_style_update(self) -> None:
        if not self.is_mounted:  # component styles are not there to read yet
            super().notify_style_update()
            return
        state = self.get_pseudo_class_state()
        drawn_with = (
            self.rich_style,
            tuple(self.get_component_rich_style(name) for name in sorted(self.COMPONENT_CLASSES)),
        )
        if self._drawn_styles.get(state, drawn_with) != drawn_with:
            self._drawn_styles = {state: drawn_with}
            super().notify_style_update()  # clears every cache and refreshes
            return
        self._drawn_styles[state] = drawn_with
        Widget.notify_style_update(self)
        self._styles_cache.clear()
        self._get_styles_to_render_cell.cache_clear()
        self.refresh()
