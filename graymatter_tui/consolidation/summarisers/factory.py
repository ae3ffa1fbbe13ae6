"""Choosing the configured summariser (imports httpx only when one is asked for)."""

from __future__ import annotations

from graymatter_tui.config import Settings
from graymatter_tui.consolidation.summarisers.anthropic import AnthropicSummariser
from graymatter_tui.consolidation.summarisers.base import Summariser
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.consolidation.summarisers.ollama import OllamaSummariser


def from_settings(settings: Settings) -> Summariser | None:
    """The configured summariser, or None for decay-and-prune only."""
    if settings.summariser == "ollama":
        return OllamaSummariser(settings.ollama_url, settings.ollama_model, settings.ollama_timeout)
    if settings.summariser == "anthropic":
        return AnthropicSummariser(
            settings.anthropic_api_key,
            settings.anthropic_base_url,
            settings.anthropic_model,
            settings.anthropic_timeout,
        )
    if settings.summariser == "local":
        return LocalSummariser()
    return None
