"""What every pane may ask of the app, typed, without importing the app module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from graymatter_tui.config import Settings
from graymatter_tui.store import Store


class Host(Protocol):
    store: Store
    settings: Settings
    agent: str
    read_only: bool

    def run_write(
        self, label: str, fn: Callable[[], Any], then: Callable[[Any], None] | None = None
    ) -> None: ...

    def may_mutate(self) -> bool: ...

    def show_fact(self, fact_id: str) -> None: ...

    def summariser_changed(self) -> None: ...
