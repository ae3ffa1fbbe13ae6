"""Journal: every cycle newest first; enter replays its diff, u reverts it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import DataTable, Static

from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.core.summariser_names import NETWORKED
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Read
from graymatter_tui.tui.screens.dialogs import ConfirmScreen
from graymatter_tui.tui.screens.past_facts import PastFactsScreen
from graymatter_tui.tui.widgets import stages
from graymatter_tui.tui.widgets.diff_view import DiffView
from graymatter_tui.tui.widgets.kept_table import KeptRowsTable
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.stages import result_grid
from graymatter_tui.tui.widgets.themed import component_styles, redraw_on_theme_change

# The journal grows by one row per cycle, so a DataTable of the newest rows is enough.
JOURNAL_ROWS = 1000
# An outcome → its component class (colours in app.tcss); "revert" is a revert record,
# "reverted" a cycle that a revert undid.
OUTCOME_CLASSES = {
    "applied": "journal--applied",
    "discarded": "journal--discarded",
    "failed": "journal--failed",
    "skipped": "journal--skipped",
    "dry_run": "journal--dry-run",
    "revert": "journal--revert",
    "reverted": "journal--reverted",
}
COMPONENT_CLASSES = set(OUTCOME_CLASSES.values())
OutcomeStyles = Mapping[str, Style]


def outcome_styles(widget: Widget) -> dict[str, Style]:
    """Each outcome's style in the widget's current theme."""
    found = component_styles(widget, COMPONENT_CLASSES)
    return {outcome: found[name] for outcome, name in OUTCOME_CLASSES.items()}


def _style(styles: OutcomeStyles, outcome: str) -> Style:
    return styles.get(outcome, Style.null())


class CycleDiffScreen(ModalScreen[None]):
    """One cycle replayed from its record: what it was, its stages, its diff. The stage
    list scrolls in a band of its own, so on a short terminal the diff keeps its room."""

    COMPONENT_CLASSES = COMPONENT_CLASSES | stages.COMPONENT_CLASSES
    HELP_KEYS = (Binding("tab", "", "Switch between the stages and the diff"),)
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="cycle-diff-back"),
        Action(
            "b",
            "facts_before",
            "Facts before this cycle",
            id="cycle-diff-before",
            title="Show facts before this cycle",
            tooltip="The Facts list as it stood just before this cycle, and what happened since",
        ),
    ]

    def __init__(self, record: CycleRecord, store: MemoryStore | None = None) -> None:
        super().__init__()
        self.record = record
        self.store = store  # for `b`, the facts as they stood before the cycle

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            yield Static("", id="replay-head", markup=False)
            with VerticalScroll(id="replay-stages"):
                yield Static("", id="replay-stage-list", markup=False)
            yield DiffView(id="replay")
            yield Static(
                "esc back · tab switches between the stages and the diff · "
                "b facts as they stood before it",
                classes="dialog-hint",
                markup=False,
            )

    def _draw(self) -> None:
        """The head and the stage list, in the current theme's colours."""
        r = self.record
        styles = outcome_styles(self)
        head = Text()
        if r.kind == "probe_run":
            head.append(f"Probe run {r.cycle_id}", style="bold")
            head.append_text(literal(f"  {r.agent_id} · asked by {r.trigger or 'unknown'}"))
        else:
            head.append(f"Cycle {r.cycle_id}", style="bold")
            head.append_text(literal(f"  {r.agent_id} · {r.summariser}"))
        head.append(f" · {r.outcome}", style=_style(styles, r.outcome))
        if r.reason:
            head.append("\n")
            head.append_text(literal(r.reason, "dim"))
        if r.reverted_by:
            head.append(f"\nreverted by {r.reverted_by}", style=styles["reverted"])
        self.query_one("#replay-head", Static).update(head)
        parts: list[RenderableType] = [
            result_grid(r.stages, stages.stage_styles(self), title_cells=13)
        ]
        if r.pruned:
            pruned = counted(len(r.pruned), "fact")
            parts.append(Text(f"  pruned {pruned} (copies kept in this record)"))
        if r.probes:
            parts.append(probe_lines(r, styles))
        self.query_one("#replay-stage-list", Static).update(Group(*parts))

    def on_mount(self) -> None:
        self._draw()
        redraw_on_theme_change(self, self._draw)
        view = self.query_one(DiffView)
        if self.record.kind == "revert":
            view.show_text(
                f"Revert of cycle {self.record.reverted_cycle_id}: "
                f"{counted(len(self.record.restored), 'fact')} live again, summary "
                f"{self.record.retired_summary_id} retired."
            )
        elif self.record.kind == "probe_run":
            r = self.record
            hits = sum(1 for p in r.probes if p.after)
            view.show_text(
                f"Probes scored ({r.trigger or 'by hand'}): {hits} of "
                f"{counted(len(r.probes), 'probe')} found something. The agent had "
                f"{counted(r.live_facts, 'live fact')}, {counted(r.tombstones, 'tombstone')} "
                f"and {r.pinned} pinned. Nothing was changed; Status › h shows the history."
            )
        elif self.record.kind == "review":
            r = self.record
            wrote = f"; wrote {r.summary_id}" if r.summary_id else ""
            view.show_text(
                f"Review of an agent's {r.action} (proposal {r.proposal_id}, asked by "
                f"{r.asked_by}), {r.outcome} by {r.decided_by}: {counted(len(r.batch), 'fact')} "
                f"matched, {counted(len(r.consumed), 'made a tombstone', 'made tombstones')}"
                f"{wrote}."
            )
        else:
            view.show_record(self.record)
        view.focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_facts_before(self) -> None:
        """The Facts list as it stood just before this record's first write."""
        if self.store is None:
            self.notify("The facts of that moment cannot be read from here.", severity="warning")
            return
        self.app.push_screen(PastFactsScreen(self.store, self.record))


