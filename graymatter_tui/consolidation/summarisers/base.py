"""The one small protocol every summariser implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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


def redact(message: str, *secrets: str) -> str:
    """Remove secrets (API keys) from anything that may be shown, logged or journaled."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "[redacted]")
    return message
