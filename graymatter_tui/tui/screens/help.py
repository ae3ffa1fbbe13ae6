"""The help screen: the keys of the app, the lists and each pane, from their bindings
(screens/actions.py), so it cannot fall out of date."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from graymatter_tui.tui.widgets.themed import component_styles

# (section title, (keys, description) rows)
HelpSection = tuple[str, list[tuple[str, str]]]


KEY = "help--key"  # the key column's colour (app.tcss)


class HelpScreen(ModalScreen[None]):
    COMPONENT_CLASSES = {KEY}
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="help-close")]

    def __init__(self, sections: list[HelpSection]) -> None:
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
        table.add_column(style=component_styles(self, (KEY,))[KEY], justify="right")
        table.add_column()
        for title, rows in self.sections:
            table.add_row(Text(title, style="bold underline"), "")
            for keys, description in rows:
                table.add_row(keys, description)
            table.add_row("", "")
        return table

    def action_close(self) -> None:
        self.dismiss(None)
