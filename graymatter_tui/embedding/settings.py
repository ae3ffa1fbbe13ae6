"""Embedding settings from the environment, read like the summariser's: blank means
default, a bad value is a clear one-line error (InvalidInput)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum

from graymatter_tui.core.errors import InvalidInput


class EmbedderName(StrEnum):
    LOCAL = "local"  # the default: the embedded model, in this process (ADR 0058)
    OLLAMA = "ollama"
    OPENAI = "openai"
    NONE = "none"


EMBEDDERS: tuple[str, ...] = tuple(name.value for name in EmbedderName)
DEFAULT_EMBEDDER = EmbedderName.LOCAL
DEFAULT_MODELS = {
    EmbedderName.LOCAL: "minilm-l6-v2-int8",
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
# The local model's intra-op threads: 1 leaves the other core to the TUI, the MCP server
# or the agent; 2 was slower on a loaded two-core machine (benchmarks/README.md).
DEFAULT_THREADS = 1
MAX_THREADS = 64
# A process that answers queries (the MCP server) runs the model on two threads unless
# told otherwise: a query's embedding 5.9 -> 4.3 ms, which puts hybrid recall at 100k
# within its goal, at the cost of its background worker's throughput (92 -> 55 short
# facts/s; ADR 0075). The TUI and the CLI keep one.
QUERY_THREADS = 2
_default_threads = DEFAULT_THREADS


def answer_queries() -> None:
    """Make this process's default for GRAYMATTER_EMBED_THREADS the query server's
    (`QUERY_THREADS`, at most one per core it may run on); a setting still wins."""
    global _default_threads
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on every platform
        cores = os.cpu_count() or 1
    _default_threads = max(1, min(QUERY_THREADS, cores))


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


def _count(name: str, default: int, most: int = 2048) -> int:
    raw = _text(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {raw!r}") from None
    if not 1 <= value <= most:
        raise InvalidInput(f"{name} must be between 1 and {most}, got {value}")
    return value


def _sha256(name: str) -> str:
    raw = _text(name).lower()
    if raw and (len(raw) != 64 or any(c not in "0123456789abcdef" for c in raw)):
        raise InvalidInput(f"{name} must be 64 hexadecimal digits (a sha256), got {raw[:80]!r}")
    return raw


def parse_embedder(text: str) -> EmbedderName:
    """The embedder a GRAYMATTER_EMBED value names; blank means the default (local)."""
    try:
        return EmbedderName(text.strip().lower() or DEFAULT_EMBEDDER)
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
    """What GRAYMATTER_EMBED* configure. The default (nothing set) is the local model;
    `EmbedSettings()` itself is "off", what GRAYMATTER_EMBED=none gives."""

    embedder: EmbedderName = EmbedderName.NONE
    model: str = ""  # a server's model name; for local, a label (the stored name: local.py)
    url: str = ""
    api_key: str = field(default="", repr=False)
    timeout: float = DEFAULT_TIMEOUT
    query_timeout: float = DEFAULT_QUERY_TIMEOUT
    batch: int = DEFAULT_BATCH
    # local only: a model of the user's own (a directory with model.onnx and
    # tokenizer.json) and the sha256 its model.onnx must have; the threads it runs on.
    model_path: str = ""
    model_sha256: str = ""
    threads: int = DEFAULT_THREADS

    @property
    def enabled(self) -> bool:
        return self.embedder is not EmbedderName.NONE

    @classmethod
    def from_env(cls, embedder_name: str | None = None) -> EmbedSettings:
        """The environment's settings; `embedder_name` (doctor --embed) in place of
        GRAYMATTER_EMBED, the rest still read from the environment."""
        chosen = _text("GRAYMATTER_EMBED") if embedder_name is None else embedder_name
        embedder = parse_embedder(chosen)
        if embedder is EmbedderName.NONE:
            return cls()
        if embedder is EmbedderName.LOCAL:
            return cls._local()
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

    @classmethod
    def _local(cls) -> EmbedSettings:
        path = _text("GRAYMATTER_EMBED_MODEL_PATH")
        sha = _sha256("GRAYMATTER_EMBED_MODEL_SHA256")
        label = _text("GRAYMATTER_EMBED_MODEL")
        if not path and (label or sha):
            # A server's model name left over from GRAYMATTER_EMBED=ollama, or a hash
            # for a file that is not named: either would silently do nothing.
            given = "GRAYMATTER_EMBED_MODEL" if label else "GRAYMATTER_EMBED_MODEL_SHA256"
            raise InvalidInput(
                f"{given} is set, but the local embedder runs its own model: name a model "
                "directory with GRAYMATTER_EMBED_MODEL_PATH, or unset it"
            )
        return cls(
            embedder=EmbedderName.LOCAL,
            model=label or DEFAULT_MODELS[EmbedderName.LOCAL],
            timeout=_seconds("GRAYMATTER_EMBED_TIMEOUT", DEFAULT_TIMEOUT),
            query_timeout=_seconds("GRAYMATTER_EMBED_QUERY_TIMEOUT", DEFAULT_QUERY_TIMEOUT),
            batch=_count("GRAYMATTER_EMBED_BATCH", DEFAULT_BATCH),
            model_path=path,
            model_sha256=sha,
            threads=_count("GRAYMATTER_EMBED_THREADS", _default_threads, MAX_THREADS),
        )
