"""How long the kill loops and soaks run: short by default, the full figures with
GRAYMATTER_SOAK=1, or a number of rounds of one's own with GRAYMATTER_SOAK=N (N > 1).

A short run still kills, restarts and checks every invariant after every round; the soak
sizes only make a rare interleaving likelier to be met. Read once, at import: fixtures
such as `clean_graymatter_env` take GRAYMATTER_* out of the environment during a test."""

from __future__ import annotations

import os

_SETTING = os.environ.get("GRAYMATTER_SOAK", "").strip()


def _setting() -> str:
    return _SETTING


def soaking() -> bool:
    """Whether this run asked for the soak (GRAYMATTER_SOAK=1 or a number above 1)."""
    return rounds(0, 1) != 0


def rounds(short: int, full: int) -> int:
    """`short` by default, `full` with GRAYMATTER_SOAK=1, N with GRAYMATTER_SOAK=N."""
    raw = _setting()
    if not raw or raw == "0":
        return short
    if raw == "1":
        return full
    try:
        chosen = int(raw)
    except ValueError:
        raise ValueError(f"GRAYMATTER_SOAK must be 1 or a number of rounds, got {raw!r}") from None
    if chosen < 1:
        raise ValueError(f"GRAYMATTER_SOAK must be 1 or a number of rounds, got {raw!r}")
    return chosen


def seconds(short: float, full: float) -> float:
    """A soak's duration: `short` by default, `full` with any GRAYMATTER_SOAK."""
    return full if soaking() else short
