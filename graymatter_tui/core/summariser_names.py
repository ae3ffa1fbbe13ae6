"""The summarisers a user can name: one closed set, and what each name means.

The command line's `--llm` choices, the settings check, the TUI's chooser, the journal's
latency column and the import's record check all read this, so a summariser is added here
(and built in `consolidation.summarisers.factory`) and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from graymatter_tui.core.errors import InvalidInput


class SummariserName(StrEnum):
    OLLAMA = "ollama"
    ANTHROPIC = "anthropic"
    LOCAL = "local"
    NONE = "none"


@dataclass(frozen=True)
class SummariserKind:
    label: str  # one line for the TUI's chooser
    networked: bool  # calls a model over HTTP, so its latency is worth showing


KINDS: dict[SummariserName, SummariserKind] = {
    SummariserName.OLLAMA: SummariserKind("local model over HTTP", networked=True),
    SummariserName.ANTHROPIC: SummariserKind("Messages API", networked=True),
    SummariserName.LOCAL: SummariserKind("offline near-duplicate merge", networked=False),
    SummariserName.NONE: SummariserKind("decay and prune only", networked=False),
}
SUMMARISERS: tuple[str, ...] = tuple(name.value for name in SummariserName)
NETWORKED: frozenset[str] = frozenset(name.value for name, kind in KINDS.items() if kind.networked)


def parse_summariser(text: str) -> SummariserName:
    """The summariser `text` names (any case, surrounding spaces ignored), or a clear error."""
    try:
        return SummariserName(text.strip().lower())
    except ValueError:
        raise InvalidInput(
            f"unknown summariser {text!r}; choose one of {', '.join(SUMMARISERS)}"
        ) from None
