"""The configured embedding client (imports httpx only when one is asked for)."""

from __future__ import annotations

from graymatter_tui.embedding.base import Embedder
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings


def from_settings(settings: EmbedSettings, *, dimension: int | None = None) -> Embedder | None:
    """The client `settings` name, or None when embeddings are off."""
    if settings.embedder is EmbedderName.OLLAMA:
        from graymatter_tui.embedding.ollama import OllamaEmbedder

        return OllamaEmbedder(settings.url, settings.model, settings.timeout, dimension=dimension)
    if settings.embedder is EmbedderName.OPENAI:
        from graymatter_tui.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            settings.url, settings.model, settings.timeout, settings.api_key, dimension=dimension
        )
    return None
