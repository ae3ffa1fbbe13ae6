"""Status: counters, totals per agent, a weight histogram, store size, summariser."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from graymatter_tui.overview import status_payload, weight_histogram
from graymatter_tui.screens.base import Pane, Reach
from graymatter_tui.textsafe import neutralise

BLOCKS = "▁▂▃▄▅▆▇█"


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
    DEPENDS_ON = ("reach",)  # the summariser line

    def compose(self) -> ComposeResult:
        yield Static("", id="status-body", markup=False)

    def reload(self, *, keep: bool = True) -> None:
        store = self.host.store
        p = status_payload(store)
        out = Table.grid(padding=(0, 2))
        out.add_column(style="bold", justify="right")
        out.add_column()
        out.add_row("store", neutralise(p["data_dir"], one_line=True))
        out.add_row(
            "facts", f"{p['live_facts']} live · {p['tombstones']} tombstones · {p['pinned']} pinned"
        )
        out.add_row(
            "cycles",
            f"{p['cycles']} run · {p['consolidations']} applied "
            f"({p['facts_consumed']} facts consumed) · {p['reverts']} reverted",
        )
        used = p["map_used"] / max(p["map_size"], 1)
        out.add_row(
            "size",
            f"{p['file_bytes'] / 1e6:.1f} MB on disk · map {p['map_used'] / 1e6:.1f} of "
            f"{p['map_size'] / 1e6:.0f} MB used ({used:.0%}; grows automatically)",
        )
        out.add_row(
            "schema", f"{p['schema_version']} · {p['engine']} · generation {p['generation']}"
        )
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
                Text(neutralise(a["agent_id"], one_line=True)),
                str(a["live_facts"]),
                str(a["tombstones"]),
                str(a["pinned"]),
                f"{a['avg_weight']:.3f}",
            )
        weights = list(store.weights(self.host.agent, "live").values())
        counts = weight_histogram(weights)
        histogram = Text(
            f"\nWeights of {neutralise(self.host.agent, one_line=True)}'s live facts\n",
            style="bold",
        )
        peak = max(counts) or 1
        for index, count in enumerate(counts):
            low = index / len(counts)
            bar = "█" * round(30 * count / peak)
            histogram.append(f"  {low:.1f}–{low + 0.1:.1f} ")
            histogram.append(f"{bar:<30}", style="green" if low >= 0.1 else "red")
            histogram.append(f" {count}\n", style="dim")
        from rich.console import Group

        self.query_one("#status-body", Static).update(Group(out, Text(""), agents, histogram))
