"""Colours from the theme for text drawn as Rich renderables.

A widget names the parts it colours as component classes (as Textual's DataTable does);
the stylesheet gives them theme variables ($text-success, $text-error …), and the widget
reads them back as Rich styles when it draws. Text already built keeps the colours it
was built with, so a widget that builds its text ahead redraws it when the theme changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.style import Style
from textual.widget import Widget


def component_styles(widget: Widget, names: Iterable[str]) -> dict[str, Style]:
    """Each component class's own style (colour, bold …), without the widget's colours
    (those go under the text anyway): `{name: Style}`, every value a real Style."""
    return {name: widget.get_component_rich_style(name, partial=True) for name in names}


def redraw_on_theme_change(widget: Widget, redraw: Callable[[], None]) -> None:
    """Call `redraw` after each theme change, once the new theme's styles are in place."""
    widget.app.theme_changed_signal.subscribe(widget, lambda _theme: redraw())
