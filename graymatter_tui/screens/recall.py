"""Recall preview: how a query would rank the agent's live facts, without recording any
access (the same ranking `recall` uses, minus the write-back)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from graymatter_tui.errors import GraymatterError
from graymatter_tui.recall import rank
from graymatter_tui.store import Store
from graymatter_tui.widgets.literal import literal


class RecallScreen(ModalScreen[str | None]):
    """Type a query; enter ranks it; selecting a result opens its detail."""

    BINDINGS = [Binding("escape", "close", "Back", id="recall-back")]

    def __init__(self, store: Store, agent: str) -> None:
        super().__init__()
        self.store = store
        self.agent = agent

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            yield Static(
                literal(f"Recall preview for {self.agent} (access counts are not touched)"),
                classes="dialog-title",
                markup=False,
            )
            yield Input(placeholder="query, then enter", id="recall-query")
            yield Static("", id="recall-info", markup=False)
            yield OptionList(id="recall-results", markup=False)
            yield Static(
                "enter rank · ↓ results · enter open · esc back",
                classes="dialog-hint",
                markup=False,
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        results = self.query_one("#recall-results", OptionList)
        results.clear_options()
        try:
            hits = rank(self.store, self.agent, event.value, k=8)
        except GraymatterError as exc:
            self.query_one("#recall-info", Static).update(literal(exc))
            return
        self.query_one("#recall-info", Static).update(
            f"{len(hits)} results" if hits else "No live fact shares a keyword with the query."
        )
        for position, hit in enumerate(hits, start=1):
            label = Text.assemble(
                (f"{position}. {hit.score:.4f} ", "bold"),
                (f"kw #{hit.keyword_rank} · new #{hit.recency_rank}  ", "dim"),
                literal(hit.fact.text),
            )
            results.add_option(Option(label, id=hit.fact.id))
        if hits:
            results.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
