"""The help screen: every key binding of the app and of each screen, from the bindings
themselves, so it can never fall out of date."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def _key_label(keys: str) -> str:
    names = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter"}
    return " / ".join(names.get(k.strip(), k.strip()) for k in keys.split(","))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="help-close")]

    def __init__(self, sections: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            yield Static("Keys", classes="dialog-title", markup=False)
            with VerticalScroll():
                yield Static(self._table(), markup=False)
            yield Static("esc close · ctrl+p command palette", classes="dialog-hint", markup=False)

    def _table(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", justify="right")
        table.add_column()
        for title, bindings in self.sections:
            table.add_row(Text(title, style="bold underline"), "")
            for binding in bindings:
                table.add_row(_key_label(binding.key), binding.description or binding.action)
            table.add_row("", "")
        return table

    def action_close(self) -> None:
        self.dismiss(None)
