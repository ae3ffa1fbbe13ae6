"""Fact and cycle identifiers: ULIDs taken from the store clock, monotonic within a process.

A ULID is 48 bits of milliseconds (10 characters) and 80 random bits (16 characters) in
Crockford base32, so ids sort by creation time. Within one millisecond the random part
is incremented, as the ULID spec's monotonic mode says. Encoded here directly because
bulk inserts mint one id per fact and a general-purpose encoder dominated their cost.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable
from datetime import datetime

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_CHARS = bytes(ord(ALPHABET[b & 31]) for b in range(256))
_lock = threading.Lock()
_seeded: random.Random | None = None
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


def seed_ids(seed: int | None) -> None:
    """Make the random part of new ids reproducible (GRAYMATTER_ID_SEED): with a pinned
    clock too, a demo or a screenshot comes out the same every time. None restores
    os.urandom."""
    global _seeded, _last_ms
    with _lock:
        _seeded = None if seed is None else random.Random(seed)
        _last_ms = -1


def _random_bytes() -> bytes:
    return _seeded.randbytes(16) if _seeded is not None else os.urandom(16)


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
            _last_random = _random_bytes().translate(_RANDOM_CHARS).decode("ascii")
            _last_random = ALPHABET[ALPHABET.index(_last_random[0]) & 15] + _last_random[1:]
        return _last_time + _last_random


class IdReplay:
    """The ids one write call mints, replayed in order when its transaction runs again
    (after a map growth), so a retry writes the ids the first attempt would have."""

    def __init__(self) -> None:
        self._minted: list[str] = []

    def attempt(self) -> Callable[[datetime], str]:
        """A minting function for one attempt: the n-th call returns the n-th id."""
        position = 0
        minted = self._minted

        def mint(moment: datetime) -> str:
            nonlocal position
            if position == len(minted):
                minted.append(new_id(moment))
            position += 1
            return minted[position - 1]

        return mint
