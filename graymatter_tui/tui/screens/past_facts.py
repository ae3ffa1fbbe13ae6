"""The Facts list as it stood at a past moment (just before a journal record): the
facts live then, and for each what a later cycle, revision, retirement or prune did to
it, naming the record. Read-only, marked as the past by a banner; `esc` returns to now.

The moment's facts are read in a worker thread (a whole agent's facts, 100k of them in
well under a second), and drawn line by line from what that read returned: scrolling
never reads the store.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from graymatter_tui.core import clock
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore, PastFact, PastFacts
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.widgets.fact_rows import DIM, PLAIN, column, fit
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.row_styles import NO_COLOUR, RowStyles
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from graymatter_tui.views.past import APPROXIMATE_NOTE, event_line, events, short

# Where each fact is now, as the row's first cell: still live, a tombstone, pruned.
MARKS = {"live": " ", "tombstone": "†", "pruned": "✗"}
LEAD = 9  # " †  12mo " before the text
BANNER = "past-facts--banner"
NO_FACTS = "No fact of this agent was live then."
STRUCK = Style(strike=True)


SINCE = 56  # `→ 12-20 12:00 consumed by cycle …NR8X (+1 later)`, a gap and the scrollbar


def text_cells(width: int) -> int:
    """The fact's text gets what the fixed columns and a whole "since" cell leave, but at
    least 34 cells or half the rest (a narrow terminal cuts "since", which the lines
    under the list give whole), and at most 60."""
    rest = width - LEAD
    return max(16, min(60, max(rest - SINCE, min(rest // 2, 34))))


def past_header(width: int) -> str:
    """Column titles over `PastRows.row` at the same width."""
    cells = text_cells(width)
    title = "text, as it was live then"
    if len(title) > cells:
        title = "text then"
    return " now age " + title.ljust(cells) + " since"


class PastRows:
    """The facts of a past moment: where each is now, its age then, its text, and the
    first thing that happened to it since (all of it in the lines under the list)."""

    def __init__(self, past: PastFacts, moment: datetime) -> None:
        self.past = past
        self.moment = moment

    def __len__(self) -> int:
        return len(self.past.facts)

    def item(self, index: int) -> PastFact | None:
        facts = self.past.facts
        return facts[index] if 0 <= index < len(facts) else None

    def row(self, index: int, width: int, styles: RowStyles = NO_COLOUR) -> list[Segment]:
        item = self.item(index)
        if item is None or item.fact is None:
            return [Segment("  (unavailable)", DIM)]
        fact = item.fact
        age = clock.short_age(self.moment, fact.created_at)
        since = short(item, self.past.moment)
        text = literal(fact.text).plain  # made safe: controls shown as placeholders
        lead = f" {MARKS[item.now]}  {age:>4} "
        body = column(text, text_cells(width), STRUCK if item.now != "live" else PLAIN)
        row = [Segment(lead, styles.pinned if fact.pinned else DIM), *body, Segment(" ", PLAIN)]
        row.append(Segment(("→ " + since) if since else "unchanged", DIM))
        return fit(row, width)


class PastFactsScreen(ModalScreen[None]):
    """The agent's facts as they stood just before `record` (its first write)."""

    COMPONENT_CLASSES = {BANNER}
    DEFAULT_CSS = """
    PastFactsScreen .past-facts--banner { text-style: bold reverse; }
    PastFactsScreen #past-banner { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    PastFactsScreen #past-info { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    PastFactsScreen #past-list { height: 1fr; }
    PastFactsScreen #past-detail { height: auto; max-height: 8; color: $text-muted; }
    """
    HELP_KEYS = (Binding("enter", "", "Open the fact as it is now (not a pruned one)"),)
    BINDINGS = [
        Binding("escape,q", "close", "Back to now", id="past-facts-back"),
        Action(
            "c",
            "only_changed",
            "Only changed",
            id="past-facts-changed",
            title="Show only facts changed since",
            tooltip="Switch between every fact live then and those changed since",
        ),
    ]

    def __init__(self, store: MemoryStore, record: CycleRecord) -> None:
        super().__init__()
        self.store = store
        self.record = record
        self.past: PastFacts | None = None
        self.only_changed = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            yield Static("", id="past-banner", markup=False)
            yield Static("reading the facts of that moment…", id="past-info", markup=False)
            yield Static("", id="past-header", classes="list-header", markup=False)
            yield VirtualList(id="past-list", empty_text=NO_FACTS)
            yield Static("", id="past-detail", markup=False)
            yield Static(
                "esc back to now · c only changed · enter open · read-only",
                classes="dialog-hint",
                markup=False,
            )

    @property
    def fact_list(self) -> VirtualList:
        return self.query_one("#past-list", VirtualList)

    def on_mount(self) -> None:
        banner = Text(" PAST ", style="bold")
        banner.append(f" as of {self._stamp()} UTC — esc returns to now ")
        banner.stylize(self.get_component_rich_style(BANNER))
        self.query_one("#past-banner", Static).update(banner)
        self.query_one("#past-info", Static).update(self._where("reading the facts…"))
        self.fact_list.focus()
        self._read()

    def _stamp(self) -> str:
        r = self.record
        stamp = (r.finished_at if r.kind == "review" else r.started_at) or r.finished_at
        return stamp[:19].replace("T", " ")

    def _where(self, said: str) -> Text:
        """`<said> · just before cycle C of agent A`, on one line (what was read first:
        a narrow terminal cuts the record's id, not the counts)."""
        r = self.record
        what = "review" if r.kind == "review" else ("revert" if r.kind == "revert" else "cycle")
        line = literal(f"{said} · just before {what} {r.cycle_id} of {r.agent_id}")
        line.no_wrap = True
        line.overflow = "ellipsis"
        return line

    @work(thread=True, exclusive=True, group="past-facts", exit_on_error=False)
    def _read(self) -> None:
        try:
            past: PastFacts | GraymatterError = self.store.past_facts(
                None, AsOf(record=self.record.cycle_id)
            )
        except GraymatterError as exc:
            past = exc
        self.app.call_from_thread(self._ready, past)

    def _ready(self, past: PastFacts | GraymatterError) -> None:
        info = self.query_one("#past-info", Static)
        if isinstance(past, GraymatterError):
            info.update(literal(f"Cannot read the facts of that moment: {past}"))
            return
        self.past = past
        self._fill()

    def _fill(self) -> None:
        """The list: every fact live then, or (`c`) only those changed since."""
        past = self.past
        if past is None:
            return
        moment = clock.parse_time(past.moment.at)
        changed = [p for p in past.facts if p.later]
        shown = replace(past, facts=changed) if self.only_changed else past
        self.fact_list.empty_text = (
            "No fact of that moment has changed since." if self.only_changed else NO_FACTS
        )
        self.fact_list.set_source(PastRows(shown, moment), cursor=0)
        self.on_resize()  # the header at the list's own width, as its rows are drawn
        live = counted(len(past.facts), "fact")
        said = f"{live} live then, {len(changed)} changed since"
        if self.only_changed:
            said += " (only those shown: c shows all)"
        self.query_one("#past-info", Static).update(self._where(said))
        self._show_selected()

    def action_only_changed(self) -> None:
        self.only_changed = not self.only_changed
        self._fill()

    def on_resize(self) -> None:
        width = self.fact_list.size.width or self.size.width or 80
        self.query_one("#past-header", Static).update(past_header(width))

    def selected(self) -> PastFact | None:
        source = self.fact_list.source
        return source.item(self.fact_list.cursor) if isinstance(source, PastRows) else None

    def _show_selected(self) -> None:
        """The highlighted fact's whole history since the moment, and its text."""
        item = self.selected()
        detail = self.query_one("#past-detail", Static)
        if item is None or item.fact is None or self.past is None:
            detail.update("")
            return
        out = Text()
        out.append(f"{item.fact_id} ", style="bold")
        out.append_text(literal(item.fact.text))
        happened = events(item, self.past.moment)
        if not happened:
            out.append("\n  still live, unchanged since")
        for event in happened:
            out.append("\n  ↳ ")
            out.append_text(literal(event_line(event)))
        if item.now == "pruned":
            out.append("\n  (pruned since: its copy is in the journal record that pruned it)")
        if item.approximate:
            out.append("\n  ")
            out.append_text(literal(APPROXIMATE_NOTE))
        detail.update(out)

    def on_virtual_list_highlighted(self, event: VirtualList.Highlighted) -> None:
        self._show_selected()

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        item = self.selected()
        if item is not None and item.now != "pruned":
            self.app.push_screen(FactDetailScreen(self.store, item.fact_id))

    def action_close(self) -> None:
        self.dismiss(None)
