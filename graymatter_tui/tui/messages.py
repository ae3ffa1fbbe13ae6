"""App-wide messages (past-tense events)."""

from __future__ import annotations

from textual.message import Message


class StoreChanged(Message):
    """This process wrote to the store; panes should re-read what they show."""
