"""App-wide messages (past-tense events)."""

from __future__ import annotations

from textual.message import Message


class StoreMoved(Message):
    """The store's generation is now `generation`: told by the store's watch (another
    process wrote, or the store is readable again), or by this process after its own
    write. The app's one way of learning that what the panes show may be out of date."""

    def __init__(self, generation: int, watch: object | None = None) -> None:
        super().__init__()
        self.generation = generation
        self.watch = watch  # which watch said it; None: this process's own write


class StoreUnreadable(Message):
    """The store's watch could not read it (it says so once, until it can again)."""

    def __init__(self, message: str, watch: object) -> None:
        super().__init__()
        self.message = message
        self.watch = watch
