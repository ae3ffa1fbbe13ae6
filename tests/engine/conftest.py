"""Fixtures of the consolidation-engine tests: `gm` (tests/conftest.py) on a settable clock
and a scripted Ollama server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.helpers import Clock
from tests.support.ollama_server import ScriptedOllama


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_clock(clock: Clock) -> Clock:
    """`gm` runs on `clock` (fixed until the test moves it)."""
    return clock


@pytest.fixture
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as server:
        yield server
    assert server.errors == []
