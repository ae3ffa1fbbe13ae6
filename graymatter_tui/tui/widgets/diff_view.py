"""The proposal diff: batch facts consumed (−, the theme's error colour) or kept (dim),
facts the coverage guard kept with the details the summary lost, the summary (+, the
theme's success colour), ignored ids with their reasons, and contradictions. All stored
text is shown literally. Colours are the component classes `diff--*`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from graymatter_tui.consolidation.diff import (
    Diff,
    build_diff,
    build_proposal_diff,
    build_review_diff,
)
from graymatter_tui.consolidation.review import InvalidProposal
from graymatter_tui.core.model import CycleRecord, ReviewProposal
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.themed import component_styles, redraw_on_theme_change

# A row's kind → its component class. "kept" is dim, not a colour: it stays fixed.
COMPONENTS = {
    "consumed": "diff--consumed",
    "guarded": "diff--guarded",
    "summary": "diff--summary",
    "ignored": "diff--ignored",
    "contradiction": "diff--contradiction",
    "problem": "diff--problem",  # an answer that is no usable proposal
}
KEPT = Style(dim=True)
NOTE = Style(dim=True)
DiffStyles = Mapping[str, Style]


# " − " before every row's text; wrapped lines hang under the text, not the sign.
INDENT = 3
_WRAP_CONSOLE = Console(width=1_000, no_color=True)  # wrapping only; never prints


def _hang(text: Text, width: int | None, indent: int = INDENT) -> Text:
    """`text` wrapped to `width - indent` cells, continuation lines indented by `indent`."""
    if not width or width - indent < 10:
        return text
    lines = text.wrap(_WRAP_CONSOLE, width - indent, no_wrap=False, overflow="fold")
    return Text("\n" + " " * indent).join(lines)


def render_diff(diff: Diff, width: int | None = None, styles: DiffStyles | None = None) -> Text:
    """The diff as text: counts first, then one row per fact. With `width`, long rows wrap
    with a hanging indent so the signs stay a clean column. `styles` maps each row kind
    to its style (`DiffView` reads them from the theme); without it, no colour."""

    def style_of(kind: str) -> Style:
        return KEPT if kind == "kept" else (styles or {}).get(kind, Style.null())

    out = Text()
    out.append(" ")
    out.append_text(_hang(Text(diff.counts_line, style="bold"), width, indent=1))
    out.append("\n\n")
    for row in diff.rows:
        style = style_of(row.kind)
        out.append(f" {row.sign} ", style=style)
        if row.kind == "ignored":
            body = literal(row.id, style)
            body.append_text(literal(f"  ignored: {row.note}", NOTE))
        elif row.kind == "contradiction":
            body = Text("contradiction: ", style=style)
            body.append_text(literal(row.text, style))
        else:
            body = literal(row.text, style)
        out.append_text(_hang(body, width))
        out.append("\n")
        if row.kind == "guarded":
            note = literal(row.note, style + NOTE)
            out.append(" " * 5)
            out.append_text(_hang(note, width, indent=5))
            out.append("\n")
    return out


class DiffView(VerticalScroll):
    COMPONENT_CLASSES = set(COMPONENTS.values())
    DEFAULT_CSS = """
    DiffView { height: 1fr; border: round $primary 50%; padding: 0 1; }
    DiffView > .diff--consumed { color: $text-error; }
    DiffView > .diff--guarded { color: $text-warning; }
    DiffView > .diff--summary { color: $text-success; text-style: bold; }
    DiffView > .diff--ignored { color: $text-secondary; }
    DiffView > .diff--contradiction { color: $text-accent; }
    DiffView > .diff--problem { color: $text-warning; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # What the view shows, drawn again on a resize (wrapping) or a theme change.
        self._draw: Callable[[], Text] = lambda: Text("")

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="diff-body", markup=False)

    def on_mount(self) -> None:
        redraw_on_theme_change(self, self._redraw)

    def styles_by_kind(self) -> dict[str, Style]:
        """Each row kind's style in the current theme."""
        found = component_styles(self, COMPONENTS.values())
        return {kind: found[name] for kind, name in COMPONENTS.items()}

    def _show(self, draw: Callable[[], Text]) -> None:
        self._draw = draw
        self._redraw()

    def _redraw(self) -> None:
        self.query_one("#diff-body", Static).update(self._draw())

    def show_text(self, message: str) -> None:
        self._show(lambda: literal(message, one_line=False))

    def show_proposal(self, record: CycleRecord, raw: str, *, structured: bool) -> None:
        """The summariser's answer as it stands, before review has clamped or guarded it."""
        try:
            diff = build_proposal_diff(record, raw, structured=structured)
        except InvalidProposal as exc:
            problem = str(exc)
            self._show(lambda: self._not_a_proposal(problem, raw))
            return
        self._show_diff(diff)

    def _not_a_proposal(self, problem: str, raw: str) -> Text:
        style = self.styles_by_kind()["problem"]
        text = literal(f"The answer is not a usable proposal: {problem}.", style)
        text.append(" Review (n) will discard it. The answer begins:\n\n", style=style)
        text.append_text(literal(raw[:600], NOTE, one_line=False))
        return text

    def show_record(self, record: CycleRecord | None) -> None:
        if record is None or not (record.batch_facts or record.summary_text):
            self._show(lambda: Text("No proposal yet.", style="dim"))
            return
        self._show_diff(build_diff(record))

    def show_review(self, proposal: ReviewProposal) -> None:
        """An agent's held change: the facts it would make tombstones, the text it writes."""
        self._show_diff(build_review_diff(proposal))

    def _show_diff(self, diff: Diff) -> None:
        self._show(lambda: render_diff(diff, self._text_width(), self.styles_by_kind()))

    def on_resize(self) -> None:
        self._redraw()

    def _text_width(self) -> int | None:
        # Always leave room for the vertical scrollbar, so a long diff does not rewrap
        # (and a short one does not shift) when the scrollbar comes and goes.
        width = self.content_region.width - self.styles.scrollbar_size_vertical
        return width if width > 0 else None
