"""Activity: every write to the store, from every process, newest first, as it happens
(ADR 0025). Rows are drawn line by line from the entries held; the pane holds at most
`HELD_MAX` of them and reads older ones back (`before=`) as the cursor goes down.

Staying live costs one small read per change: the store's watch moves the app's
`generation` once however many writes arrived, and the pane then reads only the entries
after the newest it holds (`after=`) and draws once. Every read runs off the UI thread;
reading older (or newer) entries as the cursor moves is one read at a time, and a read
that lands after the feed was read afresh (another filter) is dropped."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from graymatter_tui.core.model import ActivityEntry
from graymatter_tui.core.words import counted
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Read
from graymatter_tui.tui.screens.dialogs import ChooseScreen
from graymatter_tui.tui.widgets.activity_rows import ActivityRows, activity_header
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from graymatter_tui.views.activity_feed import ANY_MCP, FeedFilter, FeedPage, read_page

T = TypeVar("T")

HELD_MAX = 10_000  # entries held (~6 MB); older ones are read again when scrolled to
PAGE = 500  # entries read at a time
NEAR_END = 200  # rows left below the cursor that make the pane read older entries
SCAN_STEP = 5_000  # entries a filtered read looks through per step (one read)
# Writes that open a cycle rather than a fact.
CYCLE_ACTIONS = frozenset({"consolidation", "revert", "prune"})
EVERY_SOURCE = "*"  # the chooser's value for no source filter (an option id cannot be "")
SEARCHING = "Searching older writes…"
NO_WRITES = "No writes yet: the feed shows every write to the store, from every process."


def no_match_text(feed_filter: FeedFilter) -> str:
    return literal(f"No write matches {feed_filter.describe()} (s and a change the filter).").plain


class ActivityPane(Vertical, Pane):
    TITLE = "Activity"
    FOCUS = "#activity-list"
    # Pairs the embedder's pass holds move only the review queue and the feed (app.py).
    DEPENDS_ON = ("review_generation",)
    HELP_KEYS = (Binding("enter", "", "Open the fact, or the cycle in the Journal"),)
    BINDINGS = [
        Action(
            "s",
            "filter_source",
            "Source",
            id="activity-source",
            title="Filter activity by source",
            tooltip="Show the writes of one source (cli, tui, mcp:…) or of every source",
        ),
        Action(
            "a",
            "filter_agent",
            "Agent filter",
            id="activity-agent",
            title="Filter activity by agent",
            tooltip="Switch between every agent's writes and the current agent's",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[ActivityEntry] = []
        self.source_filter = ""
        self.own_agent_only = False  # every agent's writes until `a` narrows them
        self.redraws = 0  # times the list was given new rows (the tests count them)
        self._loaded: FeedFilter | None = None  # the filter `entries` were read with
        self._newest = 0  # the newest write number read, matching or not
        self._older: int | None = None  # where older matching entries continue (None: none)
        self._unseen = 0  # new rows above the view while it is scrolled down
        # Newer rows than the first held were let go of (reading far down the feed).
        self._gap_above = False
        self._paging = False  # a read of older or newer entries is in flight
        self._version = 0  # moves when the feed is read afresh: older pages are dropped

    def compose(self) -> ComposeResult:
        with Horizontal(classes="pane-bar"):
            yield Static("", id="activity-filter", classes="pane-header", markup=False)
            yield Static("", id="activity-info", classes="pane-info", markup=False)
        yield Static("", id="activity-header", classes="list-header", markup=False)
        yield VirtualList(id="activity-list", empty_text=NO_WRITES)
        yield Static("", id="activity-row", classes="pane-bar-line", markup=False)

    @property
    def feed_list(self) -> VirtualList:
        return self.query_one("#activity-list", VirtualList)

    @property
    def feed_filter(self) -> FeedFilter:
        return FeedFilter(self.source_filter, self.host.agent if self.own_agent_only else "")

    def current_entry(self) -> ActivityEntry | None:
        source = self.feed_list.source
        return source.entry(self.feed_list.cursor) if isinstance(source, ActivityRows) else None

    # ---- reading -----------------------------------------------------------------------
    def read(self) -> Read:
        """New writes since the last read, on top; everything again if the filter (or
        the agent it follows) changed."""
        wanted = self.feed_filter
        store, after = self.host.store, self._newest
        fresh_start = wanted != self._loaded

        def job() -> Draw:
            if not fresh_start:
                fresh = store.activity(after=after, limit=HELD_MAX + 1)
                if len(fresh) <= HELD_MAX:  # else more than the pane holds: start again
                    return partial(self._read_new, wanted, fresh)
            page = read_page(store, wanted, want=PAGE, scan_limit=SCAN_STEP)
            return partial(self._read_newest, wanted, page)

        return job

    def _read_newest(self, wanted: FeedFilter, page: FeedPage) -> None:
        self._version += 1
        self._paging = False
        self.entries = page.entries
        self._older = page.next_before
        self._newest = page.newest
        self._loaded = wanted
        self._unseen = 0
        self._gap_above = False
        self._show(cursor=0)
        self._read_older_if_near_end()

    def _read_new(self, wanted: FeedFilter, fresh: list[ActivityEntry]) -> None:
        if not fresh:
            return
        self._newest = fresh[0].seq
        matching = [e for e in fresh if wanted.matches(e)]
        if not matching:
            return
        if self._gap_above:
            # The newest rows were let go while reading far down: these join them when
            # the cursor goes back up; until then they are only counted.
            self._unseen += len(matching)
            self._update_info()
            return
        # On the newest row with the view at the top, the cursor follows the feed (stays
        # on the newest); anywhere else it stays on its entry, which moves down by the
        # rows added above it.
        feed_list = self.feed_list
        following = feed_list.cursor == 0 and feed_list.scroll_offset.y == 0
        cursor = 0 if following or not self.entries else feed_list.cursor + len(matching)
        self.entries[:0] = matching
        if feed_list.scroll_offset.y > 0:
            self._unseen += len(matching)
        self._show(cursor=self._trim_bottom(cursor))

    def _page(self, job: Callable[[], T], then: Callable[[T], None]) -> None:
        """Read older or newer entries, one read at a time; what lands after the feed
        was read afresh is dropped."""
        self._paging = True
        version = self._version

        def landed(found: T) -> None:
            if version != self._version:
                return
            self._paging = False
            then(found)

        def lost(_error: object) -> None:
            if version == self._version:
                self._paging = False

        self.host.read_in_thread(self, job, landed, group="activity-page", failed=lost)

    def _trim_bottom(self, cursor: int) -> int:
        """Let go of the oldest rows beyond `HELD_MAX`, never those near the cursor; they
        are read again (`before=`) if the cursor goes there."""
        keep = max(HELD_MAX, cursor + NEAR_END)
        if keep < len(self.entries):
            del self.entries[keep:]
            self._older = self.entries[-1].seq
        return cursor

    def _trim_top(self, cursor: int) -> int:
        """Let go of the newest rows beyond `HELD_MAX`, never those near the cursor; they
        are read again (`after=`) if the cursor goes back up. Returns the new cursor."""
        drop = min(len(self.entries) - HELD_MAX, cursor - NEAR_END)
        if drop > 0:
            del self.entries[:drop]
            self._gap_above = True
            cursor -= drop
        return cursor

    def _read_older_if_near_end(self) -> None:
        """Read the next older page when the cursor comes near the last row held (or,
        with a filter, until a screenful matches or the feed ends)."""
        if self._older is None or self._loaded is None or self._paging:
            return
        rows_below = len(self.entries) - self.feed_list.cursor
        if rows_below > NEAR_END:
            return
        store, loaded, before = self.host.store, self._loaded, self._older
        self._page(
            lambda: read_page(store, loaded, want=PAGE, before=before, scan_limit=SCAN_STEP),
            self._older_read,
        )

    def _older_read(self, page: FeedPage) -> None:
        self._older = page.next_before
        if page.entries:
            self.entries.extend(page.entries)
            self._show(cursor=self._trim_top(self.feed_list.cursor))
        elif self._older is None:
            # The search ended: the count loses its "+", an empty list says nothing matched.
            if self.entries:
                self._update_info()
            else:
                self._show(cursor=0)
        if self._older is not None:
            # A long filtered scan goes on a step at a time, each step one read.
            self._read_older_if_near_end()

    def _read_newer_if_near_top(self) -> None:
        """Back up towards rows let go of: the newest again at the first row, else the
        writes just newer than the first row held (write numbers have no gaps, so a
        range of them is one bounded read)."""
        if not self._gap_above or self._loaded is None or not self.entries or self._paging:
            return
        cursor = self.feed_list.cursor
        store, loaded = self.host.store, self._loaded
        if cursor == 0:
            self._page(
                lambda: read_page(store, loaded, want=PAGE, scan_limit=SCAN_STEP),
                partial(self._read_newest, loaded),
            )
            return
        if cursor > NEAR_END:
            return
        top = self.entries[0].seq
        window = PAGE if not loaded.active else SCAN_STEP
        before = min(top + window + 1, self._newest + 1)
        self._page(
            lambda: read_page(store, loaded, want=window, after=top, before=before),
            partial(self._newer_read, before),
        )

    def _newer_read(self, before: int, page: FeedPage) -> None:
        cursor = self.feed_list.cursor
        self._gap_above = before <= self._newest
        if not self._gap_above:
            self._unseen = 0
        self.entries[:0] = page.entries
        self._show(cursor=self._trim_bottom(cursor + len(page.entries)))

    # ---- drawing -----------------------------------------------------------------------
    def _show(self, *, cursor: int) -> None:
        self.redraws += 1
        feed_list = self.feed_list
        feed_list.empty_text = NO_WRITES
        if self._loaded is not None and self._loaded.active:
            searching = self._older is not None
            feed_list.empty_text = SEARCHING if searching else no_match_text(self._loaded)
        feed_list.set_source(ActivityRows(self.entries), cursor=cursor)
        self._update_info()
        self._show_selected()

    def _update_info(self) -> None:
        if self.feed_list.scroll_offset.y == 0 and not self._gap_above:
            self._unseen = 0
        wanted = self._loaded or self.feed_filter
        count = len(self.entries)
        info = counted(count, "write", at_least=self._older is not None)
        if self._unseen:
            info = f"{self._unseen} new ↑ home · {info}"
        self.query_one("#activity-info", Static).update(info)
        self.query_one("#activity-filter", Static).update(
            literal(f" Showing {wanted.describe()} · s source · a agent · enter opens")
        )

    def _show_selected(self) -> None:
        """The highlighted entry whole: a narrow list cuts its columns."""
        entry = self.current_entry()
        line = ""
        if entry is not None:
            parts = [f" #{entry.seq}", entry.at, entry.source, f"agent {entry.agent_id}"]
            parts.append(entry.action if entry.count <= 1 else f"{entry.action} ×{entry.count}")
            if entry.fact_id:
                parts.append(f"fact {entry.fact_id}")
            if entry.cycle_id:
                parts.append(f"cycle {entry.cycle_id}")
            line = " · ".join(parts)
        self.query_one("#activity-row", Static).update(literal(line))

    def on_resize(self) -> None:
        self.call_after_refresh(self._update_header)

    def _update_header(self) -> None:
        width = self.feed_list.scrollable_content_region.width or self.size.width
        self.query_one("#activity-header", Static).update(activity_header(width))

    def on_virtual_list_highlighted(self, event: VirtualList.Highlighted) -> None:
        if self._unseen and self.feed_list.scroll_offset.y == 0:
            self._update_info()
        self._show_selected()
        self._read_older_if_near_end()
        self._read_newer_if_near_top()

    # ---- opening an entry ----------------------------------------------------------------
    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        if entry.action in CYCLE_ACTIONS and entry.cycle_id:
            self.host.show_cycle(entry.cycle_id)
            return
        if not entry.fact_id:
            self.app.notify(
                literal(f"This {entry.action} names no single fact: {entry.text}").plain,
                markup=False,
            )
            return
        store, fact_id = self.host.store, entry.fact_id
        self.host.read_in_thread(
            self, lambda: store.find(fact_id), partial(self._open, fact_id), group="activity-open"
        )

    def _open(self, fact_id: str, found: object) -> None:
        if found is None:
            self.app.notify(
                f"Fact {fact_id} is no longer in the store: it was pruned since.",
                severity="warning",
                markup=False,
            )
            return
        self.host.show_fact(fact_id)

    # ---- filters -----------------------------------------------------------------------
    def action_filter_source(self) -> None:
        seen = sorted({e.source for e in self.entries} | {self.source_filter} - {""})
        choices = [(EVERY_SOURCE, "every source")]
        if any(s.startswith(ANY_MCP + ":") for s in seen):
            choices.append((ANY_MCP, "mcp (every MCP client)"))
        choices += [(s, s) for s in seen if s != ANY_MCP]

        def chosen(value: str | None) -> None:
            if value is None:
                return
            value = "" if value == EVERY_SOURCE else value
            if value != self.source_filter:
                self.source_filter = value
                self.invalidate()

        current = self.source_filter or EVERY_SOURCE
        self.app.push_screen(ChooseScreen("Show writes from", choices, current), chosen)

    def action_filter_agent(self) -> None:
        self.own_agent_only = not self.own_agent_only
        self.invalidate()
