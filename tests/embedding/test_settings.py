"""Embedding settings from the environment: defaults, and a clear error for a bad value."""

from __future__ import annotations

import os

import pytest

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.embedding import settings as settings_module
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings

VARIABLES = (
    "GRAYMATTER_EMBED",
    "GRAYMATTER_EMBED_MODEL",
    "GRAYMATTER_EMBED_URL",
    "GRAYMATTER_EMBED_TIMEOUT",
    "GRAYMATTER_EMBED_BATCH",
    "GRAYMATTER_EMBED_THREADS",
    "GRAYMATTER_EMBED_MODEL_PATH",
    "GRAYMATTER_EMBED_MODEL_SHA256",
    "OLLAMA_HOST",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_the_local_model_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # Unset and blank both mean the embedded model, one thread, no model of the user's.
    for value in (None, "", "  "):
        if value is not None:
            monkeypatch.setenv("GRAYMATTER_EMBED", value)
        settings = EmbedSettings.from_env()
        assert settings.enabled and settings.embedder is EmbedderName.LOCAL
        assert (settings.model, settings.model_path, settings.threads) == (
            "minilm-l6-v2-int8",
            "",
            1,
        )


def test_none_turns_embeddings_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_EMBED", "None")
    assert not EmbedSettings.from_env().enabled


def test_local_threads_and_a_model_of_ones_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_EMBED", "local")
    monkeypatch.setenv("GRAYMATTER_EMBED_THREADS", "2")
    monkeypatch.setenv("GRAYMATTER_EMBED_MODEL_PATH", "/models/e5")
    monkeypatch.setenv("GRAYMATTER_EMBED_MODEL_SHA256", "AB" * 32)
    monkeypatch.setenv("GRAYMATTER_EMBED_MODEL", "e5-small")
    settings = EmbedSettings.from_env()
    assert (settings.threads, settings.model_path, settings.model_sha256, settings.model) == (
        2,
        "/models/e5",
        "ab" * 32,
        "e5-small",
    )


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("GRAYMATTER_EMBED_THREADS", "0", "GRAYMATTER_EMBED_THREADS must be between 1 and 64"),
        ("GRAYMATTER_EMBED_THREADS", "two", "must be a whole number"),
        ("GRAYMATTER_EMBED_MODEL_SHA256", "8199be6f", "must be 64 hexadecimal digits"),
        # A server's model name left over, with no model directory: it would do nothing.
        ("GRAYMATTER_EMBED_MODEL", "nomic-embed-text", "the local embedder runs its own model"),
    ],
)
def test_a_bad_local_setting_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, said: str
) -> None:
    if name == "GRAYMATTER_EMBED_MODEL_SHA256":
        monkeypatch.setenv("GRAYMATTER_EMBED_MODEL_PATH", "/models/e5")
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput, match=said):
        EmbedSettings.from_env()


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


def test_a_query_server_runs_the_model_on_two_threads_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`graymatter-tui mcp` calls `answer_queries()` (ADR 0075): two threads by default,
    at most one per core; GRAYMATTER_EMBED_THREADS still decides when set."""
    monkeypatch.setattr(settings_module, "_default_threads", settings_module.DEFAULT_THREADS)
    monkeypatch.setenv("GRAYMATTER_EMBED", "local")
    assert EmbedSettings.from_env().threads == 1
    settings_module.answer_queries()
    cores = len(os.sched_getaffinity(0))
    assert EmbedSettings.from_env().threads == min(2, cores)
    monkeypatch.setenv("GRAYMATTER_EMBED_THREADS", "1")
    assert EmbedSettings.from_env().threads == 1
