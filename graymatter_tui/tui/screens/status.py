"""Status: counters, totals per agent, a weight histogram, store size, summariser."""

from __future__ import annotations

from functools import partial

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from graymatter_tui.core.words import counted
from graymatter_tui.tui.screens.base import Draw, Pane, Reach, Read
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.themed import component_styles, redraw_on_theme_change
from graymatter_tui.views.overview import (
    StatusPayload,
    size_text,
    status_payload,
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


class StatusPane(VerticalScroll, Pane):
    TITLE = "Status"
    DEPENDS_ON = ("reach", "embedding")  # the summariser and embedder lines
    COMPONENT_CLASSES = {WEIGHT, WEIGHT_LOW}

    def compose(self) -> ComposeResult:
        yield Static("", id="status-body", markup=False)

    def on_mount(self) -> None:
        # The histogram carries the old theme's colours: draw it again (when shown).
        redraw_on_theme_change(self, self.invalidate)

    def read(self, *, keep: bool = True) -> Read:
        store, agent = self.host.store, self.host.agent

        def job() -> Draw:
            weights = list(store.weights(agent, "live").values())
            return partial(self._draw, status_payload(store), weights)

        return job

    def _draw(self, p: StatusPayload, weights: list[float]) -> None:
        out = Table.grid(padding=(0, 2))
        out.add_column(style="bold", justify="right")
        out.add_column()
        out.add_row("store", literal(p["data_dir"]))
        out.add_row(
            "facts",
            f"{p['live_facts']} live · {counted(p['tombstones'], 'tombstone')} · "
            f"{p['pinned']} pinned",
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
        doing, recall_said = self.host.embedding
        if doing:
            out.add_row("embedder", literal(doing))
        if recall_said:
            out.add_row("vectors", literal(recall_said))
        s = self.host.settings
        out.add_row(
            "summariser",
            f"{s.summariser} — {reach_text(self.host.reach)}",
        )
        out.add_row(
            "policy",
            f"half-life {s.half_life_hours:.0f} h · threshold {s.threshold} · max batch "
            f"{s.max_batch} · guard {s.guard}",
        )
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
        histogram.append_text(literal(f"Weights of {self.host.agent}'s live facts"))
        histogram.append("\n")
        bars = component_styles(self, (WEIGHT, WEIGHT_LOW))
        peak = max(counts) or 1
        for index, count in enumerate(counts):
            low = index / len(counts)
            bar = "█" * round(30 * count / peak)
            histogram.append(f"  {low:.1f}–{low + 0.1:.1f} ")
            histogram.append(f"{bar:<30}", style=bars[WEIGHT if low >= 0.1 else WEIGHT_LOW])
            histogram.append(f" {count}\n", style="dim")
        from rich.console import Group

        self.query_one("#status-body", Static).update(Group(out, Text(""), agents, histogram))


def embedding_text(model: str | None, dimension: int | None, backlog: int) -> Text:
    """The store's embedding model and its backlog; facts waiting still rank on keyword
    and recency, so a backlog is shown plainly, never as an alarm."""
    if model is None:
        return Text("none recorded")
    dims = counted(dimension, "dim") if dimension else "dimension not known yet"
    return literal(model) + Text(f" · {dims} · {counted(backlog, 'fact')} waiting")
