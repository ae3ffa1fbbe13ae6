"""Stored text made display text: the one way a screen shows text it did not write.

Every control, bidi or invisible format character becomes a visible placeholder
(`textsafe.neutralise`), and the result is a Rich `Text`, which Textual never parses as
markup. Screens call `literal` and never `neutralise`; a test keeps it so
(tests/tui/test_literal_text.py)."""

from __future__ import annotations

from rich.style import StyleType
from rich.text import Text

from graymatter_tui.core.textsafe import neutralise


def literal(value: object, style: StyleType = "", *, one_line: bool = True) -> Text:
    """`value` (stored text, an id, a path, an error message) as literal display text.

    One line by default: newlines become `⏎` and tabs a space, so a field never breaks a
    row; `one_line=False` keeps the lines (a fact's whole text)."""
    return Text(neutralise(str(value), one_line=one_line), style=style)
