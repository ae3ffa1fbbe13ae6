"""The Health dialog (`d` on the Status tab): `doctor --health` for the current agent,
each rule with its status, what it found, its thresholds and the facts it names; `enter`
on a fact opens it as the other screens do, `esc` comes back here."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from graymatter_tui.core.errors import GraymatterError, NotFound
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.workers import off_thread
from graymatter_tui.views.health import AgentHealth, check_health

MARKS = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗"}


class HealthScreen(ModalScreen[None]):
    HELP_KEYS = (Binding("enter", "", "Open the highlighted fact"),)
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="health-back"),
        Binding("r", "reload", "Check again", id="health-reload"),
    ]

    def __init__(
        self,
        store: MemoryStore,
        agent: str,
        embed_model: str | None,
        open_fact: Callable[[str], None],
    ) -> None:
        super().__init__()
        self.store = store
        self.agent = agent
        self.embed_model = embed_model
        self.open_fact = open_fact  # the app's show_fact: as the other screens open one
        self.fact_of: dict[str, str] = {}  # option id -> fact id

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            yield Static(
                literal(f"Health of {self.agent}'s memory"), classes="dialog-title", markup=False
            )
            yield Static("Checking…", id="health-summary", markup=False)
            yield OptionList(id="health-findings", markup=False)
            yield Static(
                "enter open the fact · r check again · esc back",
                classes="dialog-hint",
                markup=False,
            )

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        store, agent, model = self.store, self.agent, self.embed_model

        def job() -> AgentHealth | None:
            try:
                return check_health(store, agent, embed_model=model).agents[0]
            except NotFound:  # an agent with nothing stored yet
                return None

        self.query_one("#health-summary", Static).update("Checking…")
        off_thread(self, job, self._draw, self._failed, group="health")

    def _failed(self, exc: GraymatterError) -> None:
        self.query_one("#health-summary", Static).update(literal(f"Cannot check: {exc}"))

    def _draw(self, health: AgentHealth | None) -> None:
        summary = self.query_one("#health-summary", Static)
        findings = self.query_one("#health-findings", OptionList)
        findings.clear_options()
        self.fact_of = {}
        if health is None:
            summary.update(literal(f"{self.agent} has no facts yet: nothing to check."))
            return
        said = [f for f in health.findings if f.status in ("warn", "fail")]
        summary.update(
            literal(
                f"{counted(health.live_facts, 'live fact')}, "
                f"{counted(health.tombstones, 'tombstone')} · verdict {health.verdict}"
                + (f": {', '.join(f.rule for f in said)}" if said else "")
            )
        )
        options: list[Option] = []
        for finding in health.findings:
            head = Text(f"{MARKS[finding.status]} {finding.rule}  ", style="bold")
            head.append_text(literal(finding.detail))
            options.append(Option(head, disabled=True))
            options.append(Option(Text(f"    [{finding.threshold}]", style="dim"), disabled=True))
            for fact in finding.facts:
                option_id = f"f{len(self.fact_of)}"
                self.fact_of[option_id] = fact.id
                options.append(Option(literal(f"    {fact.id}  {fact.text}"), id=option_id))
            if finding.more:
                options.append(Option(Text(f"    … and {finding.more} more"), disabled=True))
        findings.add_options(options)
        if self.fact_of:
            findings.highlighted = next(
                i for i, option in enumerate(options) if option.id in self.fact_of
            )
        findings.focus()

    def highlighted_fact(self) -> str | None:
        """The fact of the highlighted row, None on a rule's own rows."""
        findings = self.query_one("#health-findings", OptionList)
        if findings.highlighted is None:
            return None
        option = findings.get_option_at_index(findings.highlighted)
        return self.fact_of.get(option.id or "")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        fact_id = self.fact_of.get(event.option.id or "")
        if fact_id is not None:
            self.open_fact(fact_id)

    def action_close(self) -> None:
        self.dismiss(None)
