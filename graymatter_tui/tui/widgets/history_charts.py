"""The Status tab's history charts (plotext, through textual-plotext): the probes' hit
rate, the agent's facts, and its running totals, over time.

Every series has a marker of its own (a letter or a sign) and a legend, so the charts
read without colour (`NO_COLOR=1`); the numbers themselves are the pane's table (`t`).
Times are along the x axis at their real spacing (a run every 6 hours, three cycles in
a minute), labelled at up to four places in UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual_plotext import PlotextPlot

from graymatter_tui.core import clock
from graymatter_tui.views.history import HistoryPoint

# (title, [(label, marker, value of a point; None where the point has none)]).
Series = tuple[str, str, Callable[[HistoryPoint], float | int | None]]


def _rate(p: HistoryPoint) -> float | None:
    rate = p["probe_hit_rate"]
    return None if rate is None else round(rate * 100, 1)


CHARTS: tuple[tuple[str, tuple[Series, ...]], ...] = (
    ("probe hit rate %", (("hit rate", "•", _rate),)),
    (
        "facts",
        (
            ("live", "•", lambda p: p["live_facts"]),
            ("tombstones", "x", lambda p: p["tombstones"]),
        ),
    ),
    (
        "running totals",
        (
            ("applied", "a", lambda p: p["consolidations"]),
            ("consumed", "c", lambda p: p["facts_consumed"]),
            ("reverts", "r", lambda p: p["reverts"]),
            ("reviews", "v", lambda p: p["review_decisions"]),
        ),
    ),
)
TICKS = 4


def _seconds(p: HistoryPoint) -> float:
    return clock.parse_time(p["at"]).timestamp()


def _tick_label(moment: float, span: float) -> str:
    at = datetime.fromtimestamp(moment, UTC)
    return at.strftime("%m-%d %H:%M" if span >= 3600 else "%H:%M:%S")


class HistoryCharts(Vertical):
    """Three charts, stacked, sharing the time axis."""

    DEFAULT_CSS = """
    HistoryCharts { height: auto; }
    HistoryCharts > PlotextPlot { height: 9; }
    """
    # Each chart takes a third of the pane's height, and never fewer rows than this (at
    # 80×24 the third scrolls into view).
    MIN_ROWS = 9

    def compose(self) -> ComposeResult:
        for index, _chart in enumerate(CHARTS):
            yield PlotextPlot(id=f"history-chart-{index}")

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """A third of the visible height each (less the pane's two head lines), at least
        `MIN_ROWS`."""
        parent = self.parent.parent if self.parent is not None else None
        visible = parent.size.height if isinstance(parent, Widget) else self.app.size.height
        rows = max(self.MIN_ROWS, (visible - 2) // len(CHARTS))
        for plot in self.query(PlotextPlot):
            if plot.styles.height is None or plot.styles.height.value != rows:
                plot.styles.height = rows

    def show(self, points: list[HistoryPoint]) -> None:
        self.fit()
        xs = [_seconds(p) for p in points]
        start = xs[0] if xs else 0.0
        span = (xs[-1] - start) if xs else 0.0
        for index, (title, series) in enumerate(CHARTS):
            widget = self.query_one(f"#history-chart-{index}", PlotextPlot)
            plt = widget.plt
            plt.clear_figure()
            # The legend is in the title: plotext's own would cover the newest points.
            keys = "   ".join(f"{marker} {label}" for label, marker, _value in series)
            plt.title(f"{title}: {keys}" if len(series) > 1 else title)
            values: list[float] = []
            for _label, marker, value in series:
                pairs = [
                    (x - start, v)
                    for x, p in zip(xs, points, strict=True)
                    if (v := value(p)) is not None
                ]
                if pairs:
                    plt.plot([x for x, _v in pairs], [v for _x, v in pairs], marker=marker)
                    values += [v for _x, v in pairs]
            if not values:
                plt.title(f"{title} · nothing counted yet")
            if index == 0:
                plt.ylim(0, 100)
                plt.yticks([0, 50, 100])
            elif values:
                low, high = int(min(values)), int(max(values))
                top = max(high, low + 1)
                plt.ylim(low, top)
                plt.yticks(sorted({low, (low + top) // 2, top}))
            if span > 0:
                ticks = [span * i / (TICKS - 1) for i in range(TICKS)]
                plt.xticks(ticks, [_tick_label(start + t, span) for t in ticks])
                plt.xlim(0, span)
            elif xs:
                plt.xticks([0.0], [_tick_label(start, 3600)])
                plt.xlim(-1, 1)
            widget.refresh()
