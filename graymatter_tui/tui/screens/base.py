"""The pane contract (ADR 0016): what every tab's pane may ask of the app, typed once,
and how a pane keeps what it shows in step with the app's state (ADR 0017).

A pane never reads the store on the UI thread: `read` says, on the UI thread, what to
read, as a function the host runs in a thread worker; that function returns the one that
draws what it found, run back on the UI thread. Until then the pane keeps what it showed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar, cast

from textual.binding import Binding, BindingType
from textual.widget import Widget

from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.screens.actions import own_keys

T = TypeVar("T")
Draw = Callable[[], None]
# A pane's read: run in a thread worker (it may only read the store), it returns the
# function that draws what it read, run on the UI thread.
Read = Callable[[], Draw]


@dataclass(frozen=True)
class Reach:
    """The summariser's reachability, probed once by the app and shown by every pane."""

    state: Literal["checking", "none", "ok", "failed"]
    detail: str = ""


CHECKING = Reach("checking")


class Host(Protocol):
    """The app as panes see it, without importing the app module."""

    store: MemoryStore
    settings: Settings
    agent: str
    generation: int
    reach: Reach
    embedding: tuple[str, str]  # (this process's embedder, recall's last vector use)
    read_only: bool
    closing: bool

    def run_write(
        self, label: str, fn: Callable[[], Any], then: Callable[[Any], None] | None = None
    ) -> None: ...

    def may_mutate(self) -> bool: ...

    def show_fact(self, fact_id: str) -> None: ...

    def embed_model(self) -> str | None:
        """The model of the embedder GRAYMATTER_EMBED configures, None when off."""
        ...

    def show_cycle(self, cycle_id: str) -> None: ...

    def read_in_thread(
        self,
        node: Widget,
        job: Callable[[], T],
        then: Callable[[T], None],
        *,
        group: str,
        exclusive: bool = True,
        failed: Callable[[GraymatterError], None] | None = None,
    ) -> None:
        """Run the store read `job` in a thread worker of `node`, then `then(result)` on
        the UI thread (a newer read of the group supersedes it). A failure goes to `failed`
        first, then, as every failed read or write does, to the error bar; a successful
        read clears that bar."""
        ...

    def reading(self, pane: Pane, busy: bool) -> None:
        """`pane` began (or ended) reading: a slow read of the shown pane is marked."""
        ...


