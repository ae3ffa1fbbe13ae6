"""Choosing the configured summariser (imports httpx only when one is asked for)."""

from __future__ import annotations

from typing import assert_never

from graymatter_tui.consolidation.summarisers.anthropic import AnthropicSummariser
from graymatter_tui.consolidation.summarisers.base import Summariser
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.consolidation.summarisers.ollama import OllamaSummariser
from graymatter_tui.core.config import Settings
from graymatter_tui.core.summariser_names import SummariserName


def from_settings(settings: Settings) -> Summariser | None:
    """The configured summariser, or None for decay-and-prune only."""
    name = settings.summariser
    if name is SummariserName.OLLAMA:
        return OllamaSummariser(settings.ollama_url, settings.ollama_model, settings.ollama_timeout)
    if name is SummariserName.ANTHROPIC:
        return AnthropicSummariser(
            settings.anthropic_api_key,
            settings.anthropic_base_url,
            settings.anthropic_model,
            settings.anthropic_timeout,
        )
    if name is SummariserName.LOCAL:
        return LocalSummariser()
    if name is SummariserName.NONE:
        return None
    assert_never(name)  # mypy: a new SummariserName must be built here
