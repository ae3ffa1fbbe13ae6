"""The coloured parts of a fact row, as component classes of the list that draws it.

Row sources are plain objects (no widget, no app): the list resolves these classes
against the current theme and hands the styles to `row()`. Dim and bold are not colours
and stay fixed; a colour always comes from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.style import Style

PINNED = "fact-rows--pinned"
WEIGHT = "fact-rows--weight"
WEIGHT_LOW = "fact-rows--weight-low"
SUMMARY = "fact-rows--summary"
COMPONENT_CLASSES = frozenset({PINNED, WEIGHT, WEIGHT_LOW, SUMMARY})

# Defaults, written with the theme's text colours (readable on its background, light or
# dark); a theme or app.tcss may restyle any of them.
DEFAULT_CSS = """
VirtualList > .fact-rows--pinned { color: $text-warning; text-style: bold; }
VirtualList > .fact-rows--weight { color: $text-success; }
VirtualList > .fact-rows--weight-low { color: $text-error; }
VirtualList > .fact-rows--summary { color: $text-success; }
"""


_BOLD = Style(bold=True)
_PLAIN = Style.null()


@dataclass(frozen=True)
class RowStyles:
    """What a row source draws its coloured parts with. The defaults (no colour) serve a
    source read outside a list, as the tests do."""

    pinned: Style = _BOLD
    weight: Style = _PLAIN
    weight_low: Style = _PLAIN
    summary: Style = _PLAIN

    @classmethod
    def from_components(cls, styles: Mapping[str, Style]) -> RowStyles:
        return cls(
            pinned=styles[PINNED],
            weight=styles[WEIGHT],
            weight_low=styles[WEIGHT_LOW],
            summary=styles[SUMMARY],
        )


NO_COLOUR = RowStyles()
