"""Words for counts shown to people."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 fact`, `2 facts` (or the `plural` given for an irregular noun)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
