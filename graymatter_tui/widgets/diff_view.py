"""The proposal diff: batch facts consumed (−, red) or kept (dim), facts the coverage
guard kept with the details the summary lost, the summary (+, green), ignored ids with
their reasons, and contradictions. All stored text is shown literally."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from graymatter_tui.consolidation.diff import Diff, build_diff
from graymatter_tui.model import CycleRecord
from graymatter_tui.textsafe import neutralise

STYLES = {
    "consumed": "red",
    "kept": "dim",
    "guarded": "yellow",
    "summary": "bold green",
    "ignored": "magenta",
    "contradiction": "cyan",
}


def render_diff(diff: Diff) -> Text:
    out = Text()
    for row in diff.rows:
        style = STYLES[row.kind]
        out.append(f" {row.sign} ", style=style)
        if row.kind == "ignored":
            out.append(f"{row.id}", style=style)
            out.append(f"  ignored: {neutralise(row.note, one_line=True)}\n", style="dim")
            continue
        if row.kind == "contradiction":
            out.append("contradiction: ", style=style)
            out.append(neutralise(row.text, one_line=True) + "\n", style=style)
            continue
        out.append(neutralise(row.text, one_line=True), style=style)
        out.append("\n")
        if row.kind == "guarded":
            out.append(f"     {neutralise(row.note, one_line=True)}\n", style="yellow dim")
    out.append(f"\n {diff.counts_line}", style="bold")
    return out


class DiffView(VerticalScroll):
    DEFAULT_CSS = """
    DiffView { height: 1fr; border: round $primary 50%; padding: 0 1; }
    """

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="diff-body", markup=False)

    def show_text(self, message: str) -> None:
        self.query_one("#diff-body", Static).update(Text(neutralise(message)))

    def show_record(self, record: CycleRecord | None) -> None:
        body = self.query_one("#diff-body", Static)
        if record is None or not (record.batch_facts or record.summary_text):
            body.update(Text("No proposal yet.", style="dim"))
            return
        body.update(render_diff(build_diff(record)))
