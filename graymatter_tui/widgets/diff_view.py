"""The proposal diff: batch facts consumed (−, red) or kept (dim), facts the coverage
guard kept with the details the summary lost, the summary (+, green), ignored ids with
their reasons, and contradictions. All stored text is shown literally."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from graymatter_tui.consolidation.diff import Diff, build_diff, build_proposal_diff
from graymatter_tui.consolidation.review import InvalidProposal
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


# " − " before every row's text; wrapped lines hang under the text, not the sign.
INDENT = 3
_WRAP_CONSOLE = Console(width=1_000, no_color=True)  # wrapping only; never prints


def _hang(text: Text, width: int | None, indent: int = INDENT) -> Text:
    """`text` wrapped to `width - indent` cells, continuation lines indented by `indent`."""
    if not width or width - indent < 10:
        return text
    lines = text.wrap(_WRAP_CONSOLE, width - indent, no_wrap=False, overflow="fold")
    return Text("\n" + " " * indent).join(lines)


def render_diff(diff: Diff, width: int | None = None) -> Text:
    """The diff as text: counts first, then one row per fact. With `width`, long rows wrap
    with a hanging indent so the signs stay a clean column."""
    out = Text()
    out.append(" ")
    out.append_text(_hang(Text(diff.counts_line, style="bold"), width, indent=1))
    out.append("\n\n")
    for row in diff.rows:
        style = STYLES[row.kind]
        out.append(f" {row.sign} ", style=style)
        if row.kind == "ignored":
            body = Text(row.id, style=style)
            body.append(f"  ignored: {neutralise(row.note, one_line=True)}", style="dim")
        elif row.kind == "contradiction":
            body = Text("contradiction: ", style=style)
            body.append(neutralise(row.text, one_line=True), style=style)
        else:
            body = Text(neutralise(row.text, one_line=True), style=style)
        out.append_text(_hang(body, width))
        out.append("\n")
        if row.kind == "guarded":
            note = Text(neutralise(row.note, one_line=True), style="yellow dim")
            out.append(" " * 5)
            out.append_text(_hang(note, width, indent=5))
            out.append("\n")
    return out


class DiffView(VerticalScroll):
    DEFAULT_CSS = """
    DiffView { height: 1fr; border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._diff: Diff | None = None

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="diff-body", markup=False)

    def show_text(self, message: str) -> None:
        self._diff = None
        self.query_one("#diff-body", Static).update(Text(neutralise(message)))

    def show_proposal(self, record: CycleRecord, raw: str, *, structured: bool) -> None:
        """The summariser's answer as it stands, before review has clamped or guarded it."""
        try:
            diff = build_proposal_diff(record, raw, structured=structured)
        except InvalidProposal as exc:
            self._diff = None
            text = Text(f"The answer is not a usable proposal: {exc}.", style="yellow")
            text.append(" Review (n) will discard it. The answer begins:\n\n", style="yellow")
            text.append(neutralise(raw[:600]), style="dim")
            self.query_one("#diff-body", Static).update(text)
            return
        self._diff = diff
        self.query_one("#diff-body", Static).update(render_diff(diff, self._text_width()))

    def show_record(self, record: CycleRecord | None) -> None:
        body = self.query_one("#diff-body", Static)
        if record is None or not (record.batch_facts or record.summary_text):
            self._diff = None
            body.update(Text("No proposal yet.", style="dim"))
            return
        self._diff = build_diff(record)
        body.update(render_diff(self._diff, self._text_width()))

    def on_resize(self) -> None:
        if self._diff is not None:
            self.query_one("#diff-body", Static).update(render_diff(self._diff, self._text_width()))

    def _text_width(self) -> int | None:
        # Always leave room for the vertical scrollbar, so a long diff does not rewrap
        # (and a short one does not shift) when the scrollbar comes and goes.
        width = self.content_region.width - self.styles.scrollbar_size_vertical
        return width if width > 0 else None
