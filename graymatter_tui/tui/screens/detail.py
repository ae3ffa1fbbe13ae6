"""The fact-detail modal: every field, the text, and the receipt chain both ways.

Selecting a related fact opens its own detail on top, so `esc` walks back the chain.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.model import Fact
from graymatter_tui.core.retirement import Retirement
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore, ShowResult
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.themed import component_styles
from graymatter_tui.tui.workers import off_thread
from graymatter_tui.views.presentation import fact_fields

# The receipt chain's two directions (app.tcss).
REPLACED_BY = "detail--replaced-by"
CONSUMED = "detail--consumed"


def _field_table(fact: Fact, retirement: Retirement | None) -> Text:
    rows = fact_fields(fact, retirement)
    out = Text()
    for key, value in rows:
        out.append(f"{key:>10}  ", style="bold")
        out.append_text(literal(value))
        out.append("\n")
    return out


class FactDetailScreen(ModalScreen[None]):
    COMPONENT_CLASSES = {REPLACED_BY, CONSUMED}
    HELP_KEYS = (Binding("enter", "", "Open the fact of the receipt chain"),)
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="detail-back"),
    ]

    def __init__(self, store: MemoryStore, fact_id: str) -> None:
        super().__init__()
        self.store = store
        self.fact_id = fact_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            yield Static("", id="detail-title", classes="dialog-title", markup=False)
            with VerticalScroll(id="detail-body"):
                yield Static("", id="detail-fields", markup=False)
                yield Static("", id="detail-text", classes="detail-text", markup=False)
            yield Static("", id="detail-chain-title", classes="dialog-subtitle", markup=False)
            yield OptionList(id="detail-chain", markup=False)
            yield Static("enter open · esc back", classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#detail-title", Static).update(literal(f"Reading {self.fact_id}…"))
        store, fact_id = self.store, self.fact_id
        off_thread(self, lambda: store.show(fact_id), self._show, self._not_shown, group="detail")

    def _not_shown(self, exc: GraymatterError) -> None:
        self.query_one("#detail-title", Static).update(
            literal(f"Cannot show {self.fact_id}: {exc}")
        )

    def _show(self, result: ShowResult) -> None:
        fact = result.fact
        summary = result.consumed or (result.retirement and result.retirement.restored)
        kind = "Summary" if summary else ("Tombstone" if fact.is_tombstone else "Fact")
        self.query_one("#detail-title", Static).update(literal(f"{kind} {fact.id}"))
        self.query_one("#detail-fields", Static).update(_field_table(fact, result.retirement))
        self.query_one("#detail-text", Static).update(literal(fact.text, one_line=False))
        chain = self.query_one("#detail-chain", OptionList)
        # The options keep the colours they are built with; a detail screen is short-lived.
        styles = component_styles(self, (REPLACED_BY, CONSUMED))
        options: list[Option] = []
        if result.replaced_by is not None:
            options.append(
                Option(
                    Text.assemble(
                        ("replaced by  ", styles[REPLACED_BY]),
                        literal(result.replaced_by.text),
                    ),
                    id=result.replaced_by.id,
                )
            )
        elif fact.is_tombstone and not fact.is_retired:
            options.append(
                Option(literal(f"replaced by {fact.superseded_by} (pruned since)"), disabled=True)
            )
        for consumed in result.consumed:
            options.append(
                Option(
                    Text.assemble(("consumed  − ", styles[CONSUMED]), literal(consumed.text)),
                    id=consumed.id,
                )
            )
        retirement = result.retirement
        restored = {f.id: f for f in result.restored}
        if retirement is not None:
            options.append(Option(literal(retirement.describe()), disabled=True))
            for fact_id in retirement.restored:
                back = restored.get(fact_id)
                options.append(
                    Option(
                        Text.assemble(
                            ("restored  ↺ ", styles[CONSUMED]),
                            literal(back.text) if back else literal(f"{fact_id} (pruned since)"),
                        ),
                        id=fact_id if back else None,
                        disabled=back is None,
                    )
                )
        title = self.query_one("#detail-chain-title", Static)
        if retirement is not None and retirement.by_revert:
            title.update(
                f"Receipt chain (retired by revert; {counted(len(retirement.restored), 'fact')} "
                "it had consumed live again)"
            )
        elif retirement is not None:
            title.update("Receipt chain (retired by an approved review)")
        elif options:
            title.update(f"Receipt chain ({len(result.consumed)} consumed)")
        else:
            title.update("No receipt chain: nothing replaced this fact and it consumed nothing.")
            chain.display = False
        if options:
            chain.add_options(options)
            chain.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.app.push_screen(FactDetailScreen(self.store, event.option.id))

    def action_close(self) -> None:
        self.dismiss(None)
