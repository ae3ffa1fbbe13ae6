"""Where the compact layouts begin (ADR 0009). 80×24 is short: every screen must work
there in full, and degrade gracefully below it."""

from __future__ import annotations

from textual.app import App

SHORT_ROWS = 30  # below this the stepper and the replay header fold up
NARROW_COLUMNS = 100


def is_short(app: App[object]) -> bool:
    return app.size.height < SHORT_ROWS
