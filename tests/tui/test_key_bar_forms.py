"""The key bar's keys take their form (full or compact) as an attribute, not as Textual's
`-compact` class (tui/widgets/key_bar.py `BarKey`): each form must read, cell for cell and
style for style, as Textual's own FooterKey in a Footer of that form; and switching form
restyles nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.widgets.key_bar import BarKey, KeyBar
from tests.tui.helpers import make_app, running, screen_lines, settle

# (key, display, description, disabled)
KEYS = [
    ("n", "n", "Next", False),
    ("a", "a", "Apply", True),
    ("question_mark", "?", "", False),
    ("r", "r", "Réessayer 日本", False),
]


def textual_keys(compact: bool) -> list[Widget]:
    return [
        FooterKey(key, display, text, f"do_{key}", disabled=disabled).data_bind(
            compact=Footer.compact
        )
        for key, display, text, disabled in KEYS
    ]


def bar_keys(compact: bool) -> list[Widget]:
    keys = []
    for key, display, text, disabled in KEYS:
        widget = BarKey(key, display, text, f"do_{key}", disabled=disabled)
        widget.set_form(compact=compact)
        keys.append(widget)
    return keys


class Bar(Footer):
    """A footer of the keys `keys(compact)` makes (in its compose: data_bind needs it)."""

    def __init__(self, keys: Callable[[bool], list[Widget]], compact: bool) -> None:
        super().__init__()
        self.make_keys = keys
        self.form = compact
        self.compact = compact

    def compose(self) -> ComposeResult:
        yield from self.make_keys(self.form)

    async def recompose(self) -> None:
        """Composed once: Footer recomposes on each change of bindings, which would put new
        keys in place of those a test changes."""


class OneBar(App[None]):
    def __init__(self, bar: Callable[[], Footer]) -> None:
        super().__init__()
        self.make_bar = bar

    def compose(self) -> ComposeResult:
        yield self.make_bar()


def drawn(app: App[None]) -> str:
    """The screen's last line, with its styles (ANSI)."""
    return screen_lines(app, styles=True)[-1]


async def bottom_line(make: Callable[[], Footer]) -> str:
    app = OneBar(make)
    async with app.run_test(size=(100, 5)) as pilot:
        await pilot.pause()
        return drawn(app)


@pytest.mark.parametrize("compact", [False, True], ids=["full", "compact"])
async def test_each_form_reads_as_textuals_own(compact: bool) -> None:
    ours = await bottom_line(lambda: Bar(lambda _c: bar_keys(compact), compact=False))
    textuals = await bottom_line(lambda: Bar(textual_keys, compact=compact))
    assert "Réessayer" in ours
    assert ours == textuals


async def test_switching_form_restyles_nothing_and_draws_the_other_form() -> None:
    expected = await bottom_line(lambda: Bar(textual_keys, compact=True))
    app = OneBar(lambda: Bar(lambda _c: bar_keys(False), compact=False))
    async with app.run_test(size=(100, 5)) as pilot:
        await pilot.pause()
        assert drawn(app) != expected
        restyled: list[Widget] = []
        update = Widget.update_node_styles

        def counted(self: Widget, animate: bool = True) -> None:
            restyled.append(self)
            update(self, animate)

        Widget.update_node_styles = counted  # type: ignore[method-assign]
        try:
            for key in app.query(BarKey):
                key.set_form(compact=True)
            for _ in range(50):  # until the next frame has drawn it
                await pilot.pause(0.02)
                if drawn(app) == expected:
                    break
        finally:
            Widget.update_node_styles = update  # type: ignore[method-assign]
        assert drawn(app) == expected
        assert restyled == []


async def test_a_tab_switch_that_changes_the_footers_form_restyles_no_key(
    demo_store: LmdbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 120 columns Facts' keys fit whole and Consolidate's do not: switching between
    them changes the footer's form, and restyles neither the footer nor a key in it."""
    app = make_app(demo_store)
    async with running(app, size=(120, 30)) as pilot:
        bar = app.query_one(KeyBar)
        forms: list[bool] = []
        restyled: list[Widget] = []
        update = Widget.update_node_styles

        def counted(self: Widget, animate: bool = True) -> None:
            if self is bar or bar in self.ancestors:
                restyled.append(self)
            update(self, animate)

        monkeypatch.setattr(Widget, "update_node_styles", counted)
        for tab in ("3", "1", "3", "1"):
            await pilot.press(tab)
            await settle(pilot)
            shown = [key for key in bar.query(BarKey) if key.display and not key.has_class("-help")]
            forms.append(any(key.compact_form for key in shown))
        assert forms == [True, False, True, False]
        assert restyled == []
