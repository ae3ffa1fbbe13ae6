"""The pane contract (ADR 0016): what every tab's pane may ask of the app, typed once,
and how a pane keeps what it shows in step with the app's state (ADR 0017)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, cast

from textual.binding import Binding, BindingType
from textual.widget import Widget

from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.screens.actions import own_keys


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

    def show_cycle(self, cycle_id: str) -> None: ...

    def show_error(self, message: str) -> None: ...


class Pane(Widget):
    """The content of one tab. A pane re-reads the store when the store's generation or
    the agent changes, only while it is shown; a hidden pane marks itself stale and
    catches up when its tab is shown again.

    A pane names its container first (`class FactsPane(Vertical, Pane)`): Textual takes
    a widget's default CSS and type selectors from its first base only."""

    # The help screen's section for this pane.
    TITLE: ClassVar[str] = ""
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
        for name in ("generation", "agent", *self.DEPENDS_ON):
            self.watch(self.app, name, self.invalidate, init=False)

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
    @abstractmethod
    def reload(self) -> None:
        """Read from the store what this pane shows (raises GraymatterError)."""

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

    def invalidate(self) -> None:
        """What this pane shows is out of date: re-read now if shown, else when shown."""
        self.stale = True
        try:
            self.catch_up()
        except GraymatterError as exc:
            self.host.show_error(str(exc))

    def catch_up(self) -> None:
        """Re-read if stale and shown; a failed read leaves the pane stale, to try again."""
        if self.stale and self.showing:
            self.reload()
            self.stale = False
