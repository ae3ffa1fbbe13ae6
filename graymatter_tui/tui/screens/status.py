"""Status: counters, totals per agent, a weight histogram, store size, summariser; and,
one key away (`h`), the agent's history as charts, or (`t`) as a table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.words import counted
from graymatter_tui.recall.probes import run_probes
from graymatter_tui.storage import ProbeSchedule, interval_text
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Reach, Read
from graymatter_tui.tui.screens.health import HealthScreen
from graymatter_tui.tui.widgets.drawn_lines import DrawnLines, DrawnStatic, draw_lines
from graymatter_tui.tui.widgets.history_charts import HistoryCharts, build_charts
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.themed import component_styles, redraw_on_theme_change
from graymatter_tui.tui.workers import off_thread
from graymatter_tui.views.history import COLUMNS, LEGEND, HistoryPoint, cells, history
from graymatter_tui.views.overview import (
    StatusPayload,
    size_text,
    status_and_weights,
    weight_histogram,
)

BLOCKS = "▁▂▃▄▅▆▇█"
# The histogram's bars: healthy weights, and those below 0.1 (near pruning). app.tcss.
WEIGHT = "status--weight"
WEIGHT_LOW = "status--weight-low"


REACH_TEXT = {
    "checking": "checking…",
    "none": "decay and prune only",
    "ok": "reachable: ",
    "failed": "NOT reachable: ",
}


def reach_text(reach: Reach) -> str:
    return REACH_TEXT[reach.state] + reach.detail


# What the overview reads from the store: its counters, and the agent's live weights.
Found = tuple[StatusPayload, list[float]]


@dataclass(frozen=True)
class Look:
    """What the overview shows besides what it read (the app's state, the theme's
    colours), taken on the UI thread for a drawing made in a worker."""

    agent: str
    embedding: tuple[str, str]  # (this process's embedder, recall's last vector use)
    settings: Settings
    reach: Reach
    bars: dict[str, Style]  # WEIGHT and WEIGHT_LOW


class StatusPane(VerticalScroll, Pane):
    TITLE = "Status"
    # the backlog the embedder's writes move
    DEPENDS_ON = ("vectors_generation", "review_generation")
    # The summariser's and the embedder's lines come from the app's memory, not the store:
    # a change draws again what was last read. (A re-read each time superseded the read in
    # flight, and while the model embeds they change faster than 100k facts are read.)
    REDRAWN_ON = ("reach", "embedding")
    _last_read: Found | None = None
    COMPONENT_CLASSES = {WEIGHT, WEIGHT_LOW}
    BINDINGS = [
        Action(
            "h",
            "history",
            "History",
            id="status-history",
            title="Status history",
            tooltip="The agent's probe hit rate, facts and totals over time (again: back)",
        ),
        Action(
            "p",
            "score_probes",
            "Score probes",
            id="status-score-probes",
            title="Score the agent's probes now",
            tooltip="Rank every probe of the agent now and keep the result in the journal",
        ),
        Action(
            "t",
            "table",
            "Charts/table",
            id="status-table",
            title="History as a table",
            tooltip="Show the history's numbers as a table, or as charts again",
        ),
        Action(
            "d",
            "health",
            "Health",
            id="status-health",
            title="Memory health",
            tooltip="The health rules of the agent's memory (as doctor --health)",
        ),
    ]

    # What the pane shows: the overview, or the agent's history as charts or a table.
    showing_history = False
    history_as_table = False

    def compose(self) -> ComposeResult:
        yield DrawnStatic(id="status-body")
        with Vertical(id="status-history"):
            yield Static("", id="history-head", markup=False)
            yield HistoryCharts(id="history-charts")
            yield Static("", id="history-table", markup=False)

    def on_resize(self) -> None:
        if self.showing_history and not self.history_as_table:
            self.invalidate()  # the charts are drawn for a size

    def on_history_charts_resized(self, message: HistoryCharts.Resized) -> None:
        if self.showing_history and not self.history_as_table:
            self.invalidate()

    def action_history(self) -> None:
        self.showing_history = not self.showing_history
        self._show_view()
        self.invalidate()

    def action_table(self) -> None:
        if not self.showing_history:
            self.showing_history = True
        else:
            self.history_as_table = not self.history_as_table
        self._show_view()
        self.invalidate()

    def action_score_probes(self) -> None:
        if not self.host.may_mutate():
            return
        store, agent = self.host.store, self.host.agent
        self.host.run_write(
            f"Probes of {agent} scored (Status › h shows the history)",
            lambda: run_probes(store, agent, "tui"),
        )

    def _show_view(self) -> None:
        self.query_one("#status-body").display = not self.showing_history
        self.query_one("#status-history").display = self.showing_history
        self.query_one("#history-charts").display = not self.history_as_table
        self.query_one("#history-table").display = self.history_as_table
        self.set_class(self.history_as_table, "-history-table")
        self.set_class(not self.showing_history, "-overview")
        self.scroll_home(animate=False)

    def on_mount(self) -> None:
        for name in self.REDRAWN_ON:
            self.watch(self.app, name, self._redraw, init=False)
        # The histogram carries the old theme's colours: draw it again (when shown).
        redraw_on_theme_change(self, self.invalidate)
        self._show_view()

    def action_health(self) -> None:
        """The health rules of the current agent's memory, in a dialog (`doctor --health`)."""
        host = self.host
        screen = HealthScreen(host.store, host.agent, host.embed_model(), host.show_fact)
        self.app.push_screen(screen)

    def read(self, *, keep: bool = True) -> Read:
        store, agent = self.host.store, self.host.agent
        if self.showing_history:
            charts = self.query_one("#history-charts", HistoryCharts)
            width, rows, theme = charts.layout_for(self)
            drawing = not self.history_as_table

            def history_job() -> Draw:
                # The agent's journal records only: no scan of the facts. The charts are
                # drawn here too: plotext's drawing takes long enough to stall the UI.
                points = history(store, agent) if agent else []
                texts = build_charts(points, width, rows, theme) if drawing else []
                schedule = store.probe_schedule()
                return partial(self._draw_history, agent, points, schedule, (texts, rows, width))

            return history_job

        look, draw = self._drawer()

        def job() -> Draw:
            # Drawn here too: Rich measures the tables twice per layout on the UI thread.
            found = status_and_weights(store, agent)
            return partial(self._show, found, look, draw(found))

        return job

    def _draw_history(
        self,
        agent: str,
        points: list[HistoryPoint],
        schedule: ProbeSchedule,
        drawn: tuple[list[str], int, int],
    ) -> None:
        head = Text()
        head.append("History of ", style="bold")
        head.append_text(literal(agent or "no agent"))
        if not points:
            head.append(
                " · nothing yet: it grows with each cycle and probe run "
                "(graymatter-tui probe run, or probe schedule --every 6h)"
            )
        else:
            runs = sum(1 for p in points if p["event"] == "probe_run")
            head.append(f" · {counted(len(points), 'point')}, {counted(runs, 'probe run')}")
            head.append(" · t " + ("charts" if self.history_as_table else "table"), style="dim")
            head.append(" · h back", style="dim")
        if schedule.every is None:
            head.append("\nno probe schedule: p scores the probes now", style="dim")
        else:
            due = schedule.next_due_at[5:16].replace("T", " ")
            head.append(
                f"\nprobes scored every {interval_text(schedule.every)}, next due {due} UTC"
                " · p scores them now",
                style="dim",
            )
        self.query_one("#history-head", Static).update(head)
        texts, rows, width = drawn
        charts = self.query_one("#history-charts", HistoryCharts)
        if texts:
            charts.show_built(texts, rows, width)
        self.query_one("#history-table", Static).update(history_table(points))
        if texts and charts.size.width and charts.size.width != width:
            self.invalidate()  # drawn before the charts' width was known: once more

    def on_drawn_static_resized(self, message: DrawnStatic.Resized) -> None:
        self._redraw()  # at the width the overview now has

    # One redraw at a time: changes that come while it is drawn make one more after it
    # (a redraw superseded by each change would never be shown while they keep coming).
    _redrawing = False
    _redraw_again = False

    def _redraw(self) -> None:
        """The overview drawn again from what was last read (in a worker, as a read's)."""
        if self._last_read is None or self.showing_history:
            return
        if not self.showing:
            self.stale = True  # drawn from a fresh read when shown
            return
        if self._redrawing:
            self._redraw_again = True
            return
        self._redrawing = True
        found, (look, draw) = self._last_read, self._drawer()
        off_thread(
            self,
            lambda: draw(found),
            partial(self._redrawn, found, look),
            self._not_redrawn,
            group="status-redraw",
            exclusive=False,
        )

    def _redrawn(self, found: Found, look: Look, lines: DrawnLines) -> None:
        self._redrawing = False
        again, self._redraw_again = self._redraw_again, False
        if found is self._last_read:  # else a newer read was shown meanwhile
            self._show(found, look, lines)
        if again:
            self._redraw()

    def _not_redrawn(self, _error: GraymatterError) -> None:
        # Drawing reads nothing, so no store error comes here: off_thread asks for it.
        self._redrawing = False

    def _drawer(self) -> tuple[Look, Callable[[Found], DrawnLines]]:
        """On the UI thread: what the overview shows besides the read, and a function that
        draws it at the body's width, for a worker."""
        look = self._look()
        console, options = self.app.console, self.app.console_options
        body = self.query_one("#status-body", DrawnStatic)
        width = body.content_size.width or self._width_before_layout()

        def draw(found: Found) -> DrawnLines:
            return draw_lines(overview(*found, look), console, options, width)

        return look, draw

    def _width_before_layout(self) -> int:
        """The body's width while the pane was never laid out (its tab not yet shown):
        the nearest laid-out ancestor's, less the pane's padding and its scroll bar. The
        overview's gutter is stable (app.tcss), so the body keeps this width when the bar
        comes: drawn at the width it will have, not drawn again just after (which moved
        the end of what `End` had scrolled to)."""
        for node in self.ancestors:
            if isinstance(node, Widget) and node.content_size.width:
                gutter = self.styles.gutter.width + self.styles.scrollbar_size_vertical
                return max(node.content_size.width - gutter, 1)
        return self.app.size.width

    def _look(self) -> Look:
        host = self.host
        bars = component_styles(self, (WEIGHT, WEIGHT_LOW))
        return Look(host.agent, host.embedding, host.settings, host.reach, bars)

    def _show(self, found: Found, look: Look, lines: DrawnLines) -> None:
        """A read's overview, drawn in its worker."""
        self._last_read = found
        self.query_one("#status-body", DrawnStatic).show(lines)
        if look != self._look():
            self._redraw()  # the app's state moved while it was drawn


