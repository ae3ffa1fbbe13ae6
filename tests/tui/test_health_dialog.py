"""The Health dialog (`h` on the Status tab): the agent's health rules with their
thresholds and the facts each names; `enter` on a fact opens it, `esc` comes back; an
agent with nothing stored says so; stored text stays literal."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import OptionList, TabbedContent

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.screens.health import HealthScreen
from graymatter_tui.views.health import RULES
from tests.tui.helpers import OPS, first_read, make_app, modal_text, plain, running, settle


def _shown(app: Any) -> str:
    """The dialog's text: its lines and every row of its list, scrolled into view or not."""
    findings = app.screen.query_one("#health-findings", OptionList)
    rows = [plain(findings.get_option_at_index(i).prompt) for i in range(findings.option_count)]
    return modal_text(app) + "\n" + "\n".join(rows)


async def _open_health(pilot: Pilot[Any]) -> HealthScreen:
    await first_read(pilot)
    await pilot.press("5")
    await settle(pilot)
    assert pilot.app.query_one("#tabs", TabbedContent).active == "status"
    await pilot.press("d")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, HealthScreen)
    return screen


async def test_enter_on_a_findings_fact_opens_it_and_esc_comes_back(
    empty_store: LmdbStore,
) -> None:
    weak = empty_store.put_many(
        [
            NewFact(OPS, "We decided to deploy on [bold]Tuesdays[/bold]", weight=0.02),
            NewFact(OPS, "The refund policy is 30 days", weight=0.03),
        ]
    )
    empty_store.put_many(NewFact(OPS, f"a plain note {i} about the staging host") for i in range(5))
    app = make_app(empty_store)
    async with running(app) as pilot:
        screen = await _open_health(pilot)
        shown = _shown(app)
        for rule in RULES:
            assert rule in shown
        assert "! near-prune-critical" in shown
        assert "warn: unpinned, weight < 0.05" in shown  # the threshold is said
        assert "[bold]Tuesdays[/bold]" in shown  # literal, never markup
        # The cursor starts on the first fact a rule names: the newest weak decision.
        assert screen.highlighted_fact() == weak[1].id
        await pilot.press("down")
        assert screen.highlighted_fact() == weak[0].id
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FactDetailScreen)
        assert app.screen.fact_id == weak[0].id
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HealthScreen)


async def test_a_rules_own_rows_open_nothing(empty_store: LmdbStore) -> None:
    empty_store.put(OPS, "a single healthy fact")
    app = make_app(empty_store)
    async with running(app) as pilot:
        screen = await _open_health(pilot)
        assert screen.fact_of == {}  # every rule ok: no fact named
        findings = screen.query_one("#health-findings", OptionList)
        assert findings.option_count == 2 * len(RULES)
        assert "verdict ok" in _shown(app)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen


async def test_an_agent_with_nothing_stored(empty_store: LmdbStore) -> None:
    empty_store.put("someone-else", "a fact of another agent")
    app = make_app(empty_store)
    async with running(app) as pilot:
        await _open_health(pilot)
        assert f"{OPS} has no facts yet: nothing to check." in _shown(app)


async def test_check_again_sees_new_facts(empty_store: LmdbStore) -> None:
    empty_store.put(OPS, "a single healthy fact")
    app = make_app(empty_store)
    async with running(app) as pilot:
        screen = await _open_health(pilot)
        assert screen.fact_of == {}
        twins = empty_store.put_many(NewFact(OPS, "Deploy on Friday!") for _ in range(2))
        await pilot.press("r")
        await settle(pilot)
        assert set(screen.fact_of.values()) == {f.id for f in twins}
        assert "duplicates" in _shown(app)
