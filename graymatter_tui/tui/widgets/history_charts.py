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

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

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


# Most points a series is drawn with: about one a column (the table has every number).
# plotext's drawing grows with the points (2,000 take ~0.4 s a chart).
def _thin(pairs: list[tuple[float, float]], most: int) -> list[tuple[float, float]]:
    if len(pairs) <= most:
        return pairs
    step = (len(pairs) - 1) / (most - 1)
    return [pairs[round(i * step)] for i in range(most)]


def build_charts(points: list[HistoryPoint], width: int, rows: int, theme: str) -> list[str]:
    """The charts drawn as text (ANSI), `width` × `rows` each, in plotext theme `theme`.
    Pure and slow (plotext draws every cell): run off the UI thread."""
    xs = [_seconds(p) for p in points]
    start = xs[0] if xs else 0.0
    span = (xs[-1] - start) if xs else 0.0
    out: list[str] = []
    for index, (title, series) in enumerate(CHARTS):
        plt = Plot()
        # The legend is in the title: plotext's own would cover the newest points.
        keys = "   ".join(f"{marker} {label}" for label, marker, _value in series)
        plt.title(f"{title}: {keys}" if len(series) > 1 else title)
        values: list[float] = []
        for _label, marker, value in series:
            pairs = [
                (x - start, float(v))
                for x, p in zip(xs, points, strict=True)
                if (v := value(p)) is not None
            ]
            if pairs:
                pairs = _thin(pairs, max(width, 2))
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
        plt.plotsize(width, rows)
        plt._set_size(width, rows)  # as PlotextPlot.render does (textual-plotext issue 5)
        plt.theme(theme)
        out.append(plt.build())
    return out


class ChartPlot(PlotextPlot):
    """A chart drawn elsewhere (`build_charts`, in a worker): rendering shows that text,
    never plotext's drawing on the UI thread."""

    built: Text | None = None

    def render(self) -> RenderResult:
        return self.built if self.built is not None else Text("")


class HistoryCharts(Vertical):
    """Three charts, stacked, sharing the time axis. What to draw is measured here, on
    the UI thread (`layout`); the drawing is made off it (`build_charts`) and shown
    (`show_built`)."""

    DEFAULT_CSS = """
    HistoryCharts { height: auto; }
    HistoryCharts > ChartPlot { height: 9; }
    """
    # Each chart takes a third of the pane's height, and never fewer rows than this (at
    # 80×24 the third scrolls into view).
    MIN_ROWS = 9

    class Resized(Message):
        """The charts are now another width than they were drawn for."""

    built_width = 0

    def compose(self) -> ComposeResult:
        for index, _chart in enumerate(CHARTS):
            yield ChartPlot(id=f"history-chart-{index}")

    def on_resize(self) -> None:
        if self.built_width and self.size.width != self.built_width:
            self.built_width = 0  # asked once: the next drawing sets it again
            self.post_message(self.Resized())

    def layout_for(self, pane: Widget) -> tuple[int, int, str]:
        """(width, rows, plotext theme) of each chart now: a third of the pane's height
        (less its two head lines), at least `MIN_ROWS`, as wide as the charts are."""
        rows = max(self.MIN_ROWS, (pane.size.height - 2) // len(CHARTS))
        width = self.size.width or pane.size.width
        first = self.query_one("#history-chart-0", ChartPlot)
        first._register_theme(self.app.theme)  # the current theme's colours, registered
        return max(width, 20), rows, first._get_plotext_theme_name(self.app.theme)

    def show_built(self, texts: list[str], rows: int, width: int) -> None:
        self.built_width = width
        for index, text in enumerate(texts):
            plot = self.query_one(f"#history-chart-{index}", ChartPlot)
            plot.built = Text.from_ansi(text)
            if plot.styles.height is None or plot.styles.height.value != rows:
                plot.styles.height = rows
            plot.refresh()
