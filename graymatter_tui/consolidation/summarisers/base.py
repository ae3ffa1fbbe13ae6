"""The one small protocol every summariser implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from graymatter_tui.core.model import BatchItem

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
JOURNAL_RESPONSE_CAP = 64 * 1024


@dataclass(frozen=True)
class Reply:
    """A summariser's answer, or why there is none.

    `error`: the call failed (unreachable, HTTP error): the cycle's outcome is `failed`.
    `invalid`: an answer arrived but is unusable as it stands (truncated, bad envelope):
    the outcome is `discarded`. `nothing`: the summariser chose to propose nothing.
    """

    raw: str = ""
    structured: bool = True
    error: str = ""
    invalid: str = ""
    nothing: str = ""
    attempts: int = 0
    prompt_sha256: str = ""
    model: str = ""


@dataclass(frozen=True)
class Reachability:
    ok: bool
    detail: str


class Summariser(Protocol):
    name: str
    model: str

    async def propose(self, batch: list[BatchItem]) -> Reply: ...

    async def check(self) -> Reachability: ...


@dataclass(frozen=True)
class BatchMeaning:
    """How close in meaning batch facts are, from the vectors the store already holds (no
    model runs at cycle time): the cosine of each pair of facts that both hold a vector
    of `model`, keyed by the two ids in sorted order. A fact without a vector is in no
    pair."""

    model: str = ""
    pairs: dict[tuple[str, str], float] = field(default_factory=dict)

    def cosine(self, a: str, b: str) -> float | None:
        return self.pairs.get((a, b) if a <= b else (b, a))


@runtime_checkable
class ReadsMeaning(Protocol):
    """A summariser that can use `BatchMeaning`: the cycle reads the batch's stored vectors
    for it and calls `propose_with_meaning` instead of `propose`."""

    async def propose_with_meaning(
        self, batch: list[BatchItem], meaning: BatchMeaning | None
    ) -> Reply: ...


def redact(message: str, *secrets: str) -> str:
    """Remove secrets (API keys) from anything that may be shown, logged or journaled."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "[redacted]")
    return message