def probe_lines(r: CycleRecord, styles: OutcomeStyles) -> Text:
    """What each probe would find after apply, as checked at review (ADR 0039)."""
    if r.kind == "probe_run":
        out = Text("\n  Probes, scored", style="bold")
        for probe in r.probes:
            out.append("\n  ")
            found = f"{len(probe.after)} found" if probe.after else "finds nothing"
            out.append(f"{found:<14}", style="dim")
            out.append(f"top {probe.k:<3} ", style="dim")
            out.append_text(literal(probe.query))
        return out
    out = Text("\n  Probes, checked before apply", style="bold")
    for probe in r.probes:
        flagged = "discarded" if probe.lost else ""
        out.append("\n  ")
        out.append(f"{probe.verdict:<11}", style=_style(styles, flagged) if flagged else "dim")
        out.append(f"top {probe.k:<3} ", style="dim")
        out.append_text(literal(probe.query))
        for fact_id in probe.lost:
            out.append(f"\n      lost {fact_id}", style="dim")
    return out


def _outcome(r: CycleRecord, styles: OutcomeStyles) -> Text:
    if r.kind == "revert":
        return Text("revert", style=_style(styles, "revert"))
    # A person's decision on an agent's change must not read as a consolidation's outcome.
    # A cycle with no outcome yet is still running, or its process ended before it did.
    said = f"review {r.outcome}" if r.kind == "review" else (r.outcome or "unfinished")
    if r.kind == "probe_run":
        said = "probes scored"
    return Text(said + (" ↺" if r.reverted_by else ""), style=_style(styles, r.outcome))


def _when(r: CycleRecord) -> str:
    """When the record's work was done: a review's, when the person decided (the agent
    asked earlier, at `started_at`); the list's order is by this time."""
    return r.finished_at or r.started_at if r.kind == "review" else r.started_at


def _consumed(r: CycleRecord) -> str:
    if r.kind == "probe_run":
        return ""  # a run consumes nothing
    return str(len(r.restored) if r.kind == "revert" else len(r.consumed))


def _latency(r: CycleRecord, styles: OutcomeStyles | None = None) -> Text:
    networked = r.summariser in NETWORKED
    return Text(f"{r.latency_ms:.0f} ms" if networked and r.kind != "revert" else "")


