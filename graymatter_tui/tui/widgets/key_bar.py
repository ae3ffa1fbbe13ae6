"""The footer, fitted to the terminal's width (ADR 0009).

Textual's Footer never wraps: on a narrow terminal the keys on its right are simply cut
off, whatever they are. This one picks its form by the room it has:

1. full: every key with its whole description, and the command palette key, when they fit;
2. compact: less space between keys, `? Help` pinned to the right edge; the focused
   pane's keys first (whole descriptions if they all fit, else short ones), then the
   app-wide keys that still fit (all of them are in the help screen and the palette);
3. cut: when even the pane's short keys do not fit, the ones that do, "…", `? Help`.

`? Help` is always on screen: the help screen lists every key the footer left out.

Textual rebuilds a footer on every change of bindings: every focus move and tab switch
removes each key widget and mounts new ones, and each mount styles the key (two virtual
nodes for its component styles). That churn was most of what the app's full collections
freed, and their longest passes (ADR 0081). This one keeps its key widgets and writes the
new keys into them; it mounts more only when a pane has more keys than any before it, and
rebuilds only when the palette key's binding changes. Its keys take their form (full or
compact) as an attribute, not as Textual's `-compact` class on the footer: toggling that
class restyled the footer and every key in it, ~15 ms on each tab switch between a tab
whose keys fit whole and one whose do not.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widgets import Footer, Label

# FooterKey is the footer's own clickable key (private module, Textual pinned: ADR 0002).
from textual.widgets._footer import FooterKey

HELP_ID = "help"
MORE = "…"

# Short descriptions for the compact form, by binding id; the help screen keeps the long.
SHORT = {
    "facts-pin": "Pin",
    "cycle-next": "Next",
    "cycle-repropose": "Again",
    "cycle-run": "To end",
    "cycle-new": "New",
    "cycle-summariser": "LLM",
    "cycle-cancel": "Cancel",
    "journal-revert": "Revert",
    "journal-copy": "Copy id",
    "choose-agent": "Agent",
    "recall-preview": "Recall",
}


@dataclass(frozen=True)
class Key:
    """One binding as the footer shows it."""

    key: str
    display: str
    description: str
    short: str
    action: str
    enabled: bool
    tooltip: str
    app_wide: bool
    is_help: bool

    def label(self, *, short: bool) -> str:
        return self.short if short else self.description

    def cells(self, *, compact: bool, short: bool = False) -> int:
        """Cells a FooterKey takes (the footer's CSS: key padding 0 1 and description
        padding 0 1 0 0 in the full form; no key padding, one space before the
        description and one cell of margin in the compact form)."""
        label = cell_len(self.label(short=short))
        if compact:
            return cell_len(self.display) + 1 + label + 1
        return cell_len(self.display) + 2 + label + 1


@dataclass(frozen=True)
class Layout:
    keys: list[Key]
    help: Key | None
    compact: bool
    short: bool
    palette: bool
    more: bool


PALETTE_CELLS = 13  # "▏ ^p palette " docked right


def plan(keys: list[Key], width: int) -> Layout:
    """Which keys to show, in which form, in `width` cells."""
    help_key = next((k for k in keys if k.is_help), None)
    full = sum(k.cells(compact=False) for k in keys) + PALETTE_CELLS
    if full <= width or help_key is None:
        return Layout(keys, None, compact=False, short=False, palette=True, more=False)
    room = width - help_key.cells(compact=True, short=True) - 1
    pane = [k for k in keys if not k.app_wide]
    others = [k for k in keys if k.app_wide and not k.is_help]
    short = sum(k.cells(compact=True) for k in pane) > room
    chosen: list[Key] = []
    used = 0
    for key in pane:
        cells = key.cells(compact=True, short=short)
        if used + cells > room:
            while chosen and used + cell_len(MORE) + 1 > room:
                used -= chosen.pop().cells(compact=True, short=short)
            return Layout(chosen, help_key, compact=True, short=True, palette=False, more=True)
        chosen.append(key)
        used += cells
    for key in others:
        cells = key.cells(compact=True, short=short)
        if used + cells <= room:
            chosen.append(key)
            used += cells
    return Layout(chosen, help_key, compact=True, short=short, palette=False, more=False)


# Keys docked to the right edge; every other key is one of the footer's reusable places.
_DOCKED = frozenset({"-help", "-command-palette"})


class BarKey(FooterKey):
    """A footer key whose form is set by `set_form`, drawn as Textual draws a FooterKey
    in that form: full (the key padded by a cell each side, a cell after the
    description) or compact (no key padding, a cell before the description, a cell of
    margin after the key; Textual's `Footer.-compact` CSS)."""

    compact = reactive(False)  # never Textual's `-compact` class: the form is `set_form`'s
    compact_form = False

    def set_form(self, *, compact: bool) -> None:
        if compact != self.compact_form:
            self.compact_form = compact
            self.styles.margin = (0, 1 if compact else 0, 0, 0)
            self.refresh(layout=True)

    def render(self) -> Text:
        if not self.compact_form:
            return super().render()
        key_style = self.get_component_rich_style("footer-key--key")
        text = Text.assemble((self.key_display, key_style))
        if self.description:
            description_style = self.get_component_rich_style("footer-key--description")
            text.append(" " + self.description, description_style)
        text.stylize_before(self.rich_style)
        return text


def _write(widget: BarKey, key: Key, *, short: bool, compact: bool) -> None:
    """Make a shown key widget say `key` (what FooterKey's constructor would have set)."""
    widget.set_form(compact=compact)
    widget.key = key.key
    widget.key_display = key.display
    widget.description = key.label(short=short)
    widget.action = key.action
    widget._disabled = not key.enabled
    widget.set_class(not key.enabled, "-disabled")
    widget.tooltip = key.tooltip or None
    widget.display = True
    widget.refresh(layout=True)


class KeyBar(Footer):
    """A Footer that fits its width (see the module docstring)."""

    DEFAULT_CSS = """
    KeyBar FooterKey.-help { dock: right; padding-left: 1; }
    KeyBar .key-bar-more { width: auto; margin: 0 1 0 0; color: $footer-description-foreground; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._laid_out_width = 0
        self._shown: tuple[Layout, bool | None, bool] | None = None

    async def recompose(self) -> None:
        # Textual recomposes the footer whenever bindings change (every focus move, every
        # screen refresh of bindings); most of those leave the keys as they were, and the
        # others change only what the keys say.
        if not (self._bindings_ready and self.is_attached) or self._shown is None:
            await super().recompose()
            return
        signature = self._signature()
        if signature == self._shown:
            return
        if signature[1:] != self._shown[1:]:  # the palette key's binding: rare, rebuilt
            await super().recompose()
            return
        await self._show(signature)

    async def _show(self, signature: tuple[Layout, bool | None, bool]) -> None:
        """Write `signature`'s keys into the widgets there, mounting only what is missing."""
        layout = self._adopt(signature)
        pool = [key for key in self.query_children(BarKey) if not key.classes & _DOCKED]
        for widget, key in zip(pool, layout.keys, strict=False):
            _write(widget, key, short=layout.short, compact=layout.compact)
        for widget in pool[len(layout.keys) :]:
            widget.display = False
        more = self.query_children(".key-bar-more").first(Label)
        more.display = layout.more
        missing = [
            self._footer_key(key, short=layout.short, compact=layout.compact)
            for key in layout.keys[len(pool) :]
        ]
        if missing:
            await self.mount_all(missing, before=more)
        helps = self.query_children(".-help")
        if layout.help is None:
            helps.set(display=False)
        elif helps:
            _write(helps.first(BarKey), layout.help, short=True, compact=True)
        else:
            help_key = self._footer_key(layout.help, short=True, compact=True, classes="-help")
            await self.mount(help_key)
        palettes = self.query_children(".-command-palette")
        if palettes:
            palettes.set(display=layout.palette)
        elif layout.palette:
            await self.mount_all(list(self._palette_key()))

    def _adopt(self, signature: tuple[Layout, bool | None, bool]) -> Layout:
        """Note `signature` as what the footer shows, at this width, in its form."""
        self._shown = signature
        self._laid_out_width = self.app.size.width
        return signature[0]

    def _signature(self) -> tuple[Layout, bool | None, bool]:
        """What compose would show now: the plan, and the palette key's state (enabled,
        disabled, or no such binding) and whether it is wanted."""
        active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        palette = None if active is None else active[2]
        return plan(self.keys(), self.app.size.width), palette, self.show_command_palette

    def keys(self) -> list[Key]:
        """The keys the focused widget, its screen and the app offer, once per action, in
        the order Textual gives them (innermost first)."""
        seen: set[str] = set()
        out: list[Key] = []
        for node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            description = binding.description
            out.append(
                Key(
                    key=binding.key,
                    display=self.app.get_key_display(binding),
                    description=description,
                    short=SHORT.get(binding.id or "", description),
                    action=binding.action,
                    enabled=enabled,
                    tooltip=tooltip or description,
                    app_wide=isinstance(node, App),
                    is_help=binding.id == HELP_ID,
                )
            )
        return out

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        layout = self._adopt(self._signature())
        for key in layout.keys:
            yield self._footer_key(key, short=layout.short, compact=layout.compact)
        more = Label(MORE, classes="key-bar-more")
        more.display = layout.more  # kept hidden: the place before which keys are added
        yield more
        if layout.help is not None:
            yield self._footer_key(layout.help, short=True, compact=True, classes="-help")
        if layout.palette:
            yield from self._palette_key()

    def _footer_key(self, key: Key, *, short: bool, compact: bool, classes: str = "") -> BarKey:
        widget = BarKey(
            key.key,
            key.display,
            key.label(short=short),
            key.action,
            disabled=not key.enabled,
            tooltip=key.tooltip,
            classes=classes,
        )
        widget.set_form(compact=compact)
        return widget

    def _palette_key(self) -> ComposeResult:
        if not (self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE):
            return
        active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if active is None:
            return
        _node, binding, enabled, _tooltip = active
        yield FooterKey(
            binding.key,
            self.app.get_key_display(binding),
            binding.description,
            binding.action,
            classes="-command-palette",
            disabled=not enabled,
            tooltip=binding.tooltip or binding.description,
        )

    def on_resize(self) -> None:
        if self._bindings_ready and self.app.size.width != self._laid_out_width:
            self.call_after_refresh(self.recompose)
