"""Tombstones: every superseded fact with its receipt — the summary that replaced it (or
"retired by agent"), the cycle, its weight and the days left before pruning."""

from __future__ import annotations

from typing import cast

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from graymatter_tui.model import Fact
from graymatter_tui.screens.base import Host
from graymatter_tui.widgets.fact_rows import TombstoneRows, tombstone_header
from graymatter_tui.widgets.virtual_list import VirtualList


class TombstonesPane(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)

    @property
    def host(self) -> Host:
        return cast(Host, self.app)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="pane-bar"):
            yield Static("", id="tombs-header", classes="pane-header", markup=False)
            yield Static("", id="tombs-info", classes="pane-info", markup=False)
        yield VirtualList(id="tomb-list", empty_text="No tombstones: nothing has been superseded.")

    @property
    def tomb_list(self) -> VirtualList:
        return self.query_one("#tomb-list", VirtualList)

    def current_fact(self) -> Fact | None:
        source = self.tomb_list.source
        return source.fact(self.tomb_list.cursor) if isinstance(source, TombstoneRows) else None

    def reload(self, *, keep: bool = True) -> None:
        keep_id = None
        if keep and (current := self.current_fact()) is not None:
            keep_id = current.id
        store = self.host.store
        ids = store.fact_ids(self.host.agent, "tombstones")
        rows = TombstoneRows(ids, store.find_many, store.now(), self.host.settings.half_life_hours)
        cursor = rows.index_of(keep_id) if keep_id else None
        self.tomb_list.set_source(rows, cursor=cursor or 0)
        self.query_one("#tombs-info", Static).update(f"{len(ids)} tombstones")
        self.call_after_refresh(self._update_header)

    def tick_clock(self) -> None:
        """Days until pruning count from now: move the rows' clock, without a store read."""
        source = self.tomb_list.source
        if isinstance(source, TombstoneRows):
            source.now = self.host.store.now()
            self.tomb_list.refresh()

    def on_resize(self) -> None:
        # The text column narrows with the terminal; its title follows once the list
        # has its new size (and knows whether it needs a scrollbar).
        self.call_after_refresh(self._update_header)

    def _update_header(self) -> None:
        width = self.tomb_list.scrollable_content_region.width or self.size.width
        self.query_one("#tombs-header", Static).update(tombstone_header(width))

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        fact = self.current_fact()
        if fact is None:
            return
        if fact.is_tombstone and not fact.is_retired:
            self.host.show_fact(fact.superseded_by)
        else:
            self.host.show_fact(fact.id)
