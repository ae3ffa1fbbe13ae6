"""Fact and cycle identifiers: ULIDs taken from the store clock, monotonic within a process.

A ULID is 48 bits of milliseconds (10 characters) and 80 random bits (16 characters) in
Crockford base32, so ids sort by creation time. Within one millisecond the random part
is incremented, as the ULID spec's monotonic mode says. Encoded here directly because
bulk inserts mint one id per fact and a general-purpose encoder dominated their cost.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_CHARS = bytes(ord(ALPHABET[b & 31]) for b in range(256))
_lock = threading.Lock()
_last_ms = -1
_last_time = ""
_last_random = ""


_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]  # 10 bits -> two characters


def encode_time(ms: int) -> str:
    """The 10-character time part of a ULID (48-bit milliseconds)."""
    p = _PAIRS
    return (
        p[(ms >> 40) & 1023]
        + p[(ms >> 30) & 1023]
        + p[(ms >> 20) & 1023]
        + p[(ms >> 10) & 1023]
        + p[ms & 1023]
    )


def encode_ulid(value: int) -> str:
    """The 26-character Crockford base32 form of a 128-bit integer."""
    chars = []
    for _ in range(26):
        chars.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def _increment(random_part: str) -> str:
    digits = list(random_part)
    for index in range(len(digits) - 1, -1, -1):
        value = ALPHABET.index(digits[index]) + 1
        if value < 32:
            digits[index] = ALPHABET[value]
            return "".join(digits)
        digits[index] = "0"
    raise OverflowError("ULID random part exhausted within one millisecond")


def new_id(moment: datetime) -> str:
    """A ULID for `moment`; strictly greater than the previous one minted in the same ms."""
    global _last_ms, _last_time, _last_random
    ms = int(moment.timestamp() * 1000)
    with _lock:
        if ms == _last_ms:
            _last_random = _increment(_last_random)
        else:
            _last_ms, _last_time = ms, encode_time(ms)
            # The top bit of the first random character is cleared so an increment has
            # room to carry without overflowing into the next millisecond's range.
            _last_random = os.urandom(16).translate(_RANDOM_CHARS).decode("ascii")
            _last_random = ALPHABET[ALPHABET.index(_last_random[0]) & 15] + _last_random[1:]
        return _last_time + _last_random