# Every cell is Text: a str cell would be parsed as markup (agent names are data). A cell
# is drawn from the record and the outcomes' styles (no colour when measuring widths).
CELLS: dict[str, Callable[[CycleRecord, OutcomeStyles], Text]] = {
    "time": lambda r, _s: Text(_when(r)[:19].replace("T", " ")),
    "time ": lambda r, _s: Text(_when(r)[5:16].replace("T", " ")),  # short: 11-30 12:00
    "agent": lambda r, _s: literal(r.agent_id)[:20],
    "outcome": _outcome,
    "consumed": lambda r, _s: Text(
        ""
        if r.kind == "probe_run"
        else str(len(r.restored) if r.kind == "revert" else len(r.consumed))
    ),
    "pruned": lambda r, _s: Text("" if r.kind in ("revert", "probe_run") else str(len(r.pruned))),
    "summariser": lambda r, _s: Text(r.summariser or "—"),
    "latency": _latency,
    "cycle": lambda r, _s: Text(r.cycle_id),
    "cycle ": lambda r, _s: Text("…" + r.cycle_id[-8:]),  # short; the info line has it whole
}
# What an auditor reads first comes first. The widest set that fits is shown; narrower
# terminals lose the latency, then the summariser, then the id's head, then the seconds
# and the pruned count. The highlighted row's full id is always on the line below.
JOURNAL_COLUMNS = (
    "time",
    "agent",
    "outcome",
    "consumed",
    "pruned",
    "summariser",
    "latency",
    "cycle",
)
COLUMN_SETS: tuple[tuple[str, ...], ...] = (
    JOURNAL_COLUMNS,
    ("time", "agent", "outcome", "consumed", "pruned", "summariser", "cycle"),
    ("time", "agent", "outcome", "consumed", "pruned", "cycle"),
    ("time", "agent", "outcome", "consumed", "pruned", "cycle "),
    ("time ", "agent", "outcome", "consumed", "cycle "),
)
CELL_PADDING = 2  # DataTable: one cell of padding each side
SCROLLBAR = 2


def fitting_columns(records: list[CycleRecord], width: int) -> tuple[tuple[str, int], ...]:
    """The widest column set whose cells all fit in `width` cells, each column with the
    width of its widest cell (fixed widths: the table never has to re-measure)."""
    for columns in COLUMN_SETS:
        widths = tuple(
            (
                name,
                max([cell_len(name.strip())] + [CELLS[name](r, {}).cell_len for r in records]),
            )
            for name in columns
        )
        if SCROLLBAR + sum(cells + CELL_PADDING for _name, cells in widths) <= width:
            return widths
    return widths


class JournalTable(KeptRowsTable):
    """The journal's rows; the same movement keys as the fact lists."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("home", "scroll_top", "First", show=False),
        Binding("end", "scroll_bottom", "Last", show=False),
    ]

    def on_resize(self) -> None:
        """Fewer rows (a toast or the error bar took some): the cursor's stays in view."""
        if self.row_count:
            self.move_cursor(row=self.cursor_row, animate=False)


