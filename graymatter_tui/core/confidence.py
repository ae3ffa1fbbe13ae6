"""A fact's confidence: how sure its writer was (upstream GrayMatter's labels, ADR-016).

Three levels, lowest first: `unverified` (heard, not checked), `inferred` (reasoned
from what is known), `verified` (checked). A label is the writer's declaration; nothing
here checks it. A fact without one (every fact written before labels, and every fact
written without one) is *unknown*: it is never shown or stored as a level.

How unknown ranks (recall's `min_confidence` and `confidence_weight`):
- `min_confidence`: nothing vouches for an unknown fact, so it is left out at
  `inferred` and `verified`; `unverified`, the floor, admits every fact, unknown too.
- the weight: recall's fused score B becomes `B · (1 + w·c)` with c = +1 verified,
  0 inferred, −1 unverified, and 0 for unknown: the weight moves only facts someone
  labelled, so turning it on over a store of unlabelled facts changes nothing.
- a revision or a summary without a label of its own takes the lowest confidence among
  the facts it replaces; unknown counts as lower than every level there (a summary of a
  verified fact and an unknown one is unknown, not verified).

A stored label outside the three (an upstream store may hold anything) counts as
unknown. With w = 0 (the default) and no `min_confidence`, recall is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal, get_args

from graymatter_tui.core.errors import InvalidInput

Confidence = Literal["unverified", "inferred", "verified"]
CONFIDENCES: tuple[Confidence, ...] = get_args(Confidence)  # lowest first
# How it reads, highest first, in messages and help.
CHOICES_TEXT = "verified, inferred or unverified"
UNKNOWN = "unknown"  # how a fact without a (known) label is shown
MAX_WEIGHT = 0.5

_SIGNAL: dict[str, float] = {"verified": 1.0, "inferred": 0.0, "unverified": -1.0}


class ConfidenceError(InvalidInput):
    """A confidence, minimum or weight that is not one; its message names the argument."""


def parse_confidence(raw: str, name: str = "confidence") -> Confidence:
    """`raw` as a level, else ConfidenceError naming `name` and the choices."""
    if raw in CONFIDENCES:
        return raw
    raise ConfidenceError(f"{name} must be {CHOICES_TEXT}, got {raw!r}")


def check_weight(value: float, name: str = "confidence_weight") -> float:
    """A confidence weight: a finite number from 0 to 0.5."""
    if not math.isfinite(value) or not 0.0 <= value <= MAX_WEIGHT:
        raise ConfidenceError(f"{name} must be a number from 0 to {MAX_WEIGHT}, got {value:g}")
    return float(value)


def parse_weight(raw: str, name: str = "confidence_weight") -> float:
    """A confidence weight written as text (a flag's value)."""
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfidenceError(
            f"{name} must be a number from 0 to {MAX_WEIGHT}, got {raw!r}"
        ) from None
    return check_weight(value, name)


def known(label: str | None) -> Confidence | None:
    """The level `label` names, or None for a missing or unrecognised one."""
    return label if label in CONFIDENCES else None


def shown(label: str | None) -> str:
    """The label as people read it: the level, or `unknown`."""
    return known(label) or UNKNOWN


def admits(label: str | None, minimum: Confidence | None) -> bool:
    """Whether a fact labelled `label` passes `min_confidence` = `minimum`."""
    if minimum is None or minimum == "unverified":
        return True
    level = known(label)
    return level is not None and CONFIDENCES.index(level) >= CONFIDENCES.index(minimum)


def signal(label: str | None) -> float:
    """c in `1 + w·c`: +1 verified, 0 inferred, −1 unverified, 0 unknown."""
    level = known(label)
    return 0.0 if level is None else _SIGNAL[level]


def factor(label: str | None, weight: float) -> float:
    """What recall multiplies a fact's fused score by: `1 + weight·c`."""
    return 1.0 + weight * signal(label)


def lowest(labels: Iterable[str | None]) -> Confidence | None:
    """The lowest confidence among `labels`; None (unknown) when any is unknown or there
    are none."""
    found = [known(label) for label in labels]
    if not found or any(level is None for level in found):
        return None
    return min(found, key=lambda level: CONFIDENCES.index(level))
