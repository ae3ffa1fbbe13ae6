"""Each summariser takes its own settings: the Anthropic one its own timeout."""

from __future__ import annotations

import pytest

from graymatter_tui.consolidation.summarisers.anthropic import AnthropicSummariser
from graymatter_tui.consolidation.summarisers.factory import from_settings
from graymatter_tui.consolidation.summarisers.ollama import OllamaSummariser
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import InvalidInput


def test_each_network_summariser_reads_its_own_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_OLLAMA_TIMEOUT", "7")
    monkeypatch.setenv("GRAYMATTER_ANTHROPIC_TIMEOUT", "42")
    settings = Settings.from_env(data_dir="/nonexistent")
    anthropic = from_settings(settings.with_overrides(summariser="anthropic"))
    ollama = from_settings(settings.with_overrides(summariser="ollama"))
    assert isinstance(anthropic, AnthropicSummariser) and anthropic.timeout == 42.0
    assert isinstance(ollama, OllamaSummariser) and ollama.timeout == 7.0


def test_a_bad_anthropic_timeout_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_ANTHROPIC_TIMEOUT", "soon")
    with pytest.raises(InvalidInput, match="GRAYMATTER_ANTHROPIC_TIMEOUT"):
        Settings.from_env(data_dir="/nonexistent")
