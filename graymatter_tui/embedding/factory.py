"""The configured embedder (imports httpx only when a server's is asked for, and the
local one builds without loading its model)."""

from __future__ import annotations

from graymatter_tui.embedding.base import Embedder
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings


def from_settings(
    settings: EmbedSettings, *, dimension: int | None = None, model_process: bool = False
) -> Embedder | None:
    """The embedder `settings` name, or None when embeddings are off. `model_process`:
    the local model runs in a process of its own (`model_process`, ADR 0083)."""
    if settings.embedder is EmbedderName.LOCAL:
        from graymatter_tui.embedding import local

        embedder = local.from_settings(settings, dimension=dimension)
        if model_process:
            from graymatter_tui.embedding.model_process import ChildModelEmbedder

            return ChildModelEmbedder(embedder)
        return embedder
    if settings.embedder is EmbedderName.OLLAMA:
        from graymatter_tui.embedding.ollama import OllamaEmbedder

        return OllamaEmbedder(settings.url, settings.model, settings.timeout, dimension=dimension)
    if settings.embedder is EmbedderName.OPENAI:
        from graymatter_tui.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            settings.url, settings.model, settings.timeout, settings.api_key, dimension=dimension
        )
    return None