class JournalPane(Vertical, Pane):
    TITLE = "Journal"
    FOCUS = "#journal-table"
    HELP_KEYS = (Binding("enter", "", "Replay the cycle's diff"),)
    COMPONENT_CLASSES = COMPONENT_CLASSES
    BINDINGS = [
        Action(
            "u",
            "revert",
            "Revert cycle",
            id="journal-revert",
            tooltip="Revert the cycle selected in the journal",
        ),
        Action(
            "c",
            "copy_id",
            "Copy cycle id",
            id="journal-copy",
            tooltip="Copy the selected cycle's id (for graymatter-tui revert)",
        ),
        Action(
            "b",
            "facts_before",
            "Facts before",
            id="journal-before",
            title="Show facts before the cycle",
            tooltip="The Facts list as it stood just before the selected cycle",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.records: list[CycleRecord] = []
        self.columns: tuple[tuple[str, int], ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("", id="journal-info", classes="pane-bar-line", markup=False)
        yield JournalTable(id="journal-table", cursor_type="row")
        yield Static("", id="journal-row", classes="pane-bar-line", markup=False)

    def on_mount(self) -> None:
        redraw_on_theme_change(self, self._restyle)

    def _restyle(self) -> None:
        """The outcome cells carry the old theme's colours: draw the rows again."""
        current = self.selected()
        self._fill(current.cycle_id if current else None)

    def read(self, *, keep: bool = True) -> Read:
        current = self.selected() if keep else None
        keep_id = current.cycle_id if current else None
        store = self.host.store

        def job() -> Draw:
            return partial(self._read_done, store.records(limit=JOURNAL_ROWS), keep_id)

        return job

    def _read_done(self, records: list[CycleRecord], keep_id: str | None) -> None:
        self.records = records
        self._fill(keep_id)
        count = len(self.records)
        self.query_one("#journal-info", Static).update(
            f" {counted(count, 'record')}, newest first · enter replays the diff"
            " · u reverts · c copies the id · b facts before it"
        )

    def _fill(self, keep_id: str | None) -> None:
        table = self.query_one("#journal-table", JournalTable)
        columns = fitting_columns(self.records, self.size.width or self.app.size.width)
        if columns != self.columns:
            table.clear(columns=True)
            for name, cells in columns:
                table.add_column(name.strip(), width=cells)
            self.columns = columns
        styles = outcome_styles(self)
        table.show_rows(
            [
                (r.cycle_id, tuple(CELLS[name](r, styles) for name, _cells in columns))
                for r in self.records
            ]
        )
        if self.records:
            index = next((i for i, r in enumerate(self.records) if r.cycle_id == keep_id), 0)
            table.move_cursor(row=index)
        self._show_selected()

    def select(self, key: str) -> bool:
        """Put the cursor on cycle `key` (False: it is not among the newest
        `JOURNAL_ROWS` records, as last read)."""
        index = next((i for i, r in enumerate(self.records) if r.cycle_id == key), None)
        if index is None:
            return False
        self.query_one("#journal-table", DataTable).move_cursor(row=index)
        self._show_selected()
        return True

    def on_resize(self) -> None:
        if self.records and fitting_columns(self.records, self.size.width) != self.columns:
            current = self.selected()
            self._fill(current.cycle_id if current else None)

    def selected(self) -> CycleRecord | None:
        table = self.query_one("#journal-table", DataTable)
        if not self.records or table.cursor_row < 0:
            return None
        return self.records[min(table.cursor_row, len(self.records) - 1)]

    def _show_selected(self) -> None:
        """The highlighted record's whole id (for `graymatter-tui revert ID`) and the
        columns a narrow table had to leave out."""
        record = self.selected()
        line = Text(no_wrap=True, overflow="ellipsis")
        if record is not None:
            line.append(" cycle ", style="dim")
            line.append(record.cycle_id, style="bold")
            details = [record.kind, record.summariser or "no summariser"]
            if latency := _latency(record).plain:
                details.append(latency)
            if record.probes_lost:
                details.append(f"probes lost {counted(record.probes_lost, 'fact')}")
            line.append(" · " + " · ".join(details), style="dim")
        self.query_one("#journal-row", Static).update(line)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_selected()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        record = self.selected()
        if record is not None:
            self.app.push_screen(CycleDiffScreen(record, self.host.store))

    def action_facts_before(self) -> None:
        record = self.selected()
        if record is not None:
            self.app.push_screen(PastFactsScreen(self.host.store, record))

    def action_copy_id(self) -> None:
        record = self.selected()
        if record is None:
            return
        self.app.copy_to_clipboard(record.cycle_id)
        self.app.notify(
            f"Copied {record.cycle_id} (for graymatter-tui revert). A terminal without "
            "clipboard access (OSC 52) ignores it: the id is on the line under the table."
        )

    def action_revert(self) -> None:
        record = self.selected()
        if record is None or not self.host.may_mutate():
            return
        store = self.host.store

        def refusal() -> str | None:
            try:
                return store.revert_refusal(record.cycle_id)
            except (NotFound, Conflict, InvalidInput) as exc:  # a refusal, not a failure
                return str(exc)

        self.host.read_in_thread(
            self, refusal, partial(self._revert_if_allowed, record), group="revert-refusal"
        )

    def _revert_if_allowed(self, record: CycleRecord, refusal: str | None) -> None:
        store = self.host.store
        if refusal:
            # The store refuses it too; saying so before the question saves a useless yes.
            self.app.notify(
                literal(refusal).plain,
                title="Cannot revert",
                severity="warning",
                markup=False,
            )
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.host.run_write(
                    f"cycle {record.cycle_id} reverted", lambda: store.revert(record.cycle_id)
                )

        what = "review" if record.kind == "review" else "cycle"
        detail = (
            f"The agent's approved {record.action} is undone: facts it made tombstones live "
            "again, a fact it wrote is retired, a pin it changed goes back. A revert record "
            "joins the journal."
            if record.kind == "review"
            else f"Its {counted(len(record.consumed), 'consumed fact')} "
            f"{'becomes' if len(record.consumed) == 1 else 'become'} live again and its "
            "summary is retired. A revert record joins the journal."
        )
        self.app.push_screen(
            ConfirmScreen(f"Revert {what} {record.cycle_id}?", detail, yes="Revert"),
            done,
        )
