"""Fixtures of the recall tests: `gm` (tests/conftest.py) runs on `clock`, fixed at FIXED
until a test moves it."""

from __future__ import annotations

import pytest

from tests.recall.helpers import FIXED, Clock


@pytest.fixture
def clock() -> Clock:
    return Clock(FIXED)


@pytest.fixture
def store_clock(clock: Clock) -> Clock:
    return clock
