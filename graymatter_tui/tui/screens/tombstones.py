"""Tombstones: every superseded fact with its receipt — the summary that replaced it (or
"retired by agent"), the cycle, its weight and the days left before pruning. Like the
Facts list, the newest page paints at once and a long list is read in full in a worker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from graymatter_tui.core.model import Fact
from graymatter_tui.core.words import counted
from graymatter_tui.tui.screens.base import Draw, Pane, Read
from graymatter_tui.tui.screens.facts import FIRST_PAGE, FULL_LIST_DELAY, READING
from graymatter_tui.tui.screens.paged import id_pages
from graymatter_tui.tui.widgets.fact_rows import PAGE, Held, TombstoneRows, tombstone_header
from graymatter_tui.tui.widgets.id_list import IdList
from graymatter_tui.tui.widgets.virtual_list import VirtualList

T = TypeVar("T")
NO_TOMBSTONES = "No tombstones: nothing has been superseded."


class TombstonesPane(Vertical, Pane):
    TITLE = "Tombstones"
    NARROW_TITLE = "Tombs"
    FOCUS = "#tomb-list"
    HELP_KEYS = (Binding("enter", "", "Open the summary that replaced it"),)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._keep_id: str | None = None
        self._placed = 0  # where reload put the cursor
        self._complete = True
        self._held = Held()

    def compose(self) -> ComposeResult:
        with Horizontal(classes="pane-bar"):
            yield Static("", id="tombs-header", classes="pane-header", markup=False)
            yield Static("", id="tombs-info", classes="pane-info", markup=False)
        yield VirtualList(id="tomb-list", empty_text=READING)

    @property
    def tomb_list(self) -> VirtualList:
        return self.query_one("#tomb-list", VirtualList)

    def current_fact(self) -> Fact | None:
        """The tombstone under the cursor, if its row has been read (never read here)."""
        source = self.tomb_list.source
        if isinstance(source, TombstoneRows):
            return source.held_fact(self.tomb_list.cursor)
        return None

    def _cursor_fact_id(self) -> str | None:
        source = self.tomb_list.source
        return source.id_at(self.tomb_list.cursor) if isinstance(source, TombstoneRows) else None

    def read(self, *, keep: bool = True) -> Read:
        """Read ids again (after a write or an agent change), keeping the cursor's
        tombstone; the rows drawn first are read with them."""
        keep_id = self._cursor_fact_id() if keep else None
        store, agent = self.host.store, self.host.agent
        rows = self._rows([], Held())  # what this read finds, for the rows drawn next

        def job() -> Draw:
            first = store.fact_ids(agent, "tombstones", limit=FIRST_PAGE + 1)
            at = first.index(keep_id) if keep_id in first else 0
            near = first[:FIRST_PAGE][max(at - PAGE // 4, 0) :][:PAGE]
            return partial(self._read_done, first, rows.read_ahead(near), keep_id)

        return job

    def _read_done(self, first: list[str], held: Held, keep_id: str | None) -> None:
        self._keep_id = keep_id
        self._held = held
        self._complete = len(first) <= FIRST_PAGE
        if not self._complete:
            # After the first frames, as the Facts list does: reading every id of a long
            # list holds the GIL for a while.
            self.set_timer(FULL_LIST_DELAY, self._load_all_ids)
        self._show(IdList.of(first[:FIRST_PAGE]), keep_id)
        self._placed = self.tomb_list.cursor
        self.call_after_refresh(self._update_header)

    def _load_all_ids(self) -> None:
        store, agent = self.host.store, self.host.agent

        def job() -> IdList:
            return IdList.joined(
                id_pages(
                    lambda limit, before: store.fact_ids(
                        agent, "tombstones", limit=limit, before=before
                    )
                )
            )

        # A newer read supersedes this one, and reads its own.
        self.host.read_in_thread(self, job, self._ids_ready, group="tombstone-ids")

    def _ids_ready(self, ids: IdList) -> None:
        self._complete = True
        self._show(ids, self._cursor_id())

    def _cursor_id(self) -> str | None:
        """The tombstone to keep under the cursor once every id is read: the one it was
        on before the reload (perhaps beyond the first page), unless it has moved since."""
        if self._keep_id is not None and self.tomb_list.cursor == self._placed:
            return self._keep_id
        return self._cursor_fact_id()

    def _rows(self, ids: Sequence[str], held: Held | None = None) -> TombstoneRows:
        store = self.host.store
        return TombstoneRows(
            ids,
            store.find_many,
            store.now(),
            self.host.settings.half_life_hours,
            store.find_record,
            background=self._in_background,
            loaded=self.tomb_list.refresh,
            held=held or self._held,
        )

    def _show(self, ids: Sequence[str], keep_id: str | None) -> None:
        rows = self._rows(ids)
        cursor = rows.index_of(keep_id) if keep_id else None
        self.tomb_list.empty_text = NO_TOMBSTONES
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

    def _in_background(
        self, job: Callable[[], T], then: Callable[[T], None], failed: Callable[[], None]
    ) -> None:
        """The rows' page reads: off the UI thread, several at a time."""
        self.host.read_in_thread(
            self, job, then, group="tombstone-rows", exclusive=False, failed=lambda _exc: failed()
        )
