"""One table of actions (ADR 0016): the key bindings of the app, of each pane and its
panels, and of each screen of its own are the only list of what a person can do. The
command palette and the help screen are built from them, so a binding added to any of
them is in both without another edit."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Action(Binding):
    """A binding that names itself in the command palette when its short label would not
    say enough out of context ("Next stage" is "Step cycle" there). `tooltip` is the
    palette's help line. A palette-only action has no key (`key=""`) and is never bound."""

    title: str = ""


def described(bindings: Iterable[BindingType]) -> Iterator[Binding]:
    """The bindings a person reads about: those with a description, one per action (the
    first: `q` before the `ctrl+q` that quits from anywhere)."""
    seen: set[str] = set()
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description and binding.action not in seen:
            seen.add(binding.action)
            yield binding


def palette_title(binding: Binding) -> str:
    return binding.title if isinstance(binding, Action) and binding.title else binding.description


def palette_help(binding: Binding) -> str:
    return binding.tooltip or binding.description


def declared(owner: type, name: str) -> list[Any]:
    """What a class of ours declares under `name` (`BINDINGS`, `HELP_KEYS`): its own, else
    its nearest base's below Textual's classes (whose scrolling and editing keys are the
    same everywhere and are not listed)."""
    for klass in owner.__mro__:
        if klass.__module__.split(".")[0] == "textual":
            return []
        if name in vars(klass):
            return list(vars(klass)[name])
    return []


def own_bindings(owner: type) -> list[BindingType]:
    """The bindings a class declares: its actions, for the palette."""
    return declared(owner, "BINDINGS")


def own_keys(owner: type) -> list[BindingType]:
    """Every key a class declares for a person: the keys a child widget handles for it
    (`HELP_KEYS`: enter on a list, tab to a panel), then its bindings."""
    return [*declared(owner, "HELP_KEYS"), *declared(owner, "BINDINGS")]


def help_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(keys, description) of every described binding, in order; bindings that say the
    same (the movement keys of two kinds of list) share one row with all their keys."""
    rows: dict[str, list[str]] = {}
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description:
            keys = rows.setdefault(binding.description, [])
            keys.extend(k for k in key_names(binding.key) if k not in keys)
    return [(" / ".join(keys), description) for description, keys in rows.items()]


KEY_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc"}


def key_names(keys: str) -> list[str]:
    """`question_mark,f1` → `?`, `f1`: keys as the help screen shows them."""
    return [KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(",")]
