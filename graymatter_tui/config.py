"""Settings: command-line flags > environment > defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

from graymatter_tui.errors import InvalidInput

APP_NAME = "graymatter-tui"
# The demo's store: a sibling of the default data dir, never inside a store (ADR 0011).
DEMO_APP_NAME = "graymatter-tui-demo"
SUMMARISERS = ("ollama", "anthropic", "local", "none")
GUARD_MODES = ("off", "keys", "strict")


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_demo_dir() -> Path:
    """Where `--demo` keeps its store; GRAYMATTER_DIR does not move it."""
    return Path(platformdirs.user_data_dir(DEMO_APP_NAME, appauthor=False))


def _env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {value}")
    return value


def _env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, got {raw!r}") from None
    if not value > minimum:
        raise InvalidInput(f"{name} must be greater than {minimum}, got {raw}")
    return value


def _default_summariser() -> str:
    chosen = os.environ.get("GRAYMATTER_CONSOLIDATE_LLM", "").strip().lower()
    if chosen:
        return chosen
    return "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "none"


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    summariser: str = "none"
    threshold: int = 20
    max_batch: int = 32
    half_life_hours: float = 720.0
    guard: str = "keys"
    ollama_url: str = "http://localhost:11434"
    ollama_model: str = "llama3.2"
    ollama_timeout: float = 120.0
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = "https://api.anthropic.com"
    anthropic_model: str = "claude-haiku-4-5-20251001"
    anthropic_timeout: float = 120.0

    @classmethod
    def from_env(cls, *, data_dir: str | Path | None = None) -> Settings:
        if data_dir is None:
            env_dir = os.environ.get("GRAYMATTER_DIR", "").strip()
            data_dir = Path(env_dir) if env_dir else default_data_dir()
        settings = cls(
            data_dir=Path(data_dir).expanduser(),
            summariser=_default_summariser(),
            threshold=_env_int("GRAYMATTER_CONSOLIDATE_THRESHOLD", 20),
            max_batch=_env_int("GRAYMATTER_MAX_BATCH", 32, minimum=1),
            half_life_hours=_env_float("GRAYMATTER_HALF_LIFE_HOURS", 720.0),
            guard=os.environ.get("GRAYMATTER_CONSOLIDATE_GUARD", "keys").strip().lower() or "keys",
            ollama_url=(
                os.environ.get("GRAYMATTER_OLLAMA_URL", "").strip() or "http://localhost:11434"
            ).rstrip("/"),
            ollama_model=os.environ.get("GRAYMATTER_OLLAMA_CONSOLIDATE_MODEL", "").strip()
            or "llama3.2",
            ollama_timeout=_env_float("GRAYMATTER_OLLAMA_TIMEOUT", 120.0),
            anthropic_api_key=os.environ.get("ANTHROPIC_API_KEY", "").strip(),
            anthropic_base_url=(
                os.environ.get("ANTHROPIC_BASE_URL", "").strip() or "https://api.anthropic.com"
            ).rstrip("/"),
            anthropic_model=os.environ.get("GRAYMATTER_CONSOLIDATE_MODEL", "").strip()
            or "claude-haiku-4-5-20251001",
            anthropic_timeout=_env_float("GRAYMATTER_ANTHROPIC_TIMEOUT", 120.0),
        )
        settings.check()
        return settings

    def check(self) -> None:
        if self.summariser not in SUMMARISERS:
            raise InvalidInput(
                f"unknown summariser {self.summariser!r}; choose one of {', '.join(SUMMARISERS)}"
            )
        if self.guard not in GUARD_MODES:
            raise InvalidInput(
                f"unknown guard mode {self.guard!r}; choose one of {', '.join(GUARD_MODES)}"
            )

    def with_overrides(self, **changes: object) -> Settings:
        updated = replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]
        updated.check()
        return updated
