"""Words for counts shown to people: `counted(1, "fact")` is "1 fact", `counted(2, "fact")`
is "2 facts". Every count the CLI, the TUI and their messages show goes through here, so
none reads "1 facts" or "fact(s)".

The plural adds "s" to the whole phrase ("held change" → "held changes"); give it whole
where that is wrong ("entry", "entries") or where the words after the noun agree with it
("fact was", "facts were")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None, *, at_least: bool = False) -> str:
    """`n` and the noun in the number it takes: singular for exactly one, plural for
    everything else (0 facts, 2 facts). `at_least` marks a count still growing ("3+
    facts", never singular: more may follow)."""
    if n == 1 and not at_least:
        return f"1 {noun}"
    return f"{n}{'+' if at_least else ''} {plural if plural is not None else noun + 's'}"


def counted_pairs(n: int) -> str:
    """ "1 duplicate or possible update", "3 duplicates or possible updates"."""
    return counted(n, "duplicate or possible update", "duplicates or possible updates")
