"""Embedding settings from the environment, read like the summariser's: blank means
default, a bad value is a clear one-line error (InvalidInput)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum

from graymatter_tui.core.errors import InvalidInput


class EmbedderName(StrEnum):
    OLLAMA = "ollama"
    OPENAI = "openai"
    NONE = "none"


EMBEDDERS: tuple[str, ...] = tuple(name.value for name in EmbedderName)
DEFAULT_MODELS = {
    EmbedderName.OLLAMA: "nomic-embed-text",
    EmbedderName.OPENAI: "text-embedding-3-small",
}
DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OPENAI_URL = "https://api.openai.com"
# A batch of the worker may wait this long; a query's embedding much less (recall must
# not stall on a slow server: it ranks on keyword and recency instead).
DEFAULT_TIMEOUT = 30.0
DEFAULT_QUERY_TIMEOUT = 2.0
DEFAULT_BATCH = 32


def _text(name: str) -> str:
    return os.environ.get(name, "").strip()


def _seconds(name: str, default: float) -> float:
    raw = _text(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number of seconds, got {raw!r}") from None
    if not 0 < value < float("inf"):
        raise InvalidInput(f"{name} must be greater than 0, got {raw}")
    return value


def _count(name: str, default: int) -> int:
    raw = _text(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {raw!r}") from None
    if not 1 <= value <= 2048:
        raise InvalidInput(f"{name} must be between 1 and 2048, got {value}")
    return value


def parse_embedder(text: str) -> EmbedderName:
    try:
        return EmbedderName(text.strip().lower() or "none")
    except ValueError:
        raise InvalidInput(
            f"GRAYMATTER_EMBED: unknown embedder {text.strip()!r}; choose one of "
            f"{', '.join(EMBEDDERS)}"
        ) from None


def ollama_host_url(raw: str) -> str:
    """Ollama's own reading of OLLAMA_HOST: scheme http and port 11434 unless given; a
    bind-everything address means this machine."""
    value = raw.strip().rstrip("/")
    scheme = "http"
    if "://" in value:
        scheme, value = value.split("://", 1)
    host, _, port = value.partition(":")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"{scheme}://{host}:{port or '11434'}"


def _check_url(name: str, url: str) -> str:
    if not url.startswith(("http://", "https://")) or len(url) < 10:
        raise InvalidInput(f"{name} must be an http:// or https:// address, got {url!r}")
    return url.rstrip("/")


@dataclass(frozen=True)
class EmbedSettings:
    embedder: EmbedderName = EmbedderName.NONE
    model: str = ""
    url: str = ""
    api_key: str = field(default="", repr=False)
    timeout: float = DEFAULT_TIMEOUT
    query_timeout: float = DEFAULT_QUERY_TIMEOUT
    batch: int = DEFAULT_BATCH

    @property
    def enabled(self) -> bool:
        return self.embedder is not EmbedderName.NONE

    @classmethod
    def from_env(cls) -> EmbedSettings:
        embedder = parse_embedder(_text("GRAYMATTER_EMBED"))
        if embedder is EmbedderName.NONE:
            return cls()
        url = _text("GRAYMATTER_EMBED_URL")
        if url:
            url = _check_url("GRAYMATTER_EMBED_URL", url)
        elif embedder is EmbedderName.OLLAMA:
            host = _text("OLLAMA_HOST")
            url = ollama_host_url(host) if host else DEFAULT_OLLAMA_URL
        else:
            url = DEFAULT_OPENAI_URL
        return cls(
            embedder=embedder,
            model=_text("GRAYMATTER_EMBED_MODEL") or DEFAULT_MODELS[embedder],
            url=url,
            api_key=_text("OPENAI_API_KEY") if embedder is EmbedderName.OPENAI else "",
            timeout=_seconds("GRAYMATTER_EMBED_TIMEOUT", DEFAULT_TIMEOUT),
            query_timeout=_seconds("GRAYMATTER_EMBED_QUERY_TIMEOUT", DEFAULT_QUERY_TIMEOUT),
            batch=_count("GRAYMATTER_EMBED_BATCH", DEFAULT_BATCH),
        )
