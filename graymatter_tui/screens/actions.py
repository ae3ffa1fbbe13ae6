"""One table of actions (ADR 0016): the key bindings of the app and of each pane are the
only list of what a person can do. The command palette and the help screen are built from
them, so a binding added to a pane is in both without another edit."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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


def help_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(keys, description) of every described binding, in order."""
    return [
        (key_label(b.key), b.description)
        for b in bindings
        if isinstance(b, Binding) and b.description
    ]


def key_label(keys: str) -> str:
    """`question_mark,f1` → `? / f1`: keys as the help screen shows them."""
    names = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter"}
    return " / ".join(names.get(k.strip(), k.strip()) for k in keys.split(","))
