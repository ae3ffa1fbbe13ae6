"""Facts: the live facts of the chosen agent, filtered as you type, sorted by recency or
weight. Drawn line by line, so 1M facts open as fast as 100."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import takewhile
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from graymatter_tui.core.model import Fact
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Pane
from graymatter_tui.tui.screens.dialogs import ConfirmScreen, TextEntryScreen
from graymatter_tui.tui.screens.paged import id_pages, text_pages
from graymatter_tui.tui.widgets.fact_rows import FactRows, fact_header
from graymatter_tui.tui.widgets.id_list import IdList, Picked
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.text_index import TextIndex
from graymatter_tui.tui.widgets.virtual_list import VirtualList

SORTS = ("recency", "weight")
FIRST_PAGE = 5000
FULL_LIST_DELAY = 1.0  # seconds: the first frames are drawn by then
BACKGROUND_FILTER = 50_000  # facts; above this a filter keystroke searches in a worker
FIRST_MATCHES = 1000  # a worker's search shows this many matches before it ends
NO_FACTS = "No live facts for this agent."


def no_match_text(query: str) -> str:
    return literal(f"No live fact matches “{query}”.").plain


class FactsPane(Vertical, Pane):
    TITLE = "Facts"
    FOCUS = "#fact-list"
    BINDINGS = [
        Action(
            "slash",
            "focus_filter",
            "Filter",
            id="facts-filter",
            title="Filter facts",
            tooltip="Type to narrow the list of facts",
        ),
        Action(
            "s",
            "toggle_sort",
            "Sort",
            id="facts-sort",
            title="Sort facts",
            tooltip="Switch between newest first and heaviest first",
        ),
        Action(
            "p",
            "pin",
            "Pin/unpin",
            id="facts-pin",
            title="Pin or unpin fact",
            tooltip="Toggle the pin of the selected fact",
        ),
        Action(
            "a",
            "add",
            "Add",
            id="facts-add",
            title="Add fact",
            tooltip="Write a new fact for the current agent",
        ),
        Action(
            "e",
            "revise",
            "Revise",
            id="facts-revise",
            title="Revise fact",
            tooltip="Edit the selected fact; the old text is kept as a tombstone",
        ),
        Action(
            "x",
            "retire",
            "Retire",
            id="facts-retire",
            title="Retire fact",
            tooltip="Make the selected fact a tombstone",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort = "recency"
        self.query_text = ""
        self._all_ids: Sequence[str] = IdList()
        self._texts: TextIndex | None = None
        self._indexing = False  # a worker is building `_texts`
        self._weights: dict[str, float] | None = None
        # The last complete search (casefolded needle, positions) of `_texts`, reused
        # when the list is redrawn for another reason (ids loaded, sort changed).
        self._last_match: tuple[str, array[int]] | None = None
        self._keep_id: str | None = None
        self._placed = 0  # where reload (or a new sort) put the cursor
        self._from_top = False  # sorted since the reload: the list starts at its top
        self._complete = True

    def compose(self) -> ComposeResult:
        with Horizontal(classes="pane-bar"):
            yield Input(placeholder="/ filter as you type", id="filter")
            yield Static("", id="facts-info", classes="pane-info", markup=False)
        yield Static(fact_header(self.sort), id="facts-header", classes="list-header", markup=False)
        yield VirtualList(id="fact-list", empty_text=NO_FACTS)

    @property
    def fact_list(self) -> VirtualList:
        return self.query_one("#fact-list", VirtualList)

    def current_fact(self) -> Fact | None:
        source = self.fact_list.source
        if isinstance(source, FactRows):
            return source.fact(self.fact_list.cursor)
        return None

    # ---- data ------------------------------------------------------------------------
    def reload(self, *, keep: bool = True) -> None:
        """Read ids again (after a write or an agent change), keeping the cursor's fact."""
        keep_id = None
        if keep and (current := self.current_fact()) is not None:
            keep_id = current.id
        store = self.host.store
        self._keep_id = keep_id
        self._from_top = False
        self._texts = None
        self._weights = None
        self._last_match = None
        # The newest page paints at once; a very long list is read in full in a worker.
        first = store.fact_ids(self.host.agent, "live", limit=FIRST_PAGE + 1)
        self._all_ids = IdList.of(first[:FIRST_PAGE])
        self._complete = len(first) <= FIRST_PAGE
        if not self._complete:
            # After the first frames: reading 1M keys holds the GIL for about a second.
            self.set_timer(FULL_LIST_DELAY, self._load_all_ids)
        if self.query_text:
            self._index_texts()
        self._show(keep_id)
        self._placed = self.fact_list.cursor

    @work(thread=True, exclusive=True, group="facts-ids", exit_on_error=False)
    def _load_all_ids(self) -> None:
        store, agent = self.host.store, self.host.agent
        ids = IdList.joined(
            id_pages(
                lambda limit, before: store.fact_ids(agent, "live", limit=limit, before=before)
            )
        )
        if not get_current_worker().is_cancelled:  # a newer reload reads its own
            self.app.call_from_thread(self._ids_ready, ids)

    def _ids_ready(self, ids: IdList) -> None:
        self._all_ids = ids
        self._complete = True
        self._show(self._cursor_id())

    def _cursor_id(self) -> str | None:
        """The fact to keep under the cursor once every id is read: the one it was on
        before the reload (perhaps beyond the first page), unless it has moved since."""
        current = self.current_fact()
        if self.fact_list.cursor == self._placed:
            if self._from_top:
                return None  # still where the new sort put it: at the top
            if self._keep_id is not None:
                return self._keep_id
        return current.id if current else None

    def tick_clock(self) -> None:
        """Ages are relative to now: move the rows' clock and redraw them, without reading
        the store again (the rows on screen are cached)."""
        source = self.fact_list.source
        if isinstance(source, FactRows):
            source.now = self.host.store.now()
            self.fact_list.refresh()

    def _matches(self, needle: str) -> array[int]:
        """Positions in `_texts` of the texts containing `needle`, newest first."""
        if self._texts is None:
            return array("i")
        if self._last_match is not None and self._last_match[0] == needle:
            return self._last_match[1]
        return self._texts.search(needle)

    def _visible_ids(self, matched: array[int] | None = None) -> Sequence[str]:
        ids = self._all_ids
        if self.query_text and self._texts is not None:
            needle = self.query_text.casefold()
            positions = matched if matched is not None else self._matches(needle)
            ids = Picked(self._texts.ids, positions)
        if self.sort == "weight":
            if self._weights is None:
                self._weights = self.host.store.weights(self.host.agent, "live")
            weights = self._weights
            # Heaviest first; among equal weights, newest first (ids grow with time).
            ids = sorted(ids, key=lambda i: (weights.get(i, 0.0), i), reverse=True)
        return ids

    def _show(
        self,
        keep_id: str | None = None,
        matched: array[int] | None = None,
        *,
        partial: bool = False,
    ) -> None:
        if matched is not None and not partial:
            self._last_match = (self.query_text.casefold(), matched)
        ids = self._visible_ids(matched)
        rows = FactRows(ids, self.host.store.find_many, self.host.store.now())
        cursor = rows.index_of(keep_id) if keep_id else None
        self.fact_list.empty_text = no_match_text(self.query_text) if self.query_text else NO_FACTS
        self.fact_list.set_source(rows, cursor=cursor if cursor is not None else 0)
        total = len(self._all_ids) if self._complete else f"{len(self._all_ids)}+"
        found = f"{len(ids)}+" if partial else str(len(ids))
        info = f"{found} of {total}" if self.query_text else f"{total} live"
        if self.query_text and self._texts is None:
            info = "indexing text…"
        self.query_one("#facts-info", Static).update(f"{info} · sorted by {self.sort}")

    @work(thread=True, exclusive=True, group="facts-filter", exit_on_error=False)
    def _filter_in_background(self, query: str) -> None:
        """Long lists are searched off the event loop so typing never waits for results:
        the first matches are shown as soon as they are found, then all of them. A newer
        keystroke cancels this search between two blocks of texts."""
        index = self._texts
        if index is None:
            return
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled

        needle = query.casefold()
        first = index.search(needle, limit=FIRST_MATCHES, cancelled=cancelled)
        complete = len(first) < FIRST_MATCHES
        if not cancelled():
            self.app.call_from_thread(self._filtered, query, first, not complete)
        if complete or cancelled():
            return
        matched = index.search(needle, cancelled=cancelled)
        if not cancelled():
            self.app.call_from_thread(self._filtered, query, matched, False)

    def _filtered(self, query: str, matched: array[int], partial: bool) -> None:
        if query == self.query_text:  # a newer keystroke has its own search running
            current = self.current_fact()
            self._show(current.id if current else None, matched, partial=partial)

    def _index_texts(self) -> None:
        """Build the text index in a worker; one started before (an older reload) is
        cancelled and stops at its next page."""
        self._indexing = True
        self._build_text_index()

    @work(thread=True, exclusive=True, group="facts-index", exit_on_error=False)
    def _build_text_index(self) -> None:
        store, agent = self.host.store, self.host.agent
        worker = get_current_worker()
        pages = text_pages(
            lambda limit, before: store.texts(agent, "live", limit=limit, before=before),
            store.release_mapped_pages,
        )
        index = TextIndex.from_pages(takewhile(lambda _page: not worker.is_cancelled, pages))
        if not worker.is_cancelled:  # a newer reload builds its own; a cleared filter none
            self.app.call_from_thread(self._index_ready, index)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # A build that failed lets the next keystroke try again.
        if event.worker.group == "facts-index" and event.state == WorkerState.ERROR:
            self._indexing = False

    def _index_ready(self, texts: TextIndex) -> None:
        self._indexing = False
        if not self.query_text:
            return  # cleared while it was built: nothing is kept without a filter
        if isinstance(self._all_ids, IdList) and texts.ids == self._all_ids:
            texts.ids = self._all_ids  # the same ids (the usual case): held once
        self._texts = texts
        self._last_match = None
        if self.query_text and len(texts) > BACKGROUND_FILTER:
            self._search(self.query_text)
            return
        current = self.current_fact()
        self._show(current.id if current else self._keep_id)

    def _forget_index(self) -> None:
        """The filter is cleared: let go of the text index and the last search (about
        100 MB at 1M facts); the next filter builds the index again."""
        self.workers.cancel_group(self, "facts-index")
        self.workers.cancel_group(self, "facts-filter")
        self._indexing = False
        self._texts = None
        self._last_match = None

    def _search(self, query: str) -> None:
        self.query_one("#facts-info", Static).update("searching…")
        self._filter_in_background(query)

    # ---- events ----------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        if not self.query_text:
            self._forget_index()
        if self.query_text and self._texts is None and not self._indexing:
            self._index_texts()  # once: the keys typed meanwhile wait for that index
        if self.query_text and self._texts is not None and len(self._texts) > BACKGROUND_FILTER:
            self._search(self.query_text)
            return
        self._show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.fact_list.focus()

    def on_key(self, event: Any) -> None:
        if event.key == "escape" and self.query_one("#filter", Input).has_focus:
            self.fact_list.focus()
            event.stop()

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        fact = self.current_fact()
        if fact is not None:
            self.host.show_fact(fact.id)

    # ---- actions ---------------------------------------------------------------------
    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_toggle_sort(self) -> None:
        """Another order is another list: it is shown from its start (the heaviest fact,
        or the newest) with the cursor there, as a new filter is; a write keeps the
        cursor on its fact instead."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.query_one("#facts-header", Static).update(fact_header(self.sort))
        self._keep_id = None
        self._from_top = True  # a long list, once read in full, starts at its top too
        self._show()
        self._placed = self.fact_list.cursor

    def action_pin(self) -> None:
        fact = self.current_fact()
        if fact is None or not self.host.may_mutate():
            return
        store = self.host.store
        if fact.pinned:
            self.host.run_write(f"unpinned {fact.id}", lambda: store.unpin(fact.id))
        else:
            self.host.run_write(f"pinned {fact.id}", lambda: store.pin(fact.id))

    def action_add(self) -> None:
        if not self.host.may_mutate():
            return
        agent = self.host.agent
        store = self.host.store

        def done(text: str | None) -> None:
            if text and text.strip():
                self.host.run_write("fact added", lambda: store.put(agent, text))

        self.app.push_screen(TextEntryScreen(f"New fact for {agent}"), done)

    def action_revise(self) -> None:
        fact = self.current_fact()
        if fact is None or not self.host.may_mutate():
            return
        store = self.host.store
        # The editor draws what it holds, so it holds the text made safe: a control
        # character shows as its placeholder and is saved as shown if the text is saved.
        shown = literal(fact.text, one_line=False).plain
        hint = "ctrl+s save · esc cancel"
        if shown != fact.text:
            hint = "control characters show as placeholders (␛ …) and save as shown · " + hint

        def done(text: str | None) -> None:
            if text is not None and text not in (fact.text, shown):
                self.host.run_write(
                    "fact revised (the old text is kept as a tombstone)",
                    lambda: store.revise(fact.id, text),
                )

        self.app.push_screen(TextEntryScreen(f"Revise {fact.id}", shown, hint=hint), done)

    def action_retire(self) -> None:
        fact = self.current_fact()
        if fact is None or not self.host.may_mutate():
            return
        if fact.pinned:
            # The store refuses it too; saying so before the question saves a useless yes.
            self.app.notify(
                "This fact is pinned: unpin it (p) before retiring it.",
                title="Not retired",
                severity="warning",
            )
            return
        store = self.host.store

        def done(yes: bool | None) -> None:
            if yes:
                self.host.run_write(f"retired {fact.id}", lambda: store.retire(fact.id))

        self.app.push_screen(
            ConfirmScreen(
                "Retire this fact? It becomes a tombstone (kept until decay prunes it).",
                fact.text,
                yes="Retire",
            ),
            done,
        )
