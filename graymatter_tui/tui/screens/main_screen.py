"""The app's own screen: moving the focus redraws what the move restyles, not everything.

Textual's `Screen.focused` is a reactive that repaints the whole screen when it changes.
Moving the focus already restyles what it concerns (`update_focus_styles`: the widget
left, the one focused and their ancestors, for `:focus` and `:focus-within`), and each
restyled widget refreshes itself. The whole-screen repaint on top of that renders every
visible widget again: on a tab switch, the longest frame (about a third of it), which
adds to a stall a person feels at the key (ADR 0081).
"""

from __future__ import annotations

from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget


class MainScreen(Screen[None]):
    """The default screen, with a focus change that repaints no more than it restyles."""

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
