"""Journal: every cycle newest first; enter replays its diff, u reverts it."""

from __future__ import annotations

from typing import cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from graymatter_tui.model import CycleRecord
from graymatter_tui.screens.base import Host
from graymatter_tui.screens.dialogs import ConfirmScreen
from graymatter_tui.textsafe import neutralise
from graymatter_tui.widgets.diff_view import DiffView

# The journal grows by one row per cycle, so a DataTable of the newest rows is enough.
JOURNAL_ROWS = 1000
OUTCOME_STYLE = {
    "applied": "green",
    "discarded": "yellow",
    "failed": "red",
    "skipped": "dim",
    "dry_run": "cyan",
}


class CycleDiffScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Back", id="cycle-diff-back")]

    def __init__(self, record: CycleRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog detail"):
            head = Text()
            head.append(f"Cycle {r.cycle_id}", style="bold")
            head.append(f"  {neutralise(r.agent_id, one_line=True)} · {r.summariser}")
            head.append(f" · {r.outcome}", style=OUTCOME_STYLE.get(r.outcome, ""))
            if r.reason:
                head.append(f"\n{neutralise(r.reason, one_line=True)}", style="dim")
            if r.reverted_by:
                head.append(f"\nreverted by {r.reverted_by}", style="yellow")
            for stage in r.stages:
                head.append(f"\n  ✓ {stage.stage:<12} {neutralise(stage.summary, one_line=True)}")
            if r.pruned:
                head.append(f"\n  pruned {len(r.pruned)} facts (copies kept in this record)")
            yield Static(head, markup=False)
            yield DiffView(id="replay")
            yield Static("esc back", classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        if self.record.kind == "revert":
            self.query_one(DiffView).show_text(
                f"Revert of cycle {self.record.reverted_cycle_id}: "
                f"{len(self.record.restored)} facts live again, summary "
                f"{self.record.retired_summary_id} retired."
            )
        else:
            self.query_one(DiffView).show_record(self.record)

    def action_close(self) -> None:
        self.dismiss(None)


# What an auditor reads first comes first: a narrow terminal cuts the table from the right.
JOURNAL_COLUMNS = (
    "time",
    "agent",
    "kind",
    "outcome",
    "consumed",
    "pruned",
    "summariser",
    "latency",
    "cycle",
)


class JournalTable(DataTable[Text]):
    """The journal's rows; the same movement keys as the fact lists."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("home", "scroll_top", "First", show=False),
        Binding("end", "scroll_bottom", "Last", show=False),
    ]


class JournalPane(Vertical):
    BINDINGS = [Binding("u", "revert", "Revert cycle", id="journal-revert")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.records: list[CycleRecord] = []

    @property
    def host(self) -> Host:
        return cast(Host, self.app)

    def compose(self) -> ComposeResult:
        yield Static("", id="journal-info", classes="pane-bar-line", markup=False)
        table = JournalTable(id="journal-table", cursor_type="row")
        table.add_columns(*JOURNAL_COLUMNS)
        yield table

    def reload(self, *, keep: bool = True) -> None:
        table = self.query_one("#journal-table", DataTable)
        current = self.selected() if keep else None
        self.records = self.host.store.records(limit=JOURNAL_ROWS)
        table.clear()
        for r in self.records:
            is_revert = r.kind == "revert"
            networked = r.summariser in ("ollama", "anthropic")
            # Every cell is Text: a str cell would be parsed as markup (agent names are data).
            outcome = r.outcome + (" ↺" if r.reverted_by else "")
            row = [
                Text(r.started_at[:19].replace("T", " ")),
                Text(neutralise(r.agent_id, one_line=True)[:20]),
                Text(r.kind),
                Text(outcome, style=OUTCOME_STYLE.get(r.outcome, "")),
                Text(str(len(r.restored)) if is_revert else str(len(r.consumed))),
                Text("" if is_revert else str(len(r.pruned))),
                Text(r.summariser or "—"),
                Text(f"{r.latency_ms:.0f} ms" if networked and not is_revert else ""),
                Text(r.cycle_id[-10:]),
            ]
            table.add_row(*row, key=r.cycle_id)
        if self.records:
            index = next(
                (
                    i
                    for i, r in enumerate(self.records)
                    if current and r.cycle_id == current.cycle_id
                ),
                0,
            )
            table.move_cursor(row=index)
        count = len(self.records)
        self.query_one("#journal-info", Static).update(
            f" {count} record{'s' if count != 1 else ''}, newest first · enter replays the diff"
            " · u reverts"
        )

    def selected(self) -> CycleRecord | None:
        table = self.query_one("#journal-table", DataTable)
        if not self.records or table.cursor_row < 0:
            return None
        return self.records[min(table.cursor_row, len(self.records) - 1)]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        record = self.selected()
        if record is not None:
            self.app.push_screen(CycleDiffScreen(record))

    def action_revert(self) -> None:
        record = self.selected()
        if record is None or not self.host.may_mutate():
            return
        store = self.host.store

        def done(yes: bool | None) -> None:
            if yes:
                self.host.run_write(
                    f"cycle {record.cycle_id} reverted", lambda: store.revert(record.cycle_id)
                )

        self.app.push_screen(
            ConfirmScreen(
                f"Revert cycle {record.cycle_id}?",
                f"Its {len(record.consumed)} consumed facts become live again and its summary "
                "is retired. A revert record joins the journal.",
                yes="Revert",
            ),
            done,
        )
