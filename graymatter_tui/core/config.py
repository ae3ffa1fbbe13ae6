"""Settings: command-line flags > environment > defaults."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.store_url import StoreUrl, lmdb_url, parse_store_url
from graymatter_tui.core.summariser_names import SUMMARISERS, SummariserName, parse_summariser

__all__ = ["GUARD_MODES", "SUMMARISERS", "Settings", "SummariserName"]

APP_NAME = "graymatter-tui"
# The demo's store: a sibling of the default data dir, never inside a store (ADR 0011).
DEMO_APP_NAME = "graymatter-tui-demo"
GUARD_MODES = ("off", "keys", "strict")

# Every default is written here once: Settings, its environment reading and the cycle's
# own options (consolidation.cycle.CycleOptions) all read these.
DEFAULT_THRESHOLD = 20
DEFAULT_MAX_BATCH = 32
DEFAULT_HALF_LIFE_HOURS = 720.0
DEFAULT_GUARD = "keys"
DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "llama3.2"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5-20251001"
DEFAULT_TIMEOUT = 120.0

_N = TypeVar("_N", int, float)


def default_data_dir() -> Path:
    # platformdirs (and the tempfile, shutil and random it loads) only when asked: a
    # process told its --dir, as every hook is, never needs it.
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_demo_dir() -> Path:
    """Where `--demo` keeps its store; GRAYMATTER_DIR does not move it."""
    import platformdirs

    return Path(platformdirs.user_data_dir(DEMO_APP_NAME, appauthor=False))


def _env_text(name: str, default: str) -> str:
    return os.environ.get(name, "").strip() or default


def _env_number(name: str, parse: Callable[[str], _N], kind: str) -> tuple[str, _N] | None:
    """Environment variable `name` as (its text, its number); None when unset or blank."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return raw, parse(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be {kind}, got {raw!r}") from None


def _env_int(name: str, default: int, *, minimum: int = 0) -> int:
    found = _env_number(name, int, "a whole number")
    if found is None:
        return default
    value = found[1]
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {value}")
    return value


def _env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    found = _env_number(name, float, "a number")
    if found is None:
        return default
    raw, value = found
    if not value > minimum:
        raise InvalidInput(f"{name} must be greater than {minimum}, got {raw}")
    return value


def _default_summariser() -> SummariserName:
    chosen = os.environ.get("GRAYMATTER_CONSOLIDATE_LLM", "").strip()
    if chosen:
        return parse_summariser(chosen)
    has_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
    return SummariserName.ANTHROPIC if has_key else SummariserName.NONE


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    summariser: SummariserName = SummariserName.NONE
    threshold: int = DEFAULT_THRESHOLD
    max_batch: int = DEFAULT_MAX_BATCH
    half_life_hours: float = DEFAULT_HALF_LIFE_HOURS
    guard: str = DEFAULT_GUARD
    ollama_url: str = DEFAULT_OLLAMA_URL
    ollama_model: str = DEFAULT_OLLAMA_MODEL
    ollama_timeout: float = DEFAULT_TIMEOUT
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = DEFAULT_ANTHROPIC_BASE_URL
    anthropic_model: str = DEFAULT_ANTHROPIC_MODEL
    anthropic_timeout: float = DEFAULT_TIMEOUT
    # The store named by --store or GRAYMATTER_STORE; None means the LMDB store in data_dir.
    store: StoreUrl | None = None

    def __post_init__(self) -> None:
        # Flags, the environment and the TUI's chooser hand over plain text: one check here.
        object.__setattr__(self, "summariser", parse_summariser(self.summariser))

    @property
    def location(self) -> StoreUrl:
        """The store to open: --store, else --dir, else GRAYMATTER_STORE, else
        GRAYMATTER_DIR, else the user data dir (flags before the environment)."""
        return self.store or lmdb_url(self.data_dir)

    @classmethod
    def from_env(cls, *, data_dir: str | Path | None = None, store: str | None = None) -> Settings:
        chosen = _choose_store(data_dir, store)
        if chosen is not None and chosen.path is not None:
            data_dir, chosen = chosen.path, None  # an LMDB store is its directory
        if data_dir is None:
            env_dir = os.environ.get("GRAYMATTER_DIR", "").strip()
            data_dir = Path(env_dir) if env_dir else default_data_dir()
        settings = cls(
            store=chosen,
            data_dir=Path(data_dir).expanduser(),
            summariser=_default_summariser(),
            threshold=_env_int("GRAYMATTER_CONSOLIDATE_THRESHOLD", DEFAULT_THRESHOLD),
            max_batch=_env_int("GRAYMATTER_MAX_BATCH", DEFAULT_MAX_BATCH, minimum=1),
            half_life_hours=_env_float("GRAYMATTER_HALF_LIFE_HOURS", DEFAULT_HALF_LIFE_HOURS),
            guard=_env_text("GRAYMATTER_CONSOLIDATE_GUARD", DEFAULT_GUARD).lower(),
            ollama_url=_env_text("GRAYMATTER_OLLAMA_URL", DEFAULT_OLLAMA_URL).rstrip("/"),
            ollama_model=_env_text("GRAYMATTER_OLLAMA_CONSOLIDATE_MODEL", DEFAULT_OLLAMA_MODEL),
            ollama_timeout=_env_float("GRAYMATTER_OLLAMA_TIMEOUT", DEFAULT_TIMEOUT),
            anthropic_api_key=os.environ.get("ANTHROPIC_API_KEY", "").strip(),
            anthropic_base_url=_env_text("ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_BASE_URL).rstrip(
                "/"
            ),
            anthropic_model=_env_text("GRAYMATTER_CONSOLIDATE_MODEL", DEFAULT_ANTHROPIC_MODEL),
            anthropic_timeout=_env_float("GRAYMATTER_ANTHROPIC_TIMEOUT", DEFAULT_TIMEOUT),
        )
        settings.check()
        return settings

    def check(self) -> None:
        if self.guard not in GUARD_MODES:
            raise InvalidInput(
                f"unknown guard mode {self.guard!r}; choose one of {', '.join(GUARD_MODES)}"
            )

    def with_overrides(self, **changes: object) -> Settings:
        updated = replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]
        updated.check()
        return updated


def _choose_store(data_dir: str | Path | None, store: str | None) -> StoreUrl | None:
    """The store a flag or GRAYMATTER_STORE names; None leaves it to the data dir."""
    if store is not None:
        if data_dir is not None:
            raise InvalidInput("give --store or --dir, not both")
        return parse_store_url(store)
    if data_dir is not None:
        return None
    from_env = os.environ.get("GRAYMATTER_STORE", "")
    if from_env.strip():
        try:
            return parse_store_url(from_env.strip())
        except InvalidInput as exc:
            raise InvalidInput(f"GRAYMATTER_STORE: {exc}") from None
    return None
