"""One table of actions (ADR 0016): every described binding of the app and of each pane is
in the command palette and in the help screen, and a binding added to a pane is in both
without another edit."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import TabbedContent

import graymatter_tui
import graymatter_tui.tui.screens
import graymatter_tui.tui.widgets
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.tui import app as app_module
from graymatter_tui.tui.app import GraymatterApp
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
from graymatter_tui.tui.screens.health import HealthScreen
from graymatter_tui.tui.screens.help import HelpScreen
from graymatter_tui.tui.screens.journal import CycleDiffScreen, JournalTable
from graymatter_tui.tui.screens.past_facts import PastFactsScreen
from graymatter_tui.tui.screens.probe_panel import ProbePanel
from graymatter_tui.tui.screens.recall import RecallScreen
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from tests.tui.helpers import (
    OPS,
    make_app,
    modal_text,
    running,
    settings_for,
    settle,
    static_text,
    type_in_palette,
    wait_until,
)

HELP_KEY = {"question_mark": "?", "slash": "/", "escape": "esc"}
# The movement keys every list shares: in the help's Lists section, not palette commands.
LIST_CLASSES = (VirtualList, JournalTable)


def key_owners() -> list[type[DOMNode]]:
    """Every class of the app's UI that declares keys of its own (bindings, or keys a
    child widget handles): found by walking the app module and every module of
    graymatter_tui.tui.screens and graymatter_tui.tui.widgets, so a class added there with keys
    is checked without an edit here."""
    modules = [app_module]
    for package in (graymatter_tui.tui.screens, graymatter_tui.tui.widgets):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            modules.append(importlib.import_module(info.name))
    owners: dict[type[DOMNode], None] = {}
    for module in modules:
        for _name, value in inspect.getmembers(module, inspect.isclass):
            ours = value.__module__ == module.__name__ and issubclass(value, DOMNode)
            if ours and own_keys(value):
                owners[value] = None
    return list(owners)


def own_keys(owner: type) -> list[Binding]:
    """The described bindings and help keys the class itself declares."""
    declared = [*vars(owner).get("BINDINGS", []), *vars(owner).get("HELP_KEYS", ())]
    return [b for b in declared if isinstance(b, Binding) and b.description]


def key_names(keys: str) -> list[str]:
    return [HELP_KEY.get(k.strip(), k.strip()) for k in keys.split(",")]


def help_sections(app: GraymatterApp) -> dict[str, list[tuple[list[str], str]]]:
    """The help screen's sections: title -> (keys, description) rows; each row is also
    checked to be on the screen."""
    screen = app.screen
    assert isinstance(screen, HelpScreen)
    shown = help_rows(app)
    sections: dict[str, list[tuple[list[str], str]]] = {}
    for title, rows in screen.sections:
        sections[title] = [(keys.split(" / "), description) for keys, description in rows]
        for keys, description in rows:
            assert f"{keys} {description}" in shown, (title, keys, description)
    return sections


def missing_from_help(
    owner: type, sections: dict[str, list[tuple[list[str], str]]]
) -> list[tuple[str, str]]:
    """(key, description) of the class that no one section of the help holds together."""

    def holds(rows: list[tuple[list[str], str]]) -> list[tuple[str, str]]:
        return [
            (key, binding.description)
            for binding in own_keys(owner)
            for key in key_names(binding.key)
            if not any(key in keys and binding.description == text for keys, text in rows)
        ]

    return min((holds(rows) for rows in sections.values()), key=len)


def help_rows(app: GraymatterApp) -> list[str]:
    return [" ".join(line.split()) for line in modal_text(app).splitlines()]


def command_titles(app: GraymatterApp) -> set[str]:
    return {c.title for c in app.get_system_commands(app.screen)}


def palette_titles(owner: type) -> list[str]:
    return [
        getattr(b, "title", "") or b.description
        for b in vars(owner).get("BINDINGS", [])
        if isinstance(b, Binding) and b.description
    ]


def test_the_walk_finds_the_keys_of_panes_panels_lists_and_screens() -> None:
    """The walk below is what the help and palette tests trust: it must see the classes
    whose keys were once left out, and every kind of owner."""
    owners = key_owners()
    for expected in (
        GraymatterApp,
        FactsPane,
        ConsolidatePane,
        ProbePanel,
        RecallScreen,
        VirtualList,
        JournalTable,
        ConfirmScreen,
    ):
        assert expected in owners, expected


async def test_the_help_lists_every_key_of_every_pane_panel_list_and_screen(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        sections = help_sections(app)
        missing = {o.__name__: m for o in key_owners() if (m := missing_from_help(o, sections))}
        assert missing == {}, "; ".join(f"{name}: {keys}" for name, keys in missing.items())


async def test_the_palette_offers_every_action_where_it_can_run(
    demo_store: LmdbStore, tmp_path: Path
) -> None:
    """On the main screen: the app's, every pane's and every panel's actions. On a
    screen of its own (a dialog, the recall preview): that screen's actions."""
    fact_id = demo_store.fact_ids(OPS, "live", limit=1)[0]
    record = CycleRecord(cycle_id="01KCYCLE000000000000000000", agent_id=OPS, outcome="skipped")
    screens: dict[type, Callable[[], Screen[Any]]] = {
        RecallScreen: lambda: RecallScreen(demo_store, OPS, lambda _query: None),
        FactDetailScreen: lambda: FactDetailScreen(demo_store, fact_id),
        HealthScreen: lambda: HealthScreen(demo_store, OPS, None, lambda _fact_id: None),
        CycleDiffScreen: lambda: CycleDiffScreen(record, demo_store),
        PastFactsScreen: lambda: PastFactsScreen(demo_store, record),
        ConfirmScreen: lambda: ConfirmScreen("Sure?"),
        TextEntryScreen: lambda: TextEntryScreen("Text"),
        LineEntryScreen: lambda: LineEntryScreen("Line"),
        ChooseScreen: lambda: ChooseScreen("Pick", [("one", "one")]),
        NoStoreScreen: lambda: NoStoreScreen(str(tmp_path / "nowhere")),
        HelpScreen: lambda: HelpScreen([]),
    }
    owners = key_owners()
    app = make_app(demo_store)
    async with running(app) as pilot:
        main = command_titles(app)
        missing: dict[str, list[str]] = {}
        for owner in owners:
            if owner in LIST_CLASSES:
                continue
            if issubclass(owner, Screen):
                assert owner in screens, f"open {owner.__name__} here to check its palette"
                await app.push_screen(screens[owner]())
                await pilot.pause()
                titles = command_titles(app)
                app.pop_screen()
                await pilot.pause()
            else:
                titles = main
            if lost := [t for t in palette_titles(owner) if t not in titles]:
                missing[owner.__name__] = lost
            # A key a child widget handles is described in the help, never run as a command.
            for key in vars(owner).get("HELP_KEYS", ()):
                assert key.description not in titles, (owner.__name__, key.description)
        assert missing == {}, "; ".join(f"{name}: {keys}" for name, keys in missing.items())


