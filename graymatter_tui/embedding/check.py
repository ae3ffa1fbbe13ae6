"""`doctor`'s check of the configured embedder, for real: the local model is verified
(sha256), loaded and made to embed a probe sentence; a server is sent the probe. The
vector must have the model's dimension (the store's, when it holds this model's vectors;
384 for the bundled model) and unit length."""

from __future__ import annotations

import time
from dataclasses import dataclass

from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.embedding.base import Embedder

PROBE_TEXT = "graymatter checks that the embedding model answers"


@dataclass(frozen=True)
class EmbedderCheck:
    ok: bool
    detail: str


def check(
    embedder: Embedder, store_model: str | None, store_dimension: int | None
) -> EmbedderCheck:
    """Embed the probe with `embedder`; what went wrong, or what it found."""
    import numpy as np

    from graymatter_tui.embedding.local import LocalEmbedder
    from graymatter_tui.embedding.model_files import BUNDLED_DIMENSION

    try:
        model = embedder.model
        expected = store_dimension if store_model == model else None
        files = embedder.files if isinstance(embedder, LocalEmbedder) else None
        if files is not None and files.bundled:
            expected = expected or BUNDLED_DIMENSION
        started = time.monotonic()
        embedder.dimension = None  # the check says a wrong dimension in its own words
        if isinstance(embedder, LocalEmbedder):
            embedder.runtime()  # verify and load, timed apart from the probe
        loaded = time.monotonic() - started
        started = time.monotonic()
        vector = embedder.embed([PROBE_TEXT])[0]
        took = time.monotonic() - started
    except GraymatterError as exc:
        return EmbedderCheck(False, str(exc))
    dimension = int(vector.shape[0])
    if expected is not None and dimension != expected:
        return EmbedderCheck(
            False,
            f"{model} made a vector of dimension {dimension}, not {expected}"
            + (" (the store's)" if store_model == model else ""),
        )
    norm = float(np.linalg.norm(vector.astype(np.float64)))
    if not abs(norm - 1.0) < 1e-3:
        return EmbedderCheck(False, f"{model} made a vector of length {norm:.4f}, not 1")
    if isinstance(embedder, LocalEmbedder) and embedder.files is not None:
        pin = embedder.files.model_sha256
        verified = f"sha256 {pin[:12]}… verified" if pin else "sha256 not pinned"
        return EmbedderCheck(
            True,
            f"{model}: loaded in {loaded:.2f} s ({verified}), {dimension} dims, the probe "
            f"embedded in {took * 1000:.0f} ms",
        )
    return EmbedderCheck(
        True, f"{model} ({embedder.where}): {dimension} dims, answered in {took * 1000:.0f} ms"
    )
