"""The Textual application: wiring, bindings, palette commands, workers and polling.
No business logic lives here: every change goes through a Store method or the Cycle."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.lazy import Lazy
from textual.screen import Screen
from textual.widgets import Static, TabbedContent, TabPane

from graymatter_tui.config import Settings
from graymatter_tui.errors import GraymatterError
from graymatter_tui.messages import StoreChanged
from graymatter_tui.presentation import store_badges
from graymatter_tui.screens.consolidate import ConsolidatePane
from graymatter_tui.screens.detail import FactDetailScreen
from graymatter_tui.screens.dialogs import ChooseScreen, LineEntryScreen
from graymatter_tui.screens.facts import FactsPane
from graymatter_tui.screens.help import HelpScreen
from graymatter_tui.screens.journal import JournalPane
from graymatter_tui.screens.layout import NARROW_COLUMNS, SHORT_ROWS
from graymatter_tui.screens.recall import RecallScreen
from graymatter_tui.screens.status import StatusPane
from graymatter_tui.screens.tombstones import TombstonesPane
from graymatter_tui.store import Store
from graymatter_tui.widgets.key_bar import KeyBar
from graymatter_tui.widgets.literal import literal

TABS = ("facts", "tombstones", "consolidate", "journal", "status")
POLL_SECONDS = 0.5
CLOCK_SECONDS = 30.0  # relative ages ("5m") are redrawn this often, with no store read


class GraymatterApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "graymatter-tui"
    # Screen classes for compact layouts (ADR 0009): `-short` below 30 rows (80×24 is
    # short), `-narrow` below 100 columns.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_ROWS, "-tall")]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_COLUMNS, "-wide")]
    BINDINGS = [
        # The tab labels already show 1-5, so the footer keeps its room for other keys.
        Binding("1", "tab('facts')", "Facts", id="tab-facts", show=False),
        Binding("2", "tab('tombstones')", "Tombstones", id="tab-tombstones", show=False),
        Binding("3", "tab('consolidate')", "Consolidate", id="tab-consolidate", show=False),
        Binding("4", "tab('journal')", "Journal", id="tab-journal", show=False),
        Binding("5", "tab('status')", "Status", id="tab-status", show=False),
        # Help first: the footer cuts from the right on narrow terminals, and the help
        # screen lists everything the footer could not show.
        Binding("question_mark,f1", "help", "Help", id="help"),
        Binding("A", "choose_agent", "Agent", id="choose-agent"),
        Binding("R", "recall_preview", "Recall", id="recall-preview"),
        Binding("ctrl+r", "reload", "Reload", id="reload"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("ctrl+q", "quit", "Quit", id="quit-anywhere", show=False, priority=True),
    ]

    def __init__(
        self,
        *,
        store: Store,
        settings: Settings,
        read_only: bool = False,
        agent: str | None = None,
        poll_seconds: float = POLL_SECONDS,
        clock_seconds: float = CLOCK_SECONDS,
    ) -> None:
        super().__init__()
        self.store = store
        self.settings = settings
        self.read_only = read_only
        self.agent = agent or ""
        self.poll_seconds = poll_seconds
        self.clock_seconds = clock_seconds
        self._generation = -1
        self._dirty: set[str] = set(TABS)
        self.last_error = ""

    # ---- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="topbar", markup=False)
        with TabbedContent(initial="facts", id="tabs"):
            with TabPane("1 Facts", id="facts"):
                yield FactsPane(id="facts-pane")
            # Hidden panes mount just after the first frame, so Facts paints sooner.
            with TabPane("2 Tombstones", id="tombstones"):
                yield Lazy(TombstonesPane(id="tombstones-pane"))
            with TabPane("3 Consolidate", id="consolidate"):
                yield Lazy(ConsolidatePane(id="consolidate-pane"))
            with TabPane("4 Journal", id="journal"):
                yield Lazy(JournalPane(id="journal-pane"))
            with TabPane("5 Status", id="status"):
                yield Lazy(StatusPane(id="status-pane"))
        yield Static("", id="errorbar", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        if not self.agent:
            agents = self._agents_or_none()
            self.agent = agents[0] if agents else "default"
        self.query_one("#errorbar", Static).display = False
        self._poll()
        self.set_interval(self.poll_seconds, self._poll)
        self.set_interval(self.clock_seconds, self._tick_clock)
        self.query_one("#fact-list").focus()

    def _agents_or_none(self) -> list[str]:
        try:
            return [a.agent_id for a in self.store.agents()]
        except GraymatterError as exc:
            self._show_error(str(exc))
            return []

    # ---- refreshing ------------------------------------------------------------------
    def _pane(self, tab: str) -> Any:
        return self.query_one(f"#{tab}-pane")

    def _pane_or_none(self, tab: str) -> Any | None:
        """Hidden panes mount just after the first frame; before that there is none."""
        try:
            return self._pane(tab)
        except NoMatches:
            return None

    def _active_tab(self) -> str:
        return self.query_one(TabbedContent).active or "facts"

    def _reload_active(self) -> None:
        tab = self._active_tab()
        if tab in self._dirty:
            pane = self._pane_or_none(tab)
            if pane is None:
                return
            if hasattr(pane, "reload"):
                pane.reload()
            self._dirty.discard(tab)
        self._update_topbar()

    def _poll(self) -> None:
        """Pick up writes from any process (the generation moves with every write)."""
        try:
            self._poll_once()
        except NoMatches:
            # A tick that lands while the app closes finds its widgets already removed;
            # there is nothing left to refresh.
            return

    def _poll_once(self) -> None:
        try:
            generation = self.store.generation()
        except GraymatterError as exc:
            self._show_error(str(exc))
            return
        if generation != self._generation:
            self._generation = generation
            self._dirty = set(TABS)
        try:
            self._reload_active()
        except GraymatterError as exc:
            self._show_error(str(exc))
            return
        if self.last_error:
            self._clear_error()

    def _tick_clock(self) -> None:
        """Relative ages go stale while a screen stays open: redraw them against now."""
        try:
            pane = self._pane_or_none(self._active_tab())
        except NoMatches:  # closing
            return
        if pane is not None and hasattr(pane, "tick_clock"):
            pane.tick_clock()

    def _update_topbar(self) -> None:
        # The badge comes first so a long path can never push it out of sight.
        badge = store_badges(self.store, self.read_only)
        live = next((a.live_facts for a in self.store.agents() if a.agent_id == self.agent), 0)
        self.query_one("#topbar", Static).update(
            literal(
                f"{badge} graymatter-tui · agent {self.agent} ({live} live) · {self.store.path}"
            )
        )
        self.query_one("#topbar", Static).set_class(self.read_only, "read-only")

    def _show_error(self, message: str) -> None:
        self.last_error = message
        bar = self.query_one("#errorbar", Static)
        bar.update(literal(f" Store error: {message} — ctrl+r retries"))
        bar.display = True

    def _clear_error(self) -> None:
        self.last_error = ""
        self.query_one("#errorbar", Static).display = False

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        try:
            self._reload_active()
        except GraymatterError as exc:
            self._show_error(str(exc))
        self._tick_clock()  # a pane that was hidden for a while shows ages as of now
        self._focus_tab(self._active_tab())

    def _focus_tab(self, tab: str) -> None:
        focus = {"facts": "#fact-list", "tombstones": "#tomb-list", "journal": "#journal-table"}
        try:
            target = self.query_one(focus[tab]) if tab in focus else self._pane(tab)
        except NoMatches:  # typed ahead before the pane mounted: try again after a frame
            self.call_after_refresh(self._focus_tab_later, tab)
            return
        target.focus()

    def _focus_tab_later(self, tab: str) -> None:
        if not self.is_running:
            return
        if self._active_tab() == tab and self._pane_or_none(tab) is not None:
            self._reload_active()
            self._focus_tab(tab)
        elif self._active_tab() == tab:
            self.set_timer(0.05, lambda: self._focus_tab_later(tab))

    def on_store_changed(self, message: StoreChanged) -> None:
        self._poll()

    # ---- services for panes ------------------------------------------------------------
    def may_mutate(self) -> bool:
        if self.read_only:
            self.notify("Read-only mode: changes are disabled.", severity="warning")
            return False
        return True

    def run_write(
        self, label: str, fn: Callable[[], Any], then: Callable[[Any], None] | None = None
    ) -> None:
        """Run one store write in a worker thread (a write may wait for another process's
        writer lock, which must never block the UI), then refresh."""

        def job() -> None:
            try:
                result = fn()
            except (GraymatterError, OSError) as exc:
                message = (
                    str(exc)
                    if isinstance(exc, GraymatterError)
                    else (f"{exc.strerror or exc}: {exc.filename or ''}")
                )
                self.call_from_thread(
                    self.notify,
                    literal(message).plain,
                    title="Not done",
                    severity="error",
                    markup=False,
                )
                return
            self.call_from_thread(self._after_write, label, result, then)

        self.run_worker(job, thread=True, group="writes", exit_on_error=False, description=label)

    def _after_write(self, label: str, result: Any, then: Callable[[Any], None] | None) -> None:
        self.notify(literal(label).plain, markup=False)
        if then is not None:
            then(result)
        self._poll()

    def show_fact(self, fact_id: str) -> None:
        self.push_screen(FactDetailScreen(self.store, fact_id))

    # ---- actions ---------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab(tab)

    def action_reload(self) -> None:
        self._clear_error()
        self._dirty = set(TABS)
        self._poll()
        if not self.last_error:
            self.notify("Reloaded.")

    def action_help(self) -> None:
        sections: list[tuple[str, list[Binding]]] = [
            ("Everywhere", [b for b in self.BINDINGS if isinstance(b, Binding)]),
            ("Lists", _list_bindings()),
            ("Facts", list(FactsPane.BINDINGS)),  # type: ignore[arg-type]
            ("Tombstones", [Binding("enter", "", "Open the summary that replaced it")]),
            ("Consolidate", list(ConsolidatePane.BINDINGS)),  # type: ignore[arg-type]
            ("Journal", [Binding("enter", "", "Replay the cycle's diff"), *JournalPane.BINDINGS]),  # type: ignore[list-item]
            ("Palette", [Binding("ctrl+p", "", "Command palette: agent, cycle, export, theme")]),
        ]
        self.push_screen(HelpScreen(sections))

    def summariser_changed(self) -> None:
        """The summariser was switched: Status shows it and its reachability anew."""
        status = self._pane_or_none("status")
        if status is not None:
            status.check_summariser()
        self._dirty.add("status")

    def action_choose_agent(self) -> None:
        try:
            agents = self.store.agents()
        except GraymatterError as exc:
            self._show_error(str(exc))
            return
        choices = [
            (a.agent_id, f"{a.agent_id}  ({a.live_facts} live, {a.tombstones} tombstones)")
            for a in agents
        ]
        if not choices:
            self.notify("The store has no agents yet.")
            return

        def chosen(agent: str | None) -> None:
            if agent and agent != self.agent:
                self.agent = agent
                self._dirty = set(TABS)
                consolidate = self._pane_or_none("consolidate")
                if consolidate is not None:
                    consolidate.agent_changed()
                self._reload_active()

        self.push_screen(ChooseScreen("Agent", choices, self.agent), chosen)

    def action_recall_preview(self) -> None:
        def chosen(fact_id: str | None) -> None:
            if fact_id:
                self.show_fact(fact_id)

        self.push_screen(RecallScreen(self.store, self.agent), chosen)

    def action_export(self) -> None:
        default = str(Path.cwd() / "graymatter-export.jsonl")

        def chosen(path: str | None) -> None:
            if not path:
                return
            from graymatter_tui import exchange

            def job() -> int:
                return exchange.export_file(self.store, Path(path).expanduser())

            self.run_write(f"exported to {path}", job)

        self.push_screen(LineEntryScreen("Export everything (jsonl) to file", default), chosen)

    def _pane_action(self, tab: str, action: str) -> Callable[[], None]:
        def run() -> None:
            self.action_tab(tab)
            pane = self._pane_or_none(tab)
            if pane is not None:
                getattr(pane, f"action_{action}")()

        return run

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Switch agent", "Choose the agent to show", self.action_choose_agent)
        yield SystemCommand(
            "Recall preview",
            "Rank a query without touching access counts",
            self.action_recall_preview,
        )
        yield SystemCommand(
            "New cycle",
            "Start a new consolidation cycle",
            self._pane_action("consolidate", "new_cycle"),
        )
        yield SystemCommand(
            "Step cycle",
            "Run the next stage of the cycle",
            self._pane_action("consolidate", "next_stage"),
        )
        yield SystemCommand(
            "Run cycle to the end",
            "Run every remaining stage",
            self._pane_action("consolidate", "run_to_end"),
        )
        yield SystemCommand(
            "Apply proposal",
            "Apply the reviewed proposal",
            self._pane_action("consolidate", "apply"),
        )
        yield SystemCommand(
            "Reject proposal",
            "Discard the reviewed proposal",
            self._pane_action("consolidate", "reject"),
        )
        yield SystemCommand(
            "Choose summariser",
            "ollama, anthropic, local or none",
            self._pane_action("consolidate", "choose_summariser"),
        )
        yield SystemCommand(
            "Revert cycle",
            "Revert the cycle selected in the journal",
            self._pane_action("journal", "revert"),
        )
        yield SystemCommand(
            "Pin or unpin fact",
            "Toggle the pin of the selected fact",
            self._pane_action("facts", "pin"),
        )
        yield SystemCommand(
            "Export", "Export every fact and the journal to a jsonl file", self.action_export
        )
        yield SystemCommand("Reload", "Read the store again", self.action_reload)


def _list_bindings() -> list[Binding]:
    """The movement keys every list shares (the help screen's "Lists" section)."""
    from graymatter_tui.widgets.virtual_list import VirtualList

    return [b for b in VirtualList.BINDINGS if isinstance(b, Binding)]
