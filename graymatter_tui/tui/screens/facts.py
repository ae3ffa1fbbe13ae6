"""Facts: the live facts of the chosen agent, filtered as you type, sorted by recency or
weight. Drawn line by line, so 1M facts open as fast as 100."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import takewhile
from typing import Any, TypeVar

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from graymatter_tui.core.c_heap import return_free_pages
from graymatter_tui.core.confidence import CONFIDENCES, UNKNOWN, known
from graymatter_tui.core.model import Fact
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Read
from graymatter_tui.tui.screens.dialogs import ConfirmScreen, TextEntryScreen
from graymatter_tui.tui.screens.paged import id_pages, text_pages
from graymatter_tui.tui.widgets.fact_rows import PAGE, FactRows, Held, fact_header
from graymatter_tui.tui.widgets.id_list import IdList, Picked
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.text_index import TextIndex
from graymatter_tui.tui.widgets.virtual_list import VirtualList

SORTS = ("recency", "weight")
FIRST_PAGE = 5000
FULL_LIST_DELAY = 1.0  # seconds: the first frames are drawn by then
BACKGROUND_FILTER = 50_000  # facts; above this a filter keystroke searches in a worker
FIRST_MATCHES = 1000  # a worker's search shows this many matches before it ends
RETURN_MEMORY_AFTER = 1.0  # seconds after the filter is cleared
NO_FACTS = "No live facts for this agent."
READING = "Reading the store…"  # a list not read yet
T = TypeVar("T")


def no_match_text(query: str) -> str:
    return literal(f"No live fact matches “{query}”.").plain


CONFIDENCE_TERM = "confidence:"
FILTER_LEVELS = (*reversed(CONFIDENCES), UNKNOWN)  # verified, inferred, unverified, unknown


@dataclass(frozen=True)
class FactFilter:
    """What the filter asks for: text to find (the words typed, as typed) and, from
    `confidence:LEVEL[,LEVEL…]` words, the confidences to keep (None: any), or the
    problem with a level that is not one."""

    text: str
    levels: frozenset[str] | None = None
    problem: str = ""

    @classmethod
    def parse(cls, query: str) -> FactFilter:
        words = query.split(" ")
        asked = [w for w in words if w.casefold().startswith(CONFIDENCE_TERM)]
        if not asked:
            return cls(query)
        text = " ".join(w for w in words if w not in asked).strip()
        levels: set[str] = set()
        for word in asked:
            for level in word[len(CONFIDENCE_TERM) :].casefold().split(","):
                if level not in FILTER_LEVELS:
                    shown_level = literal(level or "(nothing)").plain
                    return cls(
                        text,
                        frozenset(),
                        f"confidence: {shown_level} is not one of {', '.join(FILTER_LEVELS)}",
                    )
                levels.add(level)
        return cls(text, frozenset(levels))

    def admits(self, label: str | None) -> bool:
        return self.levels is None or (known(label) or UNKNOWN) in self.levels


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
        # id -> label of the labelled live facts, read when the filter asks for a
        # confidence (None: not read since the last reload).
        self._confidences: dict[str, str] | None = None
        # The last complete search (casefolded needle, positions) of `_texts`, reused
        # when the list is redrawn for another reason (ids loaded, sort changed).
        self._last_match: tuple[str, array[int]] | None = None
        self._keep_id: str | None = None
        self._placed = 0  # where reload (or a new sort) put the cursor
        self._from_top = False  # sorted since the reload: the list starts at its top
        self._complete = True
        self._held = Held()  # the facts read for the rows of this read's lists

    def compose(self) -> ComposeResult:
        with Horizontal(classes="pane-bar"):
            yield Input(placeholder="/ filter as you type", id="filter")
            yield Static("", id="facts-info", classes="pane-info", markup=False)
        yield Static(fact_header(self.sort), id="facts-header", classes="list-header", markup=False)
        yield VirtualList(id="fact-list", empty_text=READING)

    @property
    def fact_list(self) -> VirtualList:
        return self.query_one("#fact-list", VirtualList)

    def current_fact(self) -> Fact | None:
        """The fact under the cursor, if its row has been read (never read here)."""
        source = self.fact_list.source
        if isinstance(source, FactRows):
            return source.held_fact(self.fact_list.cursor)
        return None

    def _cursor_fact_id(self) -> str | None:
        source = self.fact_list.source
        return source.id_at(self.fact_list.cursor) if isinstance(source, FactRows) else None

    # ---- data ------------------------------------------------------------------------
    def read(self, *, keep: bool = True) -> Read:
        """Read ids again (after a write or an agent change), keeping the cursor's fact:
        the newest page, with the weights if the list is sorted by them and the facts of
        the rows drawn first, so that they paint together."""
        keep_id = self._cursor_fact_id() if keep else None
        store, agent = self.host.store, self.host.agent
        by_weight = self.sort == "weight"
        rows = FactRows([], store.find_many, store.now())  # what this read finds, for the rows

        def job() -> Draw:
            first = store.fact_ids(agent, "live", limit=FIRST_PAGE + 1)
            weights = store.weights(agent, "live") if by_weight else None
            shown = list(_ordered(first[:FIRST_PAGE], weights))
            at = shown.index(keep_id) if keep_id in shown else 0
            held = rows.read_ahead(shown[max(at - PAGE // 4, 0) :][:PAGE])
            return partial(self._read_done, first, weights, held, keep_id)

        return job

    def _read_done(
        self,
        first: list[str],
        weights: dict[str, float] | None,
        held: Held,
        keep_id: str | None,
    ) -> None:
        self._keep_id = keep_id
        self._from_top = False
        self._texts = None
        self._weights = weights
        self._confidences = None
        self._last_match = None
        self._held = held
        # The newest page paints at once; a very long list is read in full in a worker.
        self._all_ids = IdList.of(first[:FIRST_PAGE])
        self._complete = len(first) <= FIRST_PAGE
        if not self._complete:
            # After the first frames: reading 1M keys holds the GIL for about a second.
            self.set_timer(FULL_LIST_DELAY, self._load_all_ids)
        if self._filter.text:
            self._index_texts()
        if self._filter.levels:
            self._read_confidences()
        self._show(keep_id)
        self._placed = self.fact_list.cursor

    @property
    def _filter(self) -> FactFilter:
        return FactFilter.parse(self.query_text)

    def _read_confidences(self) -> None:
        store, agent = self.host.store, self.host.agent

        def job() -> dict[str, str]:
            return store.confidences(agent, "live")

        self.host.read_in_thread(self, job, self._confidences_ready, group="facts-confidence")

    def _confidences_ready(self, found: dict[str, str]) -> None:
        self._confidences = found
        self._show(self._cursor_fact_id() or self._keep_id)

    def _load_all_ids(self) -> None:
        store, agent = self.host.store, self.host.agent

        def job() -> IdList:
            return IdList.joined(
                id_pages(
                    lambda limit, before: store.fact_ids(agent, "live", limit=limit, before=before)
                )
            )

        # A newer read supersedes this one, and reads its own.
        self.host.read_in_thread(self, job, self._ids_ready, group="facts-ids")

    def _ids_ready(self, ids: IdList) -> None:
        self._all_ids = ids
        self._complete = True
        self._show(self._cursor_id())

    def _cursor_id(self) -> str | None:
        """The fact to keep under the cursor once every id is read: the one it was on
        before the reload (perhaps beyond the first page), unless it has moved since."""
        if self.fact_list.cursor == self._placed:
            if self._from_top:
                return None  # still where the new sort put it: at the top
            if self._keep_id is not None:
                return self._keep_id
        return self._cursor_fact_id()

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
        wanted = self._filter
        if wanted.text and self._texts is not None:
            needle = wanted.text.casefold()
            positions = matched if matched is not None else self._matches(needle)
            ids = Picked(self._texts.ids, positions)
        if wanted.levels is not None:
            labels = self._confidences
            if labels is None or wanted.problem:
                return []  # not read yet, or a level that is none
            ids = [i for i in ids if wanted.admits(labels.get(i))]
        if self.sort == "weight":
            ids = _ordered(ids, self._weights)
        return ids

    def _show(
        self,
        keep_id: str | None = None,
        matched: array[int] | None = None,
        *,
        partial: bool = False,
    ) -> None:
        wanted = self._filter
        if matched is not None and not partial:
            self._last_match = (wanted.text.casefold(), matched)
        ids = self._visible_ids(matched)
        store = self.host.store
        rows = FactRows(
            ids,
            store.find_many,
            store.now(),
            background=self._in_background,
            loaded=self.fact_list.refresh,
            held=self._held,
        )
        cursor = rows.index_of(keep_id) if keep_id else None
        empty = no_match_text(self.query_text) if self.query_text else NO_FACTS
        if wanted.problem:
            empty = literal(wanted.problem).plain
        elif wanted.levels is not None and self._confidences is None:
            empty = READING
        self.fact_list.empty_text = empty
        self.fact_list.set_source(rows, cursor=cursor if cursor is not None else 0)
        total = len(self._all_ids) if self._complete else f"{len(self._all_ids)}+"
        found = f"{len(ids)}+" if partial else str(len(ids))
        info = f"{found} of {total}" if self.query_text else f"{total} live"
        if wanted.text and self._texts is None:
            info = "indexing text…"
        elif wanted.levels is not None and self._confidences is None and not wanted.problem:
            info = "reading confidence…"
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

        needle = FactFilter.parse(query).text.casefold()
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
            self._show(self._cursor_fact_id(), matched, partial=partial)

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
        if not self._filter.text:
            return  # cleared while it was built: nothing is kept without a filter
        if isinstance(self._all_ids, IdList) and texts.ids == self._all_ids:
            texts.ids = self._all_ids  # the same ids (the usual case): held once
        self._texts = texts
        self._last_match = None
        if len(texts) > BACKGROUND_FILTER:
            self._search(self.query_text)
            return
        self._show(self._cursor_fact_id() or self._keep_id)

    def _forget_index(self) -> None:
        """The filter is cleared: let go of the text index and the last search (about
        100 MB at 1M facts); the next filter builds the index again."""
        held = self._texts is not None or self._indexing
        self.workers.cancel_group(self, "facts-index")
        self.workers.cancel_group(self, "facts-filter")
        self._indexing = False
        self._texts = None
        self._last_match = None
        if held:  # once a cancelled build or search has stopped and dropped its share
            self.set_timer(RETURN_MEMORY_AFTER, return_free_pages)

    def _search(self, query: str) -> None:
        self.query_one("#facts-info", Static).update("searching…")
        self._filter_in_background(query)

    # ---- events ----------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        wanted = self._filter
        if not wanted.text:
            self._forget_index()
        if wanted.levels and self._confidences is None:
            self._read_confidences()  # once a reload: then filtered here, as typed
        if wanted.text and self._texts is None and not self._indexing:
            self._index_texts()  # once: the keys typed meanwhile wait for that index
        if wanted.text and self._texts is not None and len(self._texts) > BACKGROUND_FILTER:
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
        fact_id = self._cursor_fact_id()
        if fact_id is not None:
            self.host.show_fact(fact_id)

    def _in_background(
        self, job: Callable[[], T], then: Callable[[T], None], failed: Callable[[], None]
    ) -> None:
        """The rows' page reads: off the UI thread, several at a time."""
        self.host.read_in_thread(
            self, job, then, group="fact-rows", exclusive=False, failed=lambda _exc: failed()
        )

    # ---- actions ---------------------------------------------------------------------
    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_toggle_sort(self) -> None:
        """Another order is another list: it is shown from its start (the heaviest fact,
        or the newest) with the cursor there, as a new filter is; a write keeps the
        cursor on its fact instead. The weights are read (off the UI thread) first."""
        sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        if sort == "weight" and self._weights is None:
            store, agent = self.host.store, self.host.agent

            def read_weights() -> dict[str, float]:
                return store.weights(agent, "live")

            self.host.read_in_thread(
                self, read_weights, partial(self._sorted, sort), group="facts-weights"
            )
            return
        self._sorted(sort, self._weights)

    def _sorted(self, sort: str, weights: dict[str, float] | None) -> None:
        self._weights = weights
        self.sort = sort
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


def _ordered(ids: Sequence[str], weights: dict[str, float] | None) -> Sequence[str]:
    """Heaviest first; among equal weights, newest first (ids grow with time). Without
    weights, as they are (newest first)."""
    if weights is None:
        return ids
    return sorted(ids, key=lambda i: (weights.get(i, 0.0), i), reverse=True)