class NotedFacts(FactsPane):
    """Facts with one more binding, and nothing else."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *FactsPane.BINDINGS,
        Binding("z", "note", "Note the fact", id="facts-note"),
    ]
    noted: ClassVar[list[str]] = []

    def action_note(self) -> None:
        fact = self.current_fact()
        self.noted.append(fact.id if fact else "")


class NotedApp(GraymatterApp):
    PANES = (("facts", NotedFacts), *GraymatterApp.PANES[1:])


async def test_a_binding_added_to_a_pane_is_in_the_palette_and_the_help(
    demo_store: LmdbStore,
) -> None:
    NotedFacts.noted = []
    app = NotedApp(store=demo_store, settings=settings_for(demo_store.path), agent=OPS)
    app.animation_level = "none"
    async with running(app) as pilot:
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Note the fact"] == "Note the fact"
        await pilot.press("question_mark")
        await pilot.pause()
        assert "z Note the fact" in help_rows(app)
        await pilot.press("escape", "4")  # from another tab: the palette shows Facts first
        await pilot.pause()
        await type_in_palette(pilot, "Note the fact", shows="Note the fact")
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one("#tabs", TabbedContent).active == "facts"
        assert len(NotedFacts.noted) == 1 and NotedFacts.noted[0]


async def test_a_pane_command_from_the_palette_runs_in_its_pane(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await type_in_palette(pilot, "Step cycle", shows="Run the next stage of the cycle")
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one("#tabs", TabbedContent).active == "consolidate"
        await wait_until(pilot, lambda: "cycle " in static_text(app, "#stepper"))
        assert "Decay" in static_text(app, "#stepper")


def test_the_app_reaches_panes_only_through_the_pane_contract() -> None:
    """No pane method is looked up by name, the app tells no pane from another by its
    class, and the app is cast to its protocol once."""
    ui = Path(graymatter_tui.__file__).parent / "tui"
    sources = {p.name: p.read_text() for p in [ui / "app.py", *(ui / "screens").glob("*.py")]}
    by_name = [name for name, text in sources.items() if "getattr(" in text or "hasattr(" in text]
    assert by_name == []
    assert re.findall(r"isinstance\([^)]*Pane\b", sources["app.py"]) == []
    assert [name for name, text in sources.items() if "cast(Host" in text] == ["base.py"]


async def test_a_panels_command_from_the_palette_runs_on_the_panel(demo_store: LmdbStore) -> None:
    first, _ = demo_store.add_probe(OPS, "staging database")
    second, _ = demo_store.add_probe(OPS, "deploy approvals")
    app = make_app(demo_store)
    async with running(app) as pilot:
        await type_in_palette(pilot, "Remove probe", shows="Remove the probe highlighted")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(demo_store.probes(OPS)) == 1, what="the removal")
        assert app.query_one("#tabs", TabbedContent).active == "consolidate"
    assert demo_store.probes(OPS) == [second] and first not in demo_store.probes()


async def test_a_screens_command_from_the_palette_runs_on_that_screen(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"staging database", "enter")
        await settle(pilot)
        assert isinstance(app.screen, RecallScreen)
        await type_in_palette(pilot, "Save query as probe", shows="Check every consolidation")
        await pilot.press("enter")
        await wait_until(pilot, lambda: demo_store.probes(OPS) != [], what="the probe saved")
        assert isinstance(app.screen, RecallScreen)
    assert [p.query for p in demo_store.probes(OPS)] == ["staging database"]
