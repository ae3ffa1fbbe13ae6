"""Recall preview: how a query would rank the agent's live facts, without recording any
access (the same ranking `recall` uses, minus the write-back), as an explain table: what
each signal added to the fused score (vector, keyword, and the recency prior when it is
weighted), the score, weight, age and source, and below it the highlighted fact's whole
text, its signals in full (cosine, TF-IDF, ranks) and its lineage, in every line the table
leaves free. `ctrl+s` saves
the query as a probe of the agent (ADR 0039)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from graymatter_tui.core import clock
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.provenance import UNRECORDED
from graymatter_tui.core.receipts import lineage_fields, lineage_summary
from graymatter_tui.core.words import counted
from graymatter_tui.embedding.query import use_of
from graymatter_tui.recall.explain_fields import signal_fields, signal_summary
from graymatter_tui.recall.ranking import Hit, RecallWeights, lineages, rank
from graymatter_tui.recall.vector_signal import NO_VECTORS, QueryVectors
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.workers import off_thread

K = 8
CELL_PADDING = 2  # DataTable's, one cell each side of every column
FACT_CELLS = 16  # the fact's column is never narrower; on a wider dialog it takes the rest
SOURCE_CELLS = (6, 16)  # the source column's narrowest and widest ("mcp:…" names are long)


def _cell(value: str | Text) -> Text:
    """A table cell on one line, ending in "…" when its column cuts it."""
    text = Text(value) if isinstance(value, str) else value.copy()
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


class FittedText(Static):
    """Text wrapped to the widget's width and cut to its height; when lines are left out,
    the last one shown ends in "…"."""

    def render(self) -> RenderResult:
        content = self.content
        width, height = self.size
        if not isinstance(content, Text) or width <= 0 or height <= 0:
            return super().render()
        lines = content.wrap(self.app.console, width, overflow="ellipsis")
        if len(lines) <= height:
            return content
        shown = list(lines)[:height]
        last = shown[-1]
        last.rstrip()
        last.truncate(width - 1)
        last.append("…", style="dim")
        return Text("\n").join(shown)


@dataclass(frozen=True)
class Column:
    """One column of the explain table: its header and how a hit fills it. A new signal
    of recall (a vector rank) is one more entry in `COLUMNS`."""

    label: str
    cell: Callable[[int, Hit, datetime], str | Text]


def _vector(hit: Hit) -> str:
    """The vector part; "~" when the fact has no vector yet (the farthest neighbour's)."""
    return f"~{hit.vector_part:.3f}" if hit.vector_stand_in else f"{hit.vector_part:.3f}"


def _keyword(hit: Hit) -> str:
    return "–" if hit.keyword_rank is None else f"{hit.keyword_part:.3f}"  # no shared word


def _date(hit: Hit) -> str:
    return f"{hit.date_part:.3f}"


COLUMNS = [
    Column("#", lambda position, _hit, _now: str(position)),
    Column("fact", lambda _position, hit, _now: literal(hit.fact.text)),
    Column("vec", lambda _position, hit, _now: _vector(hit)),
    Column("kw", lambda _position, hit, _now: _keyword(hit)),
    Column("new", lambda _position, hit, _now: f"{hit.recency_part:.3f}"),
    Column("date", lambda _position, hit, _now: _date(hit)),
    Column("fused", lambda _position, hit, _now: f"{hit.score:.4f}"),
    Column("weight", lambda _position, hit, _now: f"{hit.fact.weight:.2f}"),
    Column("age", lambda _position, hit, now: clock.short_age(now, hit.fact.created_at)),
    Column("source", lambda _position, hit, _now: literal(hit.fact.source or UNRECORDED)),
]


class RecallScreen(ModalScreen[str | None]):
    """Type a query; enter ranks it; selecting a result opens its detail."""

    HELP_KEYS = (
        Binding("enter", "", "Rank the query (in the query line)"),
        Binding("down", "", "Move to the results"),
        Binding("enter", "", "Open the highlighted fact (in the results)"),
    )
    BINDINGS = [
        Binding("escape", "close", "Back", id="recall-back"),
        Action(
            "ctrl+s",
            "save_probe",
            "Save as probe",
            id="recall-save-probe",
            title="Save query as probe",
            tooltip="Check every consolidation cycle of the agent against this query",
        ),
    ]

    def __init__(
        self,
        store: MemoryStore,
        agent: str,
        save_probe: Callable[[str], None] | None = None,
        vectors: QueryVectors | None = None,
        weights: RecallWeights | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.agent = agent
        self.save_probe = save_probe
        self.weights = weights or RecallWeights()
        # With embeddings on, ranking asks a server for the query's vector (up to its
        # query timeout): it runs on a worker thread so the screen never freezes.
        self.vectors = vectors
        self.vector_use = use_of(vectors)
        self.hits: list[Hit] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail", id="recall-dialog"):
            yield Static(
                literal(f"Recall preview for {self.agent} (access counts are not touched)"),
                classes="dialog-title",
                markup=False,
            )
            yield Input(placeholder="query, then enter", id="recall-query")
            yield Static("", id="recall-info", markup=False)
            table: DataTable[str | Text] = DataTable(
                id="recall-table", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield FittedText("", id="recall-lineage", markup=False)
            yield Static(
                "enter rank · ↓ results · enter open · ctrl+s save as probe · esc back",
                classes="dialog-hint",
                markup=False,
            )

    def on_mount(self) -> None:
        self.query_one(DataTable).display = False

    def on_input_submitted(self, event: Input.Submitted) -> None:
        table: DataTable[str | Text] = self.query_one(DataTable)
        table.clear(columns=True)
        self.query_one("#recall-lineage", Static).update("")
        query = event.value
        # Ranking reads the store (and, with embeddings on, asks a server for the query's
        # vector): in a worker, so the screen never waits.
        asking = " (asking the embedding server)" if self.vectors is not None else ""
        self.query_one("#recall-info", Static).update(f"ranking{asking}…")
        off_thread(
            self,
            lambda: self._ranked(query),
            partial(self._show, query),
            partial(self._show, query),
            group="recall",
        )

    def _ranked(self, query: str) -> list[Hit] | GraymatterError:
        try:
            signal = self.vectors if self.vectors is not None else NO_VECTORS
            hits = rank(self.store, self.agent, query, k=K, weights=self.weights, vectors=signal)
        except GraymatterError as exc:
            return exc
        # Read in the thread that ranked: whether the vector signal took part, and why not.
        self.vector_use = use_of(self.vectors)
        return hits

    def _show(self, query: str, ranked: list[Hit] | GraymatterError) -> None:
        table: DataTable[str | Text] = self.query_one(DataTable)
        if query != self.query_one(Input).value:
            return  # the query changed while this one was ranked
        if isinstance(ranked, GraymatterError):
            self.hits = []
            table.display = False
            self.query_one("#recall-info", Static).update(literal(ranked))
            return
        self.hits = ranked
        legend = [
            *(["vec vector"] if self.vectors is not None else []),
            "kw keyword",
            *(["new recency"] if self.weights.recency > 0 else []),
        ]
        info = Text(
            f"{counted(len(self.hits), 'result')} · {' · '.join(legend)}: each one's part of "
            "the fused score"
            if self.hits
            else "No live fact matches the query."
        )
        use = self.vector_use
        if self.vectors is not None and not use.used:
            # Said whenever vectors are on but took no part: the ranking is keyword only.
            head = (
                "vectors not used (the embedder failed): " if use.failed else "vectors not used: "
            )
            info.append("\n" + head, style="bold" if use.failed else "")
            info.append_text(literal(use.reason))
        self.query_one("#recall-info", Static).update(info)
        table.display = bool(self.hits)
        self._fill_table()
        if self.hits:
            table.focus()
            self._show_lineage(self.hits[0].fact.id)

    def _fill_table(self) -> None:
        """The explain table at the dialog's width: every column as wide as its widest
        cell, the fact's text in what is left, cut text ending in "…"."""
        table: DataTable[str | Text] = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        if not self.hits:
            return
        # Without embeddings the vector column would be zeros only, without a recency
        # weight the recency column, and without a date in the query the date column:
        # they are left out.
        dated = self.weights.date > 0 and any(hit.dates_named for hit in self.hits)
        columns = [
            c
            for c in COLUMNS
            if (self.vectors is not None or c.label != "vec")
            and (self.weights.recency > 0 or c.label != "new")
            and (dated or c.label != "date")
        ]
        now = self.store.now()
        rows = [
            [_cell(c.cell(position, hit, now)) for c in columns]
            for position, hit in enumerate(self.hits, start=1)
        ]
        widths = [
            max([cell_len(column.label), *(row[i].cell_len for row in rows)])
            for i, column in enumerate(columns)
        ]
        fact = [c.label for c in columns].index("fact")
        source = [c.label for c in columns].index("source")
        widths[source] = min(widths[source], SOURCE_CELLS[1])
        room = self.query_one("#recall-dialog").size.width - CELL_PADDING * len(columns)
        others = sum(w for i, w in enumerate(widths) if i != fact)
        if room - others < FACT_CELLS:  # a narrow dialog: the source gives way first
            widths[source] = max(SOURCE_CELLS[0], widths[source] - (FACT_CELLS - room + others))
            others = sum(w for i, w in enumerate(widths) if i != fact)
        widths[fact] = max(FACT_CELLS, room - others)
        for column, width in zip(columns, widths, strict=True):
            table.add_column(column.label, key=column.label, width=width)
        for row, hit in zip(rows, self.hits, strict=True):
            table.add_row(*row, key=hit.fact.id)
        table.move_cursor(row=min(cursor, len(rows) - 1))

    def on_resize(self) -> None:
        if self.hits:  # once the dialog has its new width
            self.call_after_refresh(self._fill_table)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._show_lineage(event.row_key.value)

    def _show_lineage(self, fact_id: str) -> None:
        """The fact's whole text, then what it superseded, nearest first (a read: no access
        is recorded; in a worker, the newest highlight's read superseding older ones)."""
        store, agent = self.store, self.agent
        off_thread(
            self,
            lambda: lineage_fields(lineages(store, agent, [fact_id])[fact_id]),
            partial(self._lineage_read, fact_id),
            lambda exc: self.query_one("#recall-lineage", Static).update(literal(exc)),
            group="lineage",
        )

    def _lineage_read(self, fact_id: str, fields: dict[str, Any]) -> None:
        out = Text()
        hit = next((h for h in self.hits if h.fact.id == fact_id), None)
        if hit is not None:
            out.append_text(literal(hit.fact.text, one_line=False))
            out.append("\n")
            out.append(f"{hit.score:.4f} = ", style="bold")
            out.append(signal_summary(signal_fields(hit, self.store.now())), style="dim")
            out.append("\n")
        out.append("lineage: ", style="bold")
        out.append(lineage_summary(fields), style="dim")
        for ancestor in fields["lineage"]:
            out.append("\n" + "  " * ancestor["depth"])
            out.append(ancestor["fact_id"] + "  ", style="dim")
            if ancestor["pruned"]:
                out.append("(pruned; its copy is in the journal)", style="dim")
            else:
                out.append_text(literal(ancestor["text"]))
        self.query_one("#recall-lineage", Static).update(out)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.dismiss(event.row_key.value)

    def action_save_probe(self) -> None:
        query = self.query_one("#recall-query", Input).value
        info = self.query_one("#recall-info", Static)
        if self.save_probe is None:
            info.update("Probes cannot be saved here (the store is read-only).")
        elif not query.strip():
            info.update("Type a query first; ctrl+s saves it as a probe.")
        else:
            self.save_probe(query)

    def action_close(self) -> None:
        self.dismiss(None)
