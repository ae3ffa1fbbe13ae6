"""The agent's probes under the Consolidate diff (ADR 0039): each with what the cycle under
review would do to its top k, and the highlighted probe's results before and after apply,
side by side. Shown only while the agent has probes."""

from __future__ import annotations

from collections.abc import Mapping

from rich.cells import cell_len
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from graymatter_tui.core.model import SUMMARY_MARK, Probe, ProbeResult
from graymatter_tui.core.words import counted
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.widgets.literal import literal

NOT_CHECKED = "not checked"
COLUMN_GAP = "  "  # between the columns of a probe's line


class ProbePanel(Vertical):
    # On the panel, not the pane: the Consolidate footer is full at 80 columns, and this
    # key means something only while a probe is highlighted here (tab reaches the list).
    # The pane lists it among its parts, so it is in the help and the palette.
    HELP_KEYS = (Binding("tab", "", "Move between the diff and the probe list"),)
    BINDINGS = [
        Action(
            "d",
            "remove_probe",
            "Remove probe",
            id="probe-remove",
            title="Remove probe",
            tooltip="Remove the probe highlighted under the Consolidate diff",
        )
    ]

    class Remove(Message):
        """The person asked to remove this probe (the pane writes it)."""

        def __init__(self, probe: Probe) -> None:
            super().__init__()
            self.probe = probe

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.probes: list[Probe] = []
        self.results: dict[str, ProbeResult] = {}
        self.texts: dict[str, str] = {}  # fact id -> text, for the before/after lists

    def compose(self) -> ComposeResult:
        yield Static("", id="probe-title", markup=False)
        yield OptionList(id="probe-list", markup=False)
        yield Static("", id="probe-detail", markup=False)

    @property
    def highlighted(self) -> Probe | None:
        index = self.query_one(OptionList).highlighted
        if index is None or not 0 <= index < len(self.probes):
            return None
        return self.probes[index]

    def show(
        self,
        probes: list[Probe],
        results: list[ProbeResult],
        texts: Mapping[str, str],
        styles: Mapping[str, Style],
    ) -> None:
        """Draw `probes`, each with its result when the cycle has one; `texts` names the
        facts of the results (the summary's text under `SUMMARY_MARK`)."""
        self.display = bool(probes)
        kept = self.highlighted
        self.probes = probes
        self.results = {r.probe_id: r for r in results}
        self.texts = dict(texts)
        lost = sum(len(r.lost) for r in results)
        title = Text(" Probes", style="bold")
        if results:
            title.append(" · checked against the store as this apply would leave it", style="dim")
            if lost:
                title.append(f" · would lose {counted(lost, 'fact')}", style=styles["lost"])
        title.append("   tab, then d removes a probe", style="dim")
        self.query_one("#probe-title", Static).update(title)
        options = self.query_one(OptionList)
        options.clear_options()
        widths = (
            max((cell_len(self._verdict(p)) for p in probes), default=0),
            max((cell_len(f"top {p.k}") for p in probes), default=0),
        )
        for probe in probes:
            options.add_option(Option(self._line(probe, styles, widths), id=probe.id))
        if probes:
            ids = [p.id for p in probes]
            options.highlighted = ids.index(kept.id) if kept and kept.id in ids else 0
        self._detail()

    def _verdict(self, probe: Probe) -> str:
        result = self.results.get(probe.id)
        return NOT_CHECKED if result is None else result.verdict

    def _line(self, probe: Probe, styles: Mapping[str, Style], widths: tuple[int, int]) -> Text:
        """` verdict  top k  query`: the verdict and `top k` columns as wide as their
        widest cell among the shown probes, and a gap after each, so they never run into
        each other or into the query."""
        result = self.results.get(probe.id)
        if result is None:
            style = Style(dim=True)
        else:
            style = (
                styles["lost"]
                if result.lost
                else styles["changed"]
                if result.changed
                else Style(dim=True)
            )
        verdict_cells, top_cells = widths
        line = Text(" ", no_wrap=True, overflow="ellipsis")
        line.append(self._verdict(probe).ljust(verdict_cells), style=style)
        line.append(COLUMN_GAP)
        line.append(f"top {probe.k}".ljust(top_cells), style="dim")
        line.append(COLUMN_GAP)
        line.append_text(literal(probe.query))
        return line

    def action_remove_probe(self) -> None:
        probe = self.highlighted
        if probe is None:
            self.app.notify("No probe to remove: this agent has none.", severity="warning")
            return
        self.post_message(self.Remove(probe))

    def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self._detail()

    def _detail(self) -> None:
        detail = self.query_one("#probe-detail", Static)
        probe = self.highlighted
        result = self.results.get(probe.id) if probe else None
        if result is None:
            detail.update("")
            detail.display = False
            return
        detail.display = True
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(width=3, justify="right")
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_row("", Text("before", style="bold"), Text("after apply", style="bold"))
        lost = set(result.lost)
        for rank in range(max(len(result.before), len(result.after))):
            before = result.before[rank] if rank < len(result.before) else ""
            after = result.after[rank] if rank < len(result.after) else ""
            grid.add_row(
                f"{rank + 1}.",
                self._fact(before, "strike" if before in lost else ""),
                self._fact(after, "bold" if after == SUMMARY_MARK else ""),
            )
        if not result.before and not result.after:
            grid.add_row("", Text("no results either way", style="dim"), "")
        detail.update(grid)

    def _fact(self, fact_id: str, style: str) -> Text:
        if not fact_id:
            return Text("")
        prefix = "+ " if fact_id == SUMMARY_MARK else ""
        return Text(prefix, style=style) + literal(self.texts.get(fact_id, fact_id), style)
