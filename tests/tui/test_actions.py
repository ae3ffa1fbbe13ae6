"""One table of actions (ADR 0016): every described binding of the app and of each pane is
in the command palette and in the help screen, and a binding added to a pane is in both
without another edit."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import TabbedContent

import graymatter_tui
from graymatter_tui.app import GraymatterApp
from graymatter_tui.screens.consolidate import ConsolidatePane
from graymatter_tui.screens.facts import FactsPane
from graymatter_tui.screens.help import HelpScreen
from graymatter_tui.screens.journal import JournalPane
from graymatter_tui.screens.status import StatusPane
from graymatter_tui.screens.tombstones import TombstonesPane
from graymatter_tui.store import Store
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

OWNERS = (GraymatterApp, FactsPane, TombstonesPane, ConsolidatePane, JournalPane, StatusPane)
HELP_KEY = {"question_mark": "?", "slash": "/", "escape": "esc"}


def with_description(owner: type) -> list[Binding]:
    """The bindings the class itself declares (Status's scrolling keys are its container's)."""
    bindings: list[BindingType] = list(vars(owner).get("BINDINGS", []))
    return [b for b in bindings if isinstance(b, Binding) and b.description]


def help_rows(app: GraymatterApp) -> list[str]:
    return [" ".join(line.split()) for line in modal_text(app).splitlines()]


async def test_every_described_binding_is_in_the_palette_and_the_help(demo_store: Store) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = help_rows(app)
        for owner in OWNERS:
            for binding in with_description(owner):
                title = getattr(binding, "title", "") or binding.description
                assert title in commands, (owner.__name__, binding)
                key = " / ".join(HELP_KEY.get(k, k) for k in binding.key.split(","))
                assert any(row.startswith(key) and binding.description in row for row in rows), (
                    owner.__name__,
                    binding,
                )
        assert "Export" in commands  # an action with no key of its own


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
    demo_store: Store,
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


async def test_a_pane_command_from_the_palette_runs_in_its_pane(demo_store: Store) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await type_in_palette(pilot, "Step cycle", shows="Run the next stage of the cycle")
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one("#tabs", TabbedContent).active == "consolidate"
        await wait_until(pilot, lambda: "cycle " in static_text(app, "#stepper"))
        assert "Decay" in static_text(app, "#stepper")


def test_the_app_reaches_panes_only_through_the_pane_contract() -> None:
    """No pane method is looked up by name, and the app is cast to its protocol once."""
    ui = Path(graymatter_tui.__file__).parent
    sources = {p.name: p.read_text() for p in [ui / "app.py", *(ui / "screens").glob("*.py")]}
    by_name = [name for name, text in sources.items() if "getattr(" in text or "hasattr(" in text]
    assert by_name == []
    assert [name for name, text in sources.items() if "cast(Host" in text] == ["base.py"]