class Pane(Widget):
    """The content of one tab. A pane re-reads the store when the store's generation or
    the agent changes, only while it is shown; a hidden pane marks itself stale and
    catches up when its tab is shown again.

    A pane names its container first (`class FactsPane(Vertical, Pane)`): Textual takes
    a widget's default CSS and type selectors from its first base only."""

    # The help screen's section for this pane.
    TITLE: ClassVar[str] = ""
    # The tab's label below NARROW_COLUMNS, where every tab must fit in 80 columns ("" for
    # TITLE itself).
    NARROW_TITLE: ClassVar[str] = ""
    # Keys that a child widget handles (enter on a list), described for the help screen.
    HELP_KEYS: ClassVar[tuple[Binding, ...]] = ()
    # Child widgets with keys of their own (the probe list's `d`): their keys are in this
    # pane's help section and their actions in the palette, run on the pane's child.
    PARTS: ClassVar[tuple[type[Widget], ...]] = ()
    # What this pane shows besides the store and the agent (Status shows the summariser's
    # reachability): names of the app's reactives that make it stale.
    DEPENDS_ON: ClassVar[tuple[str, ...]] = ()
    # The selector of the widget focused when the tab is shown ("" for the pane itself).
    FOCUS: ClassVar[str] = ""

    stale = True  # nothing read yet

    def on_mount(self) -> None:
        # Another agent is other content: the read in flight is superseded. The store
        # moving makes it only older: it is drawn, then read again (a store that moves
        # faster than a read must not keep the pane from ever drawing).
        self.watch(self.app, "agent", self.invalidate, init=False)
        for name in ("generation", *self.DEPENDS_ON):
            self.watch(self.app, name, self.store_moved, init=False)

    @classmethod
    def pane_bindings(cls) -> list[BindingType]:
        """The keys this pane declares, for the palette and the help (not the scrolling
        keys its container brings: those are the same everywhere)."""
        for klass in cls.__mro__:
            if issubclass(klass, Pane) and "BINDINGS" in vars(klass):
                return list(klass.BINDINGS)
        return []

    @classmethod
    def help_keys(cls) -> list[BindingType]:
        """Every key of the pane's help section: the pane's, then its parts'."""
        return [
            *cls.HELP_KEYS,
            *cls.pane_bindings(),
            *(key for part in cls.PARTS for key in own_keys(part)),
        ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Nothing starts once the app is closing (a key typed right after `q`)."""
        return not self.host.closing

    @property
    def host(self) -> Host:
        """The app's services, typed once for every pane."""
        return cast(Host, self.app)

    def focus_target(self) -> Widget:
        """The widget that takes the focus when this pane's tab is shown."""
        return self.query_one(self.FOCUS) if self.FOCUS else self

    # ---- staying current ---------------------------------------------------------------
    _reading = False  # a read is in flight
    _supersede = False  # what the pane shows must change: a read in flight is out of date

    def read(self) -> Read:
        """On the UI thread, what this pane reads now (the agent, a filter, the cursor's
        row, captured here): a function the host runs in a thread worker, which reads the
        store (raising GraymatterError when it cannot) and returns the function that draws
        what it read, back on the UI thread. Every pane has its own."""
        raise NotImplementedError(type(self).__name__)

    def tick_clock(self) -> None:
        """Redraw relative ages against now, without a store read (panes that show ages)."""

    def write_before_closing(self) -> Callable[[], object] | None:
        """A store write the app must run before it exits (off the UI thread), so that
        nothing this pane began is left unrecorded; None when there is none."""
        return None

    @property
    def showing(self) -> bool:
        """On the active tab: a hidden tab's TabPane has its display off."""
        return all(node.display for node in self.ancestors_with_self if isinstance(node, Widget))

    def store_moved(self) -> None:
        """The store moved: read again, now if shown, else when shown. A read in flight
        finishes first (its content is valid, only older); the pane then reads again."""
        self.stale = True
        self.catch_up()

    def invalidate(self) -> None:
        """What this pane shows must change (the agent, a filter, the theme): read again,
        now if shown, else when shown, superseding a read in flight."""
        self.stale = True
        self._supersede = True
        self.catch_up()

    def catch_up(self) -> None:
        """Read if stale and shown, once the store has been heard from. A failed read
        leaves the pane stale, to be read again when the store moves or its tab is shown."""
        if not self.stale or not self.showing or self.host.generation < 0:
            return
        if self._reading and not self._supersede:
            return  # read again once this one is drawn: the pane stays stale
        self.stale = False
        self._supersede = False
        self._reading = True
        self.host.reading(self, True)
        self.host.read_in_thread(self, self.read(), self._drawn, group="read", failed=self._lost)

    def when_read(
        self, then: Callable[[], None], otherwise: Callable[[], None] | None = None
    ) -> None:
        """`then()` once what the pane shows is read: now if nothing is to be read, else
        after the next read is drawn; `otherwise()` instead if that read fails."""
        if not self._reading and not (self.stale and self.showing):
            then()
        else:
            self._after_read = [*self._after_read, (then, otherwise)]

    def select(self, key: str) -> bool:
        """Put the cursor on the row of `key` (a cycle id in the Journal); False when the
        pane does not list it."""
        return False

    _after_read: list[tuple[Callable[[], None], Callable[[], None] | None]] = []

    def _drawn(self, draw: Draw) -> None:
        self._reading = False
        self.host.reading(self, False)
        draw()
        waiting, self._after_read = self._after_read, []
        for then, _otherwise in waiting:
            then()
        if self.stale:  # the store moved while it was read
            self.catch_up()

    def _lost(self, _error: GraymatterError) -> None:
        self._reading = False
        self.host.reading(self, False)
        self.stale = True
        waiting, self._after_read = self._after_read, []
        for _then, otherwise in waiting:
            if otherwise is not None:
                otherwise()
