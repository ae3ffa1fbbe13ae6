"""Fixtures of the recall tests: a fresh LMDB store on a fixed (or settable) clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter_tui.store import Store
from tests.recall.helpers import FIXED, Clock


@pytest.fixture
def clock() -> Clock:
    return Clock(FIXED)


@pytest.fixture
def gm(tmp_path: Path, clean_graymatter_env: None) -> Iterator[Store]:
    """A fresh store in `tmp_path/s` whose clock is fixed at FIXED."""
    opened = Store.open(tmp_path / "s", clock_fn=lambda: FIXED)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def gm_clock(tmp_path: Path, clock: Clock, clean_graymatter_env: None) -> Iterator[Store]:
    """A fresh store in `tmp_path/sc` on `clock`, which the test may move."""
    opened = Store.open(tmp_path / "sc", clock_fn=clock)
    try:
        yield opened
    finally:
        opened.close()