def overview(p: StatusPayload, weights: list[float], look: Look) -> RenderableType:
    """The Status tab's overview: the store's counters, a table of agents and the weights
    of the agent's live facts as a histogram. Pure: drawn in a worker."""
    out = Table.grid(padding=(0, 2))
    out.add_column(style="bold", justify="right")
    out.add_column()
    out.add_row("store", literal(p["data_dir"]))
    out.add_row(
        "facts",
        f"{p['live_facts']} live · {counted(p['tombstones'], 'tombstone')} · {p['pinned']} pinned",
    )
    out.add_row(
        "cycles",
        f"{p['cycles']} run · {p['consolidations']} applied "
        f"({counted(p['facts_consumed'], 'fact')} consumed) · {p['reverts']} reverted",
    )
    out.add_row("size", size_text(p, grows_note=True))
    # No store yet: no schema, engine or generation of its own to show.
    schema = (
        f"{p['schema_version']} · {p['engine']} · generation {p['generation']} · "
        if p["store_exists"]
        else "none yet · "
    )
    out.add_row("schema", f"{schema}stemming {p['stem_language']}")
    embedding = embedding_text(p["embed_model"], p["embed_dim"], p["embed_backlog"])
    out.add_row("embedding", embedding)
    doing, recall_said = look.embedding
    if doing:
        out.add_row("embedder", literal(doing))
    if recall_said:
        out.add_row("vectors", literal(recall_said))
    s = look.settings
    out.add_row("summariser", f"{s.summariser} — {reach_text(look.reach)}")
    out.add_row(
        "policy",
        f"half-life {s.half_life_hours:.0f} h · threshold {s.threshold} · max batch "
        f"{s.max_batch} · guard {s.guard}",
    )
    out.add_row("health", literal(f"h: the health rules of {look.agent}'s memory"))
    agents = Table(title="Agents", title_justify="left", expand=False)
    for column in ("agent", "live", "tombstones", "pinned", "avg weight"):
        agents.add_column(column, justify="left" if column == "agent" else "right")
    for a in p["agents"]:
        agents.add_row(
            literal(a["agent_id"]),
            str(a["live_facts"]),
            str(a["tombstones"]),
            str(a["pinned"]),
            f"{a['avg_weight']:.3f}",
        )
    counts = weight_histogram(weights)
    # Bold is the base style: the bars and counts below are bold too.
    histogram = Text("\n", style="bold")
    histogram.append_text(literal(f"Weights of {look.agent}'s live facts"))
    histogram.append("\n")
    peak = max(counts) or 1
    for index, count in enumerate(counts):
        low = index / len(counts)
        bar = "█" * round(30 * count / peak)
        histogram.append(f"  {low:.1f}–{low + 0.1:.1f} ")
        histogram.append(f"{bar:<30}", style=look.bars[WEIGHT if low >= 0.1 else WEIGHT_LOW])
        histogram.append(f" {count}\n", style="dim")
    return Group(out, Text(""), agents, histogram)


def history_table(points: list[HistoryPoint]) -> RenderableType:
    """The history's numbers, a row a point, oldest first (the CLI's columns)."""
    table = Table(expand=False, box=None, padding=(0, 1, 0, 0), header_style="bold")
    for index, (title, _width) in enumerate(COLUMNS):
        table.add_column(title, justify="left" if index < 2 else "right", no_wrap=True)
    for p in points:
        row = cells(p)
        row[0] = row[0][5:]  # month, day and time: the pane is narrower than the CLI's 80
        table.add_row(*row)
    legend = Text("\n" + LEGEND, style="dim")
    return Group(table, legend)


def embedding_text(model: str | None, dimension: int | None, backlog: int) -> Text:
    """The store's embedding model and its backlog; facts waiting still rank on keyword
    and recency, so a backlog is shown plainly, never as an alarm."""
    if model is None:
        return Text("none recorded")
    dims = counted(dimension, "dim") if dimension else "dimension not known yet"
    return literal(model) + Text(f" · {dims} · {counted(backlog, 'fact')} waiting")
