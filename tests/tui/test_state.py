"""The state the app carries (ADR 0017): panes re-read the store when its generation or
the agent changes, and only while they are shown; the summariser is probed in one place.

Reloads are counted by panes that subclass the real ones and only count (the app takes
its panes from `PANES`, so a test can give it these)."""

from __future__ import annotations

from typing import ClassVar

from textual.widgets import TabbedContent

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.app import GraymatterApp
from graymatter_tui.tui.screens.base import Read
from graymatter_tui.tui.screens.facts import FactsPane
from graymatter_tui.tui.screens.status import StatusPane
from graymatter_tui.tui.screens.tombstones import TombstonesPane
from tests.support.over_socket import OllamaOverSocket
from tests.tui.helpers import (
    OPS,
    make_app,
    press_each,
    run_cli,
    running,
    screen_text,
    settings_for,
    settle,
    static_text,
    visible_texts,
    wait_until,
)

RESEARCH = "research-agent"


class CountsReloads:
    """Notes the agent of every read of the store, then reads as the real pane does."""

    reloads: ClassVar[list[str]] = []

    def read(self, *, keep: bool = True) -> Read:
        self.reloads.append(self.host.agent)  # type: ignore[attr-defined]
        return super().read(keep=keep)  # type: ignore[misc, no-any-return]


class CountingFacts(CountsReloads, FactsPane):
    pass


class CountingTombstones(CountsReloads, TombstonesPane):
    pass


class CountingStatus(CountsReloads, StatusPane):
    pass


class CountingApp(GraymatterApp):
    PANES = (
        ("facts", CountingFacts),
        ("tombstones", CountingTombstones),
        *GraymatterApp.PANES[2:4],
        ("status", CountingStatus),
    )


def counting_app(store: LmdbStore) -> CountingApp:
    for pane in (CountingFacts, CountingTombstones, CountingStatus):
        pane.reloads = []
    app = CountingApp(store=store, settings=settings_for(store.path), agent=OPS)
    app.animation_level = "none"
    return app


def a_loose_fact(store: LmdbStore) -> str:
    return next(f.id for f in store.list_facts(OPS) if not f.pinned)


async def polls(pilot: object, app: GraymatterApp, count: int = 3) -> None:
    """Let the poll timer fire a few times (each pause is app time, never asserted on)."""
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    await pilot.pause(app.poll_seconds * count)


async def test_another_process_write_reloads_the_shown_pane_and_not_a_hidden_one(
    demo_store: LmdbStore,
) -> None:
    app = counting_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "2", "1")
        await polls(pilot, app)
        # Shown once each; polls with nothing written read nothing again.
        assert CountingFacts.reloads == [OPS]
        assert CountingTombstones.reloads == [OPS]
        assert "0 tombstones" in static_text(app, "#tombs-info")

        retired = run_cli("retire", a_loose_fact(demo_store), "--dir", str(demo_store.path))
        assert retired.returncode == 0, retired.stderr
        await wait_until(pilot, lambda: "99 live" in static_text(app, "#facts-info"))
        await polls(pilot, app)
        assert CountingFacts.reloads == [OPS, OPS]  # once for the one write
        # Hidden: stale, not read, still showing what it read before.
        assert CountingTombstones.reloads == [OPS]
        assert "0 tombstones" in static_text(app, "#tombs-info")

        await pilot.press("2")
        await pilot.pause()
        assert CountingTombstones.reloads == [OPS, OPS]  # read as it is shown
        assert "1 tombstone" in static_text(app, "#tombs-info")
        await polls(pilot, app)
        assert CountingTombstones.reloads == [OPS, OPS]
        assert CountingFacts.reloads == [OPS, OPS]  # hidden now, nothing written


async def test_a_new_agent_reloads_the_shown_pane_and_the_others_when_shown(
    demo_store: LmdbStore,
) -> None:
    app = counting_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("5")
        await settle(pilot)
        assert f"Weights of {OPS}'s live facts" in screen_text(app)
        status_reads = len(CountingStatus.reloads)
        await pilot.press("A", "down", "enter")
        await settle(pilot)
        assert app.agent == RESEARCH
        assert CountingStatus.reloads[status_reads:] == [RESEARCH]
        assert f"Weights of {RESEARCH}'s live facts" in screen_text(app)
        assert CountingFacts.reloads == [OPS]  # hidden: not read for the new agent yet
        assert CountingTombstones.reloads == []  # never shown, never read

        await pilot.press("1")
        await pilot.pause()
        assert CountingFacts.reloads == [OPS, RESEARCH]
        assert visible_texts(app) == [f.text for f in demo_store.list_facts(RESEARCH)]
        assert CountingStatus.reloads[status_reads:] == [RESEARCH]


async def test_the_summariser_is_probed_once_for_both_panes(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    def probes() -> int:
        return sum(1 for r in ollama.requests if r.route == "/api/version")

    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=5.0)
    async with running(app) as pilot:
        await pilot.press("3")
        await wait_until(pilot, lambda: "✓ Ollama" in static_text(app, "#summariser-line"))
        await pilot.press("5")
        await wait_until(pilot, lambda: "ollama — reachable: Ollama" in screen_text(app))
        await polls(pilot, app)
        assert probes() == 1  # Consolidate and Status show the same probe

        # Choosing a summariser (even the same one) checks it again, once.
        await pilot.press("3", "m")
        await pilot.pause()
        await pilot.press("home", "enter")
        await settle(pilot)
        await wait_until(pilot, lambda: "✓ Ollama" in static_text(app, "#summariser-line"))
        await pilot.press("5")
        await wait_until(pilot, lambda: "ollama — reachable: Ollama" in screen_text(app))
        assert probes() == 2
        assert app.query_one("#tabs", TabbedContent).active == "status"
