"""The Textual application: wiring, bindings, palette commands, workers and the store's
watch. No business logic lives here: every change goes through a store method or the Cycle.

The UI thread never waits on the store. The store's watch (`MemoryStore.watch`, a thread of
the storage side) posts `StoreMoved` when another process wrote; this process's writes post
it too, from the worker that wrote. Panes then read in thread workers and draw what they
found on the UI thread (screens/base.py). A read or write that fails goes to one place,
the error bar (`show_error`), and the next successful read clears it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from rich.console import RenderableType
from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from graymatter_tui.consolidation.summarisers import factory as summarisers
from graymatter_tui.core import provenance
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import GraymatterError, StoreError
from graymatter_tui.core.model import AgentSummary, CycleRecord
from graymatter_tui.core.words import counted
from graymatter_tui.embedding import background as embedding
from graymatter_tui.embedding import model_process
from graymatter_tui.embedding import query as embedding_query
from graymatter_tui.recall.probe_schedule import CHECK_SECONDS, DueProbeRuns
from graymatter_tui.storage import MemoryStore, StoreWatch
from graymatter_tui.tui.heap import QuietCollector, StartupHeap
from graymatter_tui.tui.messages import StoreMoved, StoreUnreadable
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
from graymatter_tui.tui.screens.graph import GraphPane
from graymatter_tui.tui.screens.health import HealthScreen
from graymatter_tui.tui.screens.help import HelpScreen
from graymatter_tui.tui.screens.journal import CycleDiffScreen, JournalPane, JournalTable
from graymatter_tui.tui.screens.layout import NARROW_COLUMNS, SHORT_ROWS
from graymatter_tui.tui.screens.main_screen import MainScreen
from graymatter_tui.tui.screens.past_facts import PastFactsScreen
from graymatter_tui.tui.screens.recall import RecallScreen
from graymatter_tui.tui.screens.review import ReviewPane
from graymatter_tui.tui.screens.status import StatusPane
from graymatter_tui.tui.screens.tombstones import TombstonesPane
from graymatter_tui.tui.strip_cycles import mend_strip_divide
from graymatter_tui.tui.widgets.key_bar import KeyBar
from graymatter_tui.tui.widgets.lazy_pane import LazyPane
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.top_bar import TopBar
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from graymatter_tui.tui.workers import in_daemon_thread, off_thread
from graymatter_tui.views.presentation import store_badges

EMBED_START_SECONDS = 2.0  # the background embedder's first batch, after the first paint
QUIET_INPUT_SECONDS = 0.3  # ... and after a pause in the keys of this long
EMBED_FINISH_SECONDS = embedding.STOP_SECONDS  # a quit's wait for its write and pair check

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
    ("graph", GraphPane),
)
TABS = tuple(tab for tab, _pane in PANES)
# The lists' movement keys, the same in every list: one help section, no palette commands.
LISTS: tuple[type[Widget], ...] = (VirtualList, JournalTable)
# The screens a key or a pane opens over the tabs, each a help section after the panes'.
# In the palette, a screen's actions are offered while it is open.
SCREENS: tuple[tuple[str, tuple[type[Screen[Any]], ...]], ...] = (
    ("Recall preview", (RecallScreen,)),
    ("Fact detail", (FactDetailScreen,)),
    ("Health", (HealthScreen,)),
    ("Cycle replay", (CycleDiffScreen,)),
    ("Facts as they stood", (PastFactsScreen,)),
    ("Dialogs", (ConfirmScreen, TextEntryScreen, LineEntryScreen, ChooseScreen)),
    ("No store yet", (NoStoreScreen,)),
    ("This help", (HelpScreen,)),
)
PALETTE_HINT = ("ctrl+p", "Command palette: agent, cycle, export, theme")
POLL_SECONDS = 0.5  # how often the store's watch reads the generation where it polls
CLOCK_SECONDS = 30.0  # relative ages ("5m") are redrawn this often, with no store read
READING_MARK_SECONDS = 0.25  # a read of the shown pane that takes longer is marked
T = TypeVar("T")
W = TypeVar("W", bound=Widget)


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
    # ... but this process's background embedder's writes, which move these instead: only
    # the panes that show what they change read again, not every fact. A batch of vectors
    # moves the backlog (Status); pairs held by meaning move the review queue and the feed.
    vectors_generation: var[int] = var(-1, init=False)
    review_generation: var[int] = var(-1, init=False)
    settings: var[Settings] = var(Settings, init=False, always_update=True)
    reach: var[Reach] = var(CHECKING, init=False)  # the summariser's, probed here only
    # What the embedder of this process is doing, and the recall preview's last vector
    # use, as the Status tab says them (set by the poll).
    embedding: var[tuple[str, str]] = var(("", ""), init=False)

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
        probe_check_seconds: float = CHECK_SECONDS,
    ) -> None:
        """`create_store`, given with the empty view of a place holding no store, makes
        the store there: the app asks the person first (launch.creator)."""
        super().__init__()
        self._store = store
        self.read_only = read_only
        self.create_store = create_store if store.absent else None
        provenance.name_process(provenance.TUI)  # what the store records as our writes
        # Set without watchers: nothing is mounted yet to follow them.
        self.set_reactive(GraymatterApp.settings, settings)
        self.set_reactive(GraymatterApp.agent, agent or "")
        self.poll_seconds = poll_seconds
        self.clock_seconds = clock_seconds
        self.last_error = ""
        self.errors_shown = 0  # times the error bar was given a new message (tests count)
        self.agents_seen: list[AgentSummary] | None = None  # as the top bar last read them
        self._watch: StoreWatch | None = None
        self._watch_failing = False  # the watch cannot read the store: reads cannot clear
        self._pending_generation: int | None = None  # heard before the agent was known
        self._reading: dict[str, float] = {}  # pane id -> when its read in flight began
        # Embeds new facts on its own thread when GRAYMATTER_EMBED is set; it never
        # touches a widget (the store's watch hears its writes like any other process's).
        self.embedder: embedding.BackgroundEmbedder | None = None
        # The recall preview's vector signal.
        self.query_vectors: embedding_query.StoreQueryVectors | None = None
        # Makes the scheduled probe runs that fall due while the app is open (a writable
        # store only), on a thread of its own; the watch hears its writes.
        self.probe_check_seconds = probe_check_seconds
        self.due_probe_runs: DueProbeRuns | None = None
        self.startup_heap = StartupHeap()
        self.last_input_at = 0.0  # time.monotonic() of the last key or click
        self.quiet_collector = QuietCollector()
        mend_strip_divide()  # rendered lines freed without a full pass (tui/strip_cycles.py)

    @property
    def store(self) -> MemoryStore:
        return self._store

    @store.setter
    def store(self, store: MemoryStore) -> None:
        """Another store (one just created, one opened again): watched from now on."""
        self._store = store
        if self._watch is not None:
            self._watch_store()

    # ---- layout ----------------------------------------------------------------------
    def get_default_screen(self) -> Screen[None]:
        return MainScreen(id="_default")  # Textual's own id for the default screen

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        with TabbedContent(initial=self.PANES[0][0], id="tabs"):
            for number, (tab, pane_class) in enumerate(self.PANES, 1):
                with TabPane(self._tab_label(number, pane_class), id=tab):
                    pane = pane_class(id=f"{tab}-pane")
                    # Hidden panes mount just after the first frame, so Facts paints sooner.
                    yield pane if number == 1 else LazyPane(pane)
        yield Static("", id="errorbar", markup=False)
        yield KeyBar()

    def _tab_label(self, number: int, pane_class: type[Pane], width: int | None = None) -> str:
        columns = self.size.width if width is None else width
        narrow = columns < NARROW_COLUMNS and pane_class.NARROW_TITLE
        return f"{number} {pane_class.NARROW_TITLE if narrow else pane_class.TITLE}"

    def on_resize(self, event: events.Resize) -> None:
        # Eight tabs fit in 80 columns only with the short labels (and the narrow padding).
        tabs = self.query_one("#tabs", TabbedContent)
        for number, (tab, pane_class) in enumerate(self.PANES, 1):
            if pane_class.NARROW_TITLE:
                tabs.get_tab(tab).label = self._tab_label(number, pane_class, event.size.width)

    def on_load(self) -> None:
        self.quiet_collector.hold()

    def on_mount(self) -> None:
        self.query_one("#errorbar", Static).display = False
        self._show_counts()
        self._probe_summariser()
        self._start_embedder()
        self._start_due_probe_runs()
        # Nothing reads until the watch has heard the store's generation (at once).
        self._watch_store()
        # No store read: the shown pane reads if it is stale (shown since the store moved,
        # or its last read failed: it tries again).
        self.set_interval(self.poll_seconds, self._catch_up)
        self.set_interval(self.clock_seconds, self._tick_clock)
        self._focus_tab(self._active_tab())
        self.call_after_refresh(self._freeze_startup_heap)
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
        view = self.store
        self.create_store = None
        self.read_only = bool(created.read_only_reason)
        # Another store: its generation is heard afresh, and every pane reads it.
        self.set_reactive(GraymatterApp.generation, -1)
        self.set_reactive(GraymatterApp.vectors_generation, -1)
        self.set_reactive(GraymatterApp.review_generation, -1)
        for tab, _pane in self.PANES:
            if (pane := self._pane_or_none(tab)) is not None:
                pane.stale = True
        self.store = created
        view.close()
        self._start_embedder()
        self._start_due_probe_runs()
        self.notify(literal(f"Created a new store at {created.location}").plain, markup=False)

    def _start_embedder(self) -> None:
        try:
            # The local model runs in a process of its own: neither its memory nor its
            # interpreter-lock holds are the UI's (ADR 0083).
            self.query_vectors = embedding_query.from_env(self.store, model_process=True)
            embedder = (
                None if self.read_only else embedding.from_env(self.store, model_process=True)
            )
        except GraymatterError as exc:  # a bad GRAYMATTER_EMBED* value
            self.show_error(str(exc))
            return
        self.embedder = embedder
        if embedder is not None:
            # After the first paint (loading the local model takes a second of CPU), and
            # at a pause in the keys.
            embedder.start_later(EMBED_START_SECONDS, quiet=self._no_recent_input)

    def _no_recent_input(self) -> bool:
        """No key or click for a moment (read from the embedder's thread)."""
        return time.monotonic() - self.last_input_at >= QUIET_INPUT_SECONDS

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown):
            self.last_input_at = time.monotonic()
        await super().on_event(event)

    def _embedding_now(self) -> tuple[str, str]:
        """(this process's embedder, the recall preview's last vector use) in words."""
        if self.query_vectors is None:
            return ("", "")  # embeddings off: the embedding line says what the store holds
        doing = self.embedder.describe() if self.embedder is not None else "not embedding here"
        if self.embedder is None and self.read_only:
            doing = "not embedding here (read-only)"
        if note := model_process.resident_note():
            doing = f"{doing} · {note}"
        use = self.query_vectors.latest
        said = "" if use.used or use is embedding_query.NOT_ASKED else use.reason
        if said and use.failed:
            said = f"the last recall preview ranked without vectors: {said}"
        return (doing, said)

    def _start_due_probe_runs(self) -> None:
        """A store that fails here fails the panes' reads and the watch too, which say so
        on the error bar: a failed scheduled run adds nothing of its own (the next check
        tries again)."""
        if self.read_only or self.store.absent or self.due_probe_runs is not None:
            return
        self.due_probe_runs = DueProbeRuns(self.store, check_every=self.probe_check_seconds)

    def _freeze_startup_heap(self) -> None:
        """Once every pane has mounted (just after the first frame): tui/heap.py. Not once
        the app is closing: its unmount, which undoes both, may already have run."""
        if not self.is_running:
            return
        if all(self._pane_or_none(tab) is not None for tab, _pane in self.PANES):
            self.startup_heap.freeze()
            self.quiet_collector.start()
        else:
            self.set_timer(0.05, self._freeze_startup_heap)

    def on_unmount(self) -> None:
        self.quiet_collector.stop()
        self.startup_heap.thaw()
        if self.due_probe_runs is not None:
            self.due_probe_runs.close()
        if self._watch is not None:
            self._watch.stop()
        if self.embedder is not None:
            # Not waited for here: the screen would hang on a slow store while it finishes.
            self.embedder.request_stop()

    def finish_background(
        self,
        timeout: float = EMBED_FINISH_SECONDS,
        *,
        notice: Callable[[str], None] | None = None,
        notice_after: float = 0.5,
    ) -> bool:
        """Once the app has ended (the terminal is the shell's again): wait up to
        `timeout` s until the embedder owes the store nothing, that is the vectors it is
        storing and the pair check of the facts it gave vectors (an answer the model has
        not given yet is dropped: its batch stays queued). After `notice_after` s,
        `notice` is told why the process has not ended yet. Whether it settled; the
        store may be closed once it has."""
        embedder = self.embedder
        if embedder is None:
            return True
        embedder.request_stop()  # an app that never mounted never asked
        if embedder.settle(min(notice_after, timeout)):
            return True
        if notice is not None:
            notice(
                "graymatter-tui: waiting for the embedder to store its vectors and check the "
                f"new facts for contradictions (at most {timeout:g} s; ctrl-c skips it)"
            )
        return embedder.settle(max(0.0, timeout - notice_after))

    # ---- the store's watch: the one way the app learns the store moved -----------------------
    def _watch_store(self) -> None:
        """Watch the store (again): the watch says the generation at once, then each
        time another process (or this one) writes; and when it cannot read the store."""
        if self._watch is not None:
            self._watch.stop()
        self._watch_failing = False
        # Its messages name it by this (it may speak before `watch` has returned).
        token = self._watch_token = object()

        def moved(generation: int) -> None:  # on the watch's thread
            self.post_message(StoreMoved(generation, token))

        def failed(error: GraymatterError) -> None:  # on the watch's thread
            self.post_message(StoreUnreadable(str(error), token))

        self._watch = self.store.watch(moved, failed, since=-1, interval=self.poll_seconds)

    _watch_token: object | None = None

    def on_store_moved(self, message: StoreMoved) -> None:
        if message.watch is not None:
            if message.watch is not self._watch_token:
                return  # a watch of a store no longer shown
            self._watch_failing = False
        self._store_moved(message.generation)

    def on_store_unreadable(self, message: StoreUnreadable) -> None:
        if message.watch is self._watch_token:
            self._watch_failing = True
            self.show_error(message.message)

    def _store_moved(self, generation: int) -> None:
        """Every pane that shows the store reads it again (the shown one now, hidden ones
        when shown), as does the top bar; a generation already known changes nothing but
        lets a pane whose read failed try again. The store was read: the error bar goes."""
        self._clear_error()
        if self.closing:
            return
        self.embedding = self._embedding_now()
        heard = max(self.generation, self.vectors_generation, self.review_generation)
        own = (
            self.embedder.own_writes(heard, generation)
            if self.agent and self.generation >= 0 and self.embedder is not None
            else None
        )
        if own is not None:
            # Only this process's embedder wrote since: at 100k facts every pane reading
            # again for each batch of vectors held the keys back for 0.7-3 s
            # (benchmarks/graph_bench.py --embed), and at 1M the Facts tab read its
            # million ids again for each pair the meaning pass held (ADR 0073).
            self.vectors_generation = generation
            if "review" in own:
                self.review_generation = generation
                self._read_counts()  # the top bar's count of items to review
            return
        if generation > self.generation:
            if not self.agent:
                # The first agent is chosen from the counts read next; then panes read.
                self._pending_generation = generation
            else:
                self.generation = generation  # the panes follow (base.Pane.store_moved)
        self._catch_up()
        self._read_counts()

    # ---- the state panes follow --------------------------------------------------------
    def watch_agent(self) -> None:
        # The panes watch the agent themselves; the top bar names it.
        self._show_counts()
        self._read_counts()

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

    # ---- reading, and the one error path -------------------------------------------------
    def read_in_thread(
        self,
        node: Widget | App[None],
        job: Callable[[], T],
        then: Callable[[T], None],
        *,
        group: str,
        exclusive: bool = True,
        failed: Callable[[GraymatterError], None] | None = None,
    ) -> None:
        """Run the store read `job` in a thread worker of `node` and `then(result)` back
        on the UI thread, a newer read of the group superseding it; a failure goes to
        `failed` first, then to the error bar, and a successful read clears the bar."""

        def done(result: T) -> None:
            self._clear_error()
            then(result)

        def lost(error: GraymatterError) -> None:
            if failed is not None:
                failed(error)
            self.show_error(str(error))

        off_thread(node, job, done, lost, group=group, exclusive=exclusive)

    def show_error(self, message: str) -> None:
        """The one place a failed read or write is said: the error bar, until the next
        successful read (the same failure again changes nothing on screen)."""
        bar = self._widget_or_none("#errorbar", Static)
        if bar is None:
            return
        if message == self.last_error and bar.display:
            return
        self.last_error = message
        self.errors_shown += 1
        bar.update(literal(f" Store error: {message} — ctrl+r retries"))
        bar.display = True

    def _clear_error(self) -> None:
        """A read succeeded: the error bar goes, unless the watch still cannot read."""
        if not self.last_error or self._watch_failing:
            return
        self.last_error = ""
        bar = self._widget_or_none("#errorbar", Static)
        if bar is not None:
            bar.display = False

    def reading(self, pane: Pane, busy: bool) -> None:
        """A pane's read began or ended; the shown pane's, if slow, is marked."""
        key = pane.id or ""
        if busy:
            self._reading[key] = time.monotonic()
            self.set_timer(READING_MARK_SECONDS, self._mark_reading)
        else:
            self._reading.pop(key, None)
            self._mark_reading()

    def _mark_reading(self) -> None:
        tab, topbar = self._active_tab_or_none(), self._widget_or_none("#topbar", TopBar)
        if tab is None or topbar is None:
            return
        started = self._reading.get(f"{tab}-pane")
        slow = started is not None and time.monotonic() - started >= READING_MARK_SECONDS * 0.9
        topbar.show_reading(slow)

    def _read_counts(self) -> None:
        """The top bar's counts and badges, read in one snapshot off the UI thread."""
        store, read_only = self.store, self.read_only

        def job() -> tuple[list[AgentSummary], str]:
            return store.in_one_snapshot(
                lambda view: (view.agents(), store_badges(view, read_only))
            )

        self.read_in_thread(self, job, self._counts_read, group="counts")

    def _counts_read(self, found: tuple[list[AgentSummary], str]) -> None:
        self.agents_seen, self._badges = found
        if not self.agent:
            agents = self.agents_seen
            # Without watchers: the panes read once the generation is set just below.
            self.set_reactive(GraymatterApp.agent, agents[0].agent_id if agents else "default")
        if self._pending_generation is not None:
            generation, self._pending_generation = self._pending_generation, None
            if generation > self.generation:
                self.generation = generation
        self._show_counts()

    _badges = ""

    def _show_counts(self) -> None:
        """The top bar from the counts last read (the badge first, so that a long path can
        never push it out of sight)."""
        topbar = self._widget_or_none("#topbar", TopBar)
        if topbar is None:
            return
        badges = self._badges
        if self.read_only and "[READ-ONLY]" not in badges:
            badges = " [READ-ONLY]" + badges  # before the first read, too
        if self.store.lockless and "[NO LOCK]" not in badges:
            badges += " [NO LOCK]"
        agents = self.agents_seen or []
        live = next((a.live_facts for a in agents if a.agent_id == self.agent), 0)
        topbar.show(badges, self.agent, live, self.store.location)
        topbar.set_class(self.read_only, "read-only")

    # ---- refreshing ------------------------------------------------------------------
    def _widget_or_none(self, selector: str, kind: type[W]) -> W | None:
        """The one widget `selector` names, or None: the app is closing and its widgets
        are gone, or a hidden pane has not mounted yet (just after the first frame)."""
        try:
            return self.query_one(selector, kind)
        except NoMatches:
            return None

    def _pane_or_none(self, tab: str) -> Pane | None:
        return self._widget_or_none(f"#{tab}-pane", Pane)

    def _shown_pane(self) -> Pane | None:
        tab = self._active_tab_or_none()
        return None if tab is None else self._pane_or_none(tab)

    def _active_tab_or_none(self) -> str | None:
        tabs = self._widget_or_none("TabbedContent", TabbedContent)
        return None if tabs is None else tabs.active or self.PANES[0][0]

    def _active_tab(self) -> str:
        return self.query_one(TabbedContent).active or self.PANES[0][0]

    def _catch_up(self) -> None:
        """The shown pane reads if it is stale (its last read failed, or it was hidden
        when the store moved). The embedder's state is in memory: it follows each tick,
        since a failing embedder writes nothing the watch could hear."""
        self.embedding = self._embedding_now()
        pane = self._shown_pane()
        if pane is not None:
            pane.catch_up()

    def _tick_clock(self) -> None:
        """Relative ages go stale while a screen stays open: redraw them against now."""
        pane = self._shown_pane()
        if pane is not None:
            pane.tick_clock()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._catch_up()
        self._mark_reading()
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
        writer lock, which must never block the UI), then tell the app the store moved,
        with the generation read in the same thread."""
        store = self.store

        def job() -> None:
            try:
                result = fn()
                generation = store.generation()
            except (GraymatterError, OSError) as exc:
                self.call_from_thread(self._write_failed, exc)
                return
            self.call_from_thread(self._after_write, label, result, then, generation)

        self.run_worker(job, thread=True, group="writes", exit_on_error=False, description=label)

    def _write_failed(self, exc: GraymatterError | OSError) -> None:
        """A write that was not done: said where the person looks (a toast), and, when
        the store itself failed, on the error bar like every failed read."""
        self.notify(literal(_said(exc)).plain, title="Not done", severity="error", markup=False)
        if isinstance(exc, StoreError):
            self.show_error(str(exc))

    def _after_write(
        self, label: str, result: Any, then: Callable[[Any], None] | None, generation: int
    ) -> None:
        self.notify(literal(label).plain, markup=False)
        if then is not None:
            then(result)
        self._store_moved(generation)

    def embed_model(self) -> str | None:
        vectors = self.query_vectors
        return None if vectors is None else vectors.embedder.model

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
        if journal is None:  # typed before the hidden panes mounted
            self._replay(cycle_id)
            return
        journal.invalidate()  # the cycle may be newer than what the Journal shows

        def read() -> None:
            if not journal.select(cycle_id):
                self._replay(cycle_id)

        journal.when_read(read)

    def _replay(self, cycle_id: str) -> None:
        """A cycle the Journal does not list, replayed on its own."""
        store = self.store

        def found(record: CycleRecord | None) -> None:
            if record is None:
                self.notify(f"Cycle {cycle_id} is not in the journal.", severity="warning")
            else:
                self.push_screen(CycleDiffScreen(record, store))

        self.read_in_thread(self, lambda: store.find_record(cycle_id), found, group="replay")

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
        """Read everything again: the store is watched afresh (a watch that lost the store
        tries now) and every pane reads when shown; "Reloaded." once the shown one has."""
        for tab, _pane in self.PANES:
            if (pane := self._pane_or_none(tab)) is not None:
                pane.stale = True
        self._watch_store()
        self._read_counts()
        shown = self._pane_or_none(self._active_tab())
        if shown is None or self.generation < 0:
            return
        shown.catch_up()
        shown.when_read(lambda: self.notify("Reloaded."))

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
        """Choose among the agents as the top bar last read them (read again with every
        write the store's watch hears of)."""
        if self.agents_seen is None:
            self.notify("Still reading the store's agents…")
            return
        agents = self.agents_seen
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
        read, succeeded = asyncio.Event(), []

        def drawn() -> None:
            succeeded.append(True)
            read.set()

        pane.when_read(drawn, read.set)
        pane.catch_up()  # the action acts on what the pane shows now: once it is read
        await read.wait()
        if not succeeded:  # the read failed (the error bar says why)
            return
        target: Widget = pane
        if part is not None:
            try:
                target = pane.query_one(part)
            except NoMatches:
                return
        await self.run_action(action, target)


def _said(exc: GraymatterError | OSError) -> str:
    """A failure's one line: the error's own, or what the system said about the file."""
    if isinstance(exc, GraymatterError):
        return str(exc)
    return f"{exc.strerror or exc}: {exc.filename or ''}"
