"""Embedding settings from the environment: defaults, and a clear error for a bad value."""

from __future__ import annotations

import pytest

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings

VARIABLES = (
    "GRAYMATTER_EMBED",
    "GRAYMATTER_EMBED_MODEL",
    "GRAYMATTER_EMBED_URL",
    "GRAYMATTER_EMBED_TIMEOUT",
    "GRAYMATTER_EMBED_BATCH",
    "OLLAMA_HOST",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_off_by_default() -> None:
    assert not EmbedSettings.from_env().enabled


def test_ollama_defaults_and_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_EMBED", " Ollama ")
    settings = EmbedSettings.from_env()
    assert settings.embedder is EmbedderName.OLLAMA
    assert (settings.model, settings.url) == ("nomic-embed-text", "http://localhost:11434")
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:9999")
    assert EmbedSettings.from_env().url == "http://127.0.0.1:9999"
    monkeypatch.setenv("GRAYMATTER_EMBED_URL", "http://gpu-box:11434/")
    assert EmbedSettings.from_env().url == "http://gpu-box:11434"


def test_openai_reads_its_key_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_EMBED", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    settings = EmbedSettings.from_env()
    assert (settings.model, settings.url, settings.api_key) == (
        "text-embedding-3-small",
        "https://api.openai.com",
        "sk-1",
    )
    assert "sk-1" not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("GRAYMATTER_EMBED", "voyage", "unknown embedder 'voyage'; choose one of"),
        ("GRAYMATTER_EMBED_URL", "gpu-box:11434", "must be an http:// or https:// address"),
        ("GRAYMATTER_EMBED_TIMEOUT", "soon", "must be a number of seconds"),
        ("GRAYMATTER_EMBED_TIMEOUT", "-1", "must be greater than 0"),
        ("GRAYMATTER_EMBED_BATCH", "0", "must be between 1 and 2048"),
    ],
)
def test_a_bad_value_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, said: str
) -> None:
    monkeypatch.setenv("GRAYMATTER_EMBED", "ollama")
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput, match=said):
        EmbedSettings.from_env()
