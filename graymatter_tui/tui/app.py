"""The Textual application: wiring, bindings, palette commands, workers and polling.
No business logic lives here: every change goes through a store method or the Cycle."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.console import RenderableType
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.lazy import Lazy
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from graymatter_tui.consolidation.summarisers import factory as summarisers
from graymatter_tui.core import provenance
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.words import counted
from graymatter_tui.embedding import background as embedding
from graymatter_tui.embedding import query as embedding_query
from graymatter_tui.recall.vector_signal import QueryVectors
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.messages import StoreChanged
from graymatter_tui.tui.screens.actions import (
    Action,
    described,
    help_rows,
    own_bindings,
    own_keys,
    palette_help,
    palette_title,
)
from graymatter_tui.tui.screens.activity import ActivityPane
from graymatter_tui.tui.screens.base import CHECKING, Pane, Reach
from graymatter_tui.tui.screens.consolidate import ConsolidatePane
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.screens.dialogs import (
    ChooseScreen,
    ConfirmScreen,
    LineEntryScreen,
    NoStoreScreen,
    TextEntryScreen,
)
from graymatter_tui.tui.screens.facts import FactsPane
from graymatter_tui.tui.screens.help import HelpScreen
from graymatter_tui.tui.screens.journal import CycleDiffScreen, JournalPane, JournalTable
from graymatter_tui.tui.screens.layout import NARROW_COLUMNS, SHORT_ROWS
from graymatter_tui.tui.screens.past_facts import PastFactsScreen
from graymatter_tui.tui.screens.recall import RecallScreen
from graymatter_tui.tui.screens.review import ReviewPane
from graymatter_tui.tui.screens.status import StatusPane
from graymatter_tui.tui.screens.tombstones import TombstonesPane
from graymatter_tui.tui.widgets.key_bar import KeyBar
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.top_bar import TopBar
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from graymatter_tui.tui.workers import in_daemon_thread
from graymatter_tui.views.presentation import store_badges

# Every tab: its id and its pane (the pane's TITLE labels the tab, its help section and,
# with the tab's number, the key that shows it).
PANES: tuple[tuple[str, type[Pane]], ...] = (
    ("facts", FactsPane),
    ("tombstones", TombstonesPane),
    ("consolidate", ConsolidatePane),
    ("journal", JournalPane),
    ("status", StatusPane),
    ("activity", ActivityPane),
    ("review", ReviewPane),
)
TABS = tuple(tab for tab, _pane in PANES)
# The lists' movement keys, the same in every list: one help section, no palette commands.
LISTS: tuple[type[Widget], ...] = (VirtualList, JournalTable)
# The screens a key or a pane opens over the tabs, each a help section after the panes'.
# In the palette, a screen's actions are offered while it is open.
SCREENS: tuple[tuple[str, tuple[type[Screen[Any]], ...]], ...] = (
    ("Recall preview", (RecallScreen,)),
    ("Fact detail", (FactDetailScreen,)),
    ("Cycle replay", (CycleDiffScreen,)),
    ("Facts as they stood", (PastFactsScreen,)),
    ("Dialogs", (ConfirmScreen, TextEntryScreen, LineEntryScreen, ChooseScreen)),
    ("No store yet", (NoStoreScreen,)),
    ("This help", (HelpScreen,)),
)
PALETTE_HINT = ("ctrl+p", "Command palette: agent, cycle, export, theme")
POLL_SECONDS = 0.5
CLOCK_SECONDS = 30.0  # relative ages ("5m") are redrawn this often, with no store read


class GraymatterApp(App[None]):
    CSS_PATH = Path(__file__).parent / "app.tcss"  # absolute: subclasses elsewhere find it
    TITLE = "graymatter-tui"
    # Screen classes for compact layouts (ADR 0009): `-short` below 30 rows (80×24 is
    # short), `-narrow` below 100 columns.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_ROWS, "-tall")]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_COLUMNS, "-wide")]
    PANES: ClassVar[tuple[tuple[str, type[Pane]], ...]] = PANES
    BINDINGS: ClassVar[list[BindingType]] = [
        # The tab labels already show 1-6, so the footer keeps its room for other keys.
        *(
            Action(
                str(number),
                f"tab('{tab}')",
                pane.TITLE,
                id=f"tab-{tab}",
                show=False,
                title=f"Show {pane.TITLE}",
                tooltip=f"Switch to the {pane.TITLE} tab",
            )
            for number, (tab, pane) in enumerate(PANES, 1)
        ),
        # Help first: the footer cuts from the right on narrow terminals, and the help
        # screen lists everything the footer could not show.
        Action("question_mark,f1", "help", "Help", id="help", tooltip="Every key, by pane"),
        Action(
            "A",
            "choose_agent",
            "Agent",
            id="choose-agent",
            title="Switch agent",
            tooltip="Choose the agent to show",
        ),
        Action(
            "R",
            "recall_preview",
            "Recall",
            id="recall-preview",
            title="Recall preview",
            tooltip="Rank a query without touching access counts",
        ),
        Action("ctrl+r", "reload", "Reload", id="reload", tooltip="Read the store again"),
        Action("q", "quit", "Quit", id="quit", tooltip="Leave graymatter-tui"),
        Binding("ctrl+q", "quit", "Quit", id="quit-anywhere", show=False, priority=True),
    ]
    # Actions with no key of their own: in the palette only.
    PALETTE_ONLY: ClassVar[tuple[Action, ...]] = (
        Action("", "export", "Export", tooltip="Export every fact and the journal to a jsonl file"),
    )

    # The app's state (ADR 0017). Panes watch these and re-read what they show.
    agent: var[str] = var("", init=False)
    generation: var[int] = var(-1, init=False)  # the store's; moves with every write
    settings: var[Settings] = var(Settings, init=False, always_update=True)
    reach: var[Reach] = var(CHECKING, init=False)  # the summariser's, probed here only

    def __init__(
        self,
        *,
        store: MemoryStore,
        settings: Settings,
        read_only: bool = False,
        agent: str | None = None,
        poll_seconds: float = POLL_SECONDS,
        clock_seconds: float = CLOCK_SECONDS,
        create_store: Callable[[], MemoryStore] | None = None,
    ) -> None:
        """`create_store`, given with the empty view of a place holding no store, makes
        the store there: the app asks the person first (launch.creator)."""
        super().__init__()
        self.store = store
        self.read_only = read_only
        self.create_store = create_store if store.absent else None
        provenance.name_process(provenance.TUI)  # what the store records as our writes
        # Set without watchers: nothing is mounted yet to follow them.
        self.set_reactive(GraymatterApp.settings, settings)
        self.set_reactive(GraymatterApp.agent, agent or "")
        self.poll_seconds = poll_seconds
        self.clock_seconds = clock_seconds
        self.last_error = ""
        # Embeds new facts on its own thread when GRAYMATTER_EMBED is set; it never
        # touches a widget (the poll picks its writes up like any other process's).
        self.embedder: embedding.BackgroundEmbedder | None = None
        self.query_vectors: QueryVectors | None = None  # recall preview's vector signal

    # ---- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        with TabbedContent(initial=self.PANES[0][0], id="tabs"):
            for number, (tab, pane_class) in enumerate(self.PANES, 1):
                with TabPane(f"{number} {pane_class.TITLE}", id=tab):
                    pane = pane_class(id=f"{tab}-pane")
                    # Hidden panes mount just after the first frame, so Facts paints sooner.
                    yield pane if number == 1 else Lazy(pane)
        yield Static("", id="errorbar", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        if not self.agent:
            agents = self._agents_or_none()
            # Without watchers: the first poll below reads every shown pane anyway.
            self.set_reactive(GraymatterApp.agent, agents[0] if agents else "default")
        self.query_one("#errorbar", Static).display = False
        self._probe_summariser()
        self._start_embedder()
        self._poll()
        self.set_interval(self.poll_seconds, self._poll)
        self.set_interval(self.clock_seconds, self._tick_clock)
        self._focus_tab(self._active_tab())
        if self.create_store is not None:
            self.push_screen(NoStoreScreen(self.store.location), self._answered_no_store)
        elif self.store.absent:
            self.notify(
                literal(f"No store at {self.store.location} yet; showing an empty one").plain,
                title="Nothing was created",
                markup=False,
            )

    # ---- a place with no store (launch.open_for_tui) ------------------------------------
    def _answered_no_store(self, answer: str | None) -> None:
        if answer == "quit":
            self._exit_once_mounted()
            return
        self._focus_tab(self._active_tab())  # the dialog held the focus meant for the pane
        if answer == "create":
            self._create_the_store()
        else:
            self.notify(
                literal(f"Read-only: nothing was created at {self.store.location}").plain,
                markup=False,
            )

    def _exit_once_mounted(self) -> None:
        """Quit, once the hidden panes (mounted just after the first frame) are in: an
        answer given at once would otherwise close the app under their mount."""
        if all(self._pane_or_none(tab) is not None for tab, _pane in self.PANES):
            self.exit()
        else:
            self.set_timer(0.05, self._exit_once_mounted)

    @work(thread=True, exclusive=True, group="create-store", exit_on_error=False)
    def _create_the_store(self) -> None:
        create = self.create_store
        assert create is not None
        try:
            created = create()
        except (GraymatterError, OSError) as exc:
            message = str(exc) if isinstance(exc, GraymatterError) else str(exc.strerror or exc)
            self.call_from_thread(
                self.notify,
                literal(message).plain,
                title="No store was created",
                severity="error",
                markup=False,
            )
            return
        self.call_from_thread(self._use_created_store, created)

    def _use_created_store(self, created: MemoryStore) -> None:
        """The empty view gives way to the store just created, now writable."""
        view, self.store = self.store, created
        self.create_store = None
        view.close()
        self.read_only = bool(created.read_only_reason)
        for tab, _pane in self.PANES:
            if (pane := self._pane_or_none(tab)) is not None:
                pane.stale = True
        self._start_embedder()
        self._poll()
        self._update_topbar()
        self.notify(literal(f"Created a new store at {created.location}").plain, markup=False)

    def _start_embedder(self) -> None:
        try:
            self.query_vectors = embedding_query.from_env(self.store)
        except GraymatterError as exc:  # a bad GRAYMATTER_EMBED* value
            self.show_error(str(exc))
            return
        if self.read_only:
            return
        try:
            self.embedder = embedding.from_env(self.store)
        except GraymatterError as exc:  # a bad GRAYMATTER_EMBED* value
            self.show_error(str(exc))
            return
        if self.embedder is not None:
            self.embedder.start()

    def on_unmount(self) -> None:
        if self.embedder is not None:
            self.embedder.stop()

    def _agents_or_none(self) -> list[str]:
        try:
            return [a.agent_id for a in self.store.agents()]
        except GraymatterError as exc:
            self.show_error(str(exc))
            return []

    # ---- the state panes follow --------------------------------------------------------
    def watch_agent(self) -> None:
        # The panes watch the agent themselves; the top bar names it.
        try:
            self._update_topbar()
        except GraymatterError as exc:
            self.show_error(str(exc))

    def watch_settings(self) -> None:
        self.reach = CHECKING
        self._probe_summariser()

    @work(exclusive=True, group="reach", exit_on_error=False)
    async def _probe_summariser(self) -> None:
        """The one reachability check, shared by Consolidate and Status."""
        summariser = summarisers.from_settings(self.settings)
        if summariser is None:
            self.reach = Reach("none")
            return
        reach = await summariser.check()
        self.reach = Reach("ok" if reach.ok else "failed", reach.detail)

    # ---- refreshing ------------------------------------------------------------------
    def _pane_or_none(self, tab: str) -> Pane | None:
        """Hidden panes mount just after the first frame; before that there is none."""
        try:
            pane = self.query_one(f"#{tab}-pane")
        except NoMatches:
            return None
        return pane if isinstance(pane, Pane) else None

    def _active_tab(self) -> str:
        return self.query_one(TabbedContent).active or self.PANES[0][0]

    def _catch_up(self) -> None:
        """The shown pane re-reads if it is stale (its last read failed, or it was hidden
        when the store moved); the top bar's counts follow every poll."""
        pane = self._pane_or_none(self._active_tab())
        if pane is None:
            return
        pane.catch_up()
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
            # A new generation makes the panes re-read (the shown one now, hidden ones
            # when shown); a pane whose read fails reports it and stays stale.
            self.generation = self.store.generation()
            self._catch_up()
        except GraymatterError as exc:
            self.show_error(str(exc))
            return
        if self.last_error:
            self._clear_error()

    def _tick_clock(self) -> None:
        """Relative ages go stale while a screen stays open: redraw them against now."""
        try:
            pane = self._pane_or_none(self._active_tab())
        except NoMatches:  # closing
            return
        if pane is not None:
            pane.tick_clock()

    def _update_topbar(self) -> None:
        # The badge comes first so a long path can never push it out of sight.
        badge = store_badges(self.store, self.read_only)
        live = next((a.live_facts for a in self.store.agents() if a.agent_id == self.agent), 0)
        topbar = self.query_one("#topbar", TopBar)
        topbar.show(badge, self.agent, live, self.store.location)
        topbar.set_class(self.read_only, "read-only")

    def show_error(self, message: str) -> None:
        self.last_error = message
        bar = self.query_one("#errorbar", Static)
        bar.update(literal(f" Store error: {message} — ctrl+r retries"))
        bar.display = True

    def _clear_error(self) -> None:
        self.last_error = ""
        self.query_one("#errorbar", Static).display = False

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        try:
            self._catch_up()
        except GraymatterError as exc:
            self.show_error(str(exc))
        self._tick_clock()  # a pane that was hidden for a while shows ages as of now
        self._focus_tab(self._active_tab())

    def _focus_tab(self, tab: str) -> None:
        pane = self._pane_or_none(tab)
        try:
            if pane is None:
                raise NoMatches(tab)
            target = pane.focus_target()
        except NoMatches:  # typed ahead before the pane mounted: try again after a frame
            self.call_after_refresh(self._focus_tab_later, tab)
            return
        # Now, not via `focus()`: that defers to a callback queued behind any keys typed in
        # the same burst ("3n"), which would then go to the pane being left.
        self.screen.set_focus(target)

    def _focus_tab_later(self, tab: str) -> None:
        if not self.is_running:
            return
        if self._active_tab() == tab and self._pane_or_none(tab) is not None:
            self._catch_up()
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
        if not self.closing:
            self.push_screen(FactDetailScreen(self.store, fact_id))

    def show_cycle(self, cycle_id: str) -> None:
        """The cycle's record selected in the Journal tab; one older than the Journal
        lists is replayed on its own."""
        if self.closing:
            return
        self.action_tab("journal")
        journal = self._pane_or_none("journal")
        try:
            if isinstance(journal, JournalPane) and journal.select_cycle(cycle_id):
                return
            record = self.store.find_record(cycle_id)
        except GraymatterError as exc:
            self.show_error(str(exc))
            return
        if record is None:
            self.notify(f"Cycle {cycle_id} is not in the journal.", severity="warning")
            return
        self.push_screen(CycleDiffScreen(record, self.store))

    # ---- closing -----------------------------------------------------------------------
    # Keys typed in the same burst of input as `q` are read after the app began to close;
    # a dialog opened then would mount without its children and crash the exit.
    closing = False

    def exit(
        self, result: None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        self.closing = True
        super().exit(result, return_code, message)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not self.closing

    # How long quitting waits for a pane's last write (another process may hold LMDB's
    # writer lock); past it the app exits and the record says the cycle is unfinished.
    closing_write_seconds = 5.0

    async def action_quit(self) -> None:
        """Leave, after the writes panes need to record what they began (an unfinished
        cycle's end), each in a thread so a store that waits cannot hang the exit."""
        self.closing = True
        writes = [
            write
            for tab, _pane in self.PANES
            if (pane := self._pane_or_none(tab)) is not None
            and (write := pane.write_before_closing()) is not None
        ]
        for write in writes:
            failure = await in_daemon_thread(write, self.closing_write_seconds)
            if failure:
                self.log.warning(f"not recorded before closing: {failure}")
        self.exit()

    # ---- actions ---------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab(tab)

    def action_reload(self) -> None:
        self._clear_error()
        for tab, _pane in self.PANES:
            if (pane := self._pane_or_none(tab)) is not None:
                pane.stale = True
        self._poll()
        if not self.last_error:
            self.notify("Reloaded.")

    def action_help(self) -> None:
        sections = [
            ("Everywhere", help_rows(self.BINDINGS)),
            ("Lists", help_rows(key for kind in LISTS for key in own_keys(kind))),
            *((pane.TITLE, help_rows(pane.help_keys())) for _tab, pane in self.PANES),
            *(
                (title, help_rows(key for screen in screens for key in own_keys(screen)))
                for title, screens in SCREENS
            ),
            ("Palette", [PALETTE_HINT]),
        ]
        self.push_screen(HelpScreen([(title, rows) for title, rows in sections if rows]))

    def action_choose_agent(self) -> None:
        try:
            agents = self.store.agents()
        except GraymatterError as exc:
            self.show_error(str(exc))
            return
        choices = [
            (
                a.agent_id,
                f"{a.agent_id}  ({a.live_facts} live, {counted(a.tombstones, 'tombstone')})",
            )
            for a in agents
        ]
        if not choices:
            self.notify("The store has no agents yet.")
            return

        def chosen(agent: str | None) -> None:
            if agent:
                self.agent = agent  # the panes follow (and Consolidate abandons its cycle)

        self.push_screen(ChooseScreen("Agent", choices, self.agent), chosen)

    def action_recall_preview(self) -> None:
        def chosen(fact_id: str | None) -> None:
            if fact_id:
                self.show_fact(fact_id)

        agent = self.agent

        def save_probe(query: str) -> None:
            if not self.may_mutate():
                return

            def job() -> object:
                # The preview has no k of its own: a probe already there keeps its k.
                for probe in self.store.probes(agent):
                    if probe.query == query:
                        return probe
                return self.store.save_probe(agent, query)

            self.run_write(f"probe saved for {agent}: {query}", job)

        save = None if self.read_only or self.store.read_only_reason else save_probe
        self.push_screen(RecallScreen(self.store, agent, save, self.query_vectors), chosen)

    def action_export(self) -> None:
        default = str(Path.cwd() / "graymatter-export.jsonl")

        def chosen(path: str | None) -> None:
            if not path:
                return
            from graymatter_tui.exchange import transfer as exchange

            def job() -> int:
                return exchange.export_file(self.store, Path(path).expanduser())

            self.run_write(f"exported to {path}", job)

        self.push_screen(LineEntryScreen("Export everything (jsonl) to file", default), chosen)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's own commands, the actions of the screen the palette was opened on
        (the recall preview's, a dialog's), then every described binding of the app, the
        panes and their parts (screens/actions.py): the palette has no list of its own."""
        yield from super().get_system_commands(screen)
        if screen is not self.screen_stack[0]:
            for action in described(own_bindings(type(screen))):
                yield SystemCommand(
                    palette_title(action),
                    palette_help(action),
                    partial(self.run_action, action.action, screen),
                )
        for action in described([*self.BINDINGS, *self.PALETTE_ONLY]):
            yield SystemCommand(
                palette_title(action), palette_help(action), partial(self.run_action, action.action)
            )
        for tab, pane in self.PANES:
            for action in described(pane.pane_bindings()):
                yield SystemCommand(
                    palette_title(action),
                    palette_help(action),
                    partial(self._run_pane_action, tab, action.action),
                )
            for part in pane.PARTS:
                for action in described(own_bindings(part)):
                    yield SystemCommand(
                        palette_title(action),
                        palette_help(action),
                        partial(self._run_pane_action, tab, action.action, part),
                    )

    async def _run_pane_action(
        self, tab: str, action: str, part: type[Widget] | None = None
    ) -> None:
        """A pane's action from the palette: show its tab, then act as its key would (on
        the pane, or on its part that has the key)."""
        self.action_tab(tab)
        pane = self._pane_or_none(tab)
        if pane is None:
            return
        try:
            pane.catch_up()  # the action acts on what the pane shows now
        except GraymatterError as exc:
            self.show_error(str(exc))
            return
        target: Widget = pane
        if part is not None:
            try:
                target = pane.query_one(part)
            except NoMatches:
                return
        await self.run_action(action, target)
