"""Tombstones: every superseded fact with its receipt — the summary that replaced it (or
"retired by agent"), the cycle, its weight and the days left before pruning. Like the
Facts list, the newest page paints at once and a long list is read in full in a worker."""

from __future__ import annotations

from collections.abc import Sequence

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual.worker import get_current_worker

from graymatter_tui.core.model import Fact
from graymatter_tui.core.words import counted
from graymatter_tui.tui.screens.base import Pane
from graymatter_tui.tui.screens.facts import FIRST_PAGE, FULL_LIST_DELAY
from graymatter_tui.tui.screens.paged import id_pages
from graymatter_tui.tui.widgets.fact_rows import TombstoneRows, tombstone_header
from graymatter_tui.tui.widgets.id_list import IdList
from graymatter_tui.tui.widgets.virtual_list import VirtualList


class TombstonesPane(Vertical, Pane):
    TITLE = "Tombstones"
    FOCUS = "#tomb-list"
    HELP_KEYS = (Binding("enter", "", "Open the summary that replaced it"),)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._keep_id: str | None = None
        self._placed = 0  # where reload put the cursor
        self._complete = True

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
        """Read ids again (after a write or an agent change), keeping the cursor's
        tombstone."""
        keep_id = None
        if keep and (current := self.current_fact()) is not None:
            keep_id = current.id
        self._keep_id = keep_id
        first = self.host.store.fact_ids(self.host.agent, "tombstones", limit=FIRST_PAGE + 1)
        self._complete = len(first) <= FIRST_PAGE
        if not self._complete:
            # After the first frames, as the Facts list does: reading every id of a long
            # list holds the GIL for a while.
            self.set_timer(FULL_LIST_DELAY, self._load_all_ids)
        self._show(IdList.of(first[:FIRST_PAGE]), keep_id)
        self._placed = self.tomb_list.cursor
        self.call_after_refresh(self._update_header)

    @work(thread=True, exclusive=True, group="tombstone-ids", exit_on_error=False)
    def _load_all_ids(self) -> None:
        store, agent = self.host.store, self.host.agent
        ids = IdList.joined(
            id_pages(
                lambda limit, before: store.fact_ids(
                    agent, "tombstones", limit=limit, before=before
                )
            )
        )
        if not get_current_worker().is_cancelled:  # a newer reload reads its own
            self.app.call_from_thread(self._ids_ready, ids)

    def _ids_ready(self, ids: IdList) -> None:
        self._complete = True
        self._show(ids, self._cursor_id())

    def _cursor_id(self) -> str | None:
        """The tombstone to keep under the cursor once every id is read: the one it was
        on before the reload (perhaps beyond the first page), unless it has moved since."""
        current = self.current_fact()
        if self._keep_id is not None and self.tomb_list.cursor == self._placed:
            return self._keep_id
        return current.id if current else None

    def _show(self, ids: Sequence[str], keep_id: str | None) -> None:
        store = self.host.store
        rows = TombstoneRows(
            ids,
            store.find_many,
            store.now(),
            self.host.settings.half_life_hours,
            store.find_record,
        )
        cursor = rows.index_of(keep_id) if keep_id else None
        self.tomb_list.set_source(rows, cursor=cursor or 0)
        total = counted(len(ids), "tombstone", at_least=not self._complete)
        self.query_one("#tombs-info", Static).update(total)

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
