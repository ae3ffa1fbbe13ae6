"""Moving the focus restyles the widgets it concerns and repaints no more than those
(tui/screens/main_screen.py, ADR 0081)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Input

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.screens.main_screen import MainScreen
from tests.tui.helpers import first_read, make_app, running, settle


class TwoInputs(App[None]):
    def __init__(self, screen_class: type[Screen[None]]) -> None:
        super().__init__()
        self.screen_class = screen_class

    def get_default_screen(self) -> Screen[None]:
        return self.screen_class(id="_default")

    def compose(self) -> ComposeResult:
        yield Input(id="one")
        yield Input(id="two")


async def focus_moved(screen_class: type[Screen[None]]) -> tuple[bool, bool, bool]:
    """(whole screen to repaint, the focused input restyled, the one left restyled)."""
    app = TwoInputs(screen_class)
    async with app.run_test() as pilot:
        await pilot.pause()
        one, two = app.query_one("#one", Input), app.query_one("#two", Input)
        app.screen.set_focus(one)
        await pilot.pause()
        unfocused_border = two.styles.border_top
        app.screen.set_focus(two)
        whole = app.screen._repaint_required  # before the next frame clears it
        await pilot.pause()
        restyled = two.has_pseudo_class("focus") and two.styles.border_top != unfocused_border
        left = not one.has_pseudo_class("focus") and one.styles.border_top == unfocused_border
        app.exit()
    return whole, restyled, left


async def test_a_focus_move_restyles_both_widgets_without_repainting_the_screen() -> None:
    assert await focus_moved(MainScreen) == (False, True, True)
    # Textual's own screen would repaint everything (so this test can fail).
    assert await focus_moved(Screen) == (True, True, True)


async def test_the_app_runs_on_its_own_screen_and_tab_keys_move_the_focus(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await first_read(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.id == "_default"
        for tab in ("2", "1", "slash"):
            await pilot.press(tab)
            await settle(pilot)
            focused = app.screen.focused
            assert focused is not None and focused.has_pseudo_class("focus")
        assert isinstance(app.screen.focused, Input)  # "/" is the Facts filter
