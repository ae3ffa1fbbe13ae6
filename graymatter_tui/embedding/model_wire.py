"""What the model process (`model_child`) and its parent (`model_process`) say to each
other: a request is one JSON line; an answer is one JSON line (ASCII, so a text's own
line breaks and odd characters travel escaped) and, for vectors, the rows' float32
bytes right after it, little-endian, row after row. Both ends check what they read:
the parent takes nothing malformed for an answer (ADR 0083)."""

from __future__ import annotations

import json
import os
import select
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graymatter_tui.embedding.base import Matrix

MAX_HEADER_BYTES = 64 * 1024 * 1024  # a 64 KiB fact's 64 windows are far less
MAX_PAYLOAD_BYTES = 256 * 1024 * 1024  # a batch of 4,096 texts at 4,096 dimensions
CHUNK = 1 << 16


class WireError(Exception):
    """The other end ended, said something malformed, or did not answer in time."""


def header_line(header: dict[str, Any]) -> bytes:
    return json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def error_answer(ident: int | None, message: str) -> bytes:
    return header_line({"id": ident, "error": message})


def vectors_answer(ident: int, matrix: Matrix) -> bytes:
    import numpy as np

    rows = np.ascontiguousarray(matrix, dtype="<f4")
    if rows.ndim != 2:
        return error_answer(ident, f"the model made an output of shape {rows.shape}")
    head = {"id": ident, "rows": int(rows.shape[0]), "dim": int(rows.shape[1])}
    return header_line(head) + rows.tobytes()


def vectors_of(header: dict[str, Any], payload: bytes | bytearray, count: int) -> Matrix:
    """The matrix an answer's header and bytes hold, for `count` texts; WireError when
    they do not make one of finite numbers."""
    import numpy as np

    rows, dim = header.get("rows"), header.get("dim")
    if not isinstance(rows, int) or not isinstance(dim, int) or rows != count or dim <= 0:
        raise WireError(f"{rows!r} rows of {dim!r} for {count} text" + ("s" if count > 1 else ""))
    if len(payload) != rows * dim * 4:
        raise WireError(f"{len(payload)} bytes of vectors for {rows} rows of {dim}")
    matrix: Matrix = np.frombuffer(bytearray(payload), dtype="<f4").reshape(rows, dim)
    matrix = matrix.astype(np.float32, copy=False)
    if not np.isfinite(matrix).all():
        raise WireError("vectors with NaN or infinite components")
    return matrix


def payload_size(header: dict[str, Any]) -> int:
    """How many bytes follow an answer's header line (the vectors'); WireError when its
    counts cannot be."""
    if "rows" not in header:
        return 0
    rows, dim = header.get("rows"), header.get("dim")
    if not isinstance(rows, int) or not isinstance(dim, int) or rows < 0 or dim <= 0:
        raise WireError(f"an answer of {rows!r} rows of {dim!r}")
    if rows * dim * 4 > MAX_PAYLOAD_BYTES:
        raise WireError(f"an answer of {rows} rows of {dim}: more than any request asks for")
    return rows * dim * 4


class Reader:
    """Reads answers from a descriptor, each wait bounded by a deadline."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        self.buffer = bytearray()

    def _more(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.descriptor], [], [], left)[0]:
            raise WireError("no answer in time")
        chunk = os.read(self.descriptor, CHUNK)
        if not chunk:
            raise WireError("it ended")
        self.buffer += chunk

    def header(self, deadline: float) -> dict[str, Any]:
        """The next answer's header line, parsed."""
        searched = 0
        while (end := self.buffer.find(b"\n", searched)) < 0:
            searched = len(self.buffer)
            if searched > MAX_HEADER_BYTES:
                raise WireError("an answer line longer than any answer")
            self._more(deadline)
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        try:
            header = json.loads(line)
        except ValueError:
            raise WireError(f"an answer that is not JSON: {line[:80]!r}") from None
        if not isinstance(header, dict):
            raise WireError(f"an answer that is not an object: {line[:80]!r}")
        return header

    def exactly(self, size: int, deadline: float) -> bytearray:
        """The next `size` bytes."""
        while len(self.buffer) < size:
            self._more(deadline)
        taken = self.buffer[:size]
        del self.buffer[:size]
        return taken
