"""Fact and cycle identifiers: ULIDs taken from the store clock, monotonic within a process."""

from __future__ import annotations

import threading
from datetime import datetime

from ulid import ULID

_lock = threading.Lock()
_last = b""


def new_id(moment: datetime) -> str:
    """A ULID for `moment`; strictly greater than the previous one when minted in the same ms."""
    global _last
    with _lock:
        candidate = bytes(ULID.from_timestamp(moment.timestamp()))
        if candidate[:6] == _last[:6] and candidate <= _last:
            candidate = (int.from_bytes(_last, "big") + 1).to_bytes(16, "big")
        _last = candidate
        return str(ULID.from_bytes(candidate))
