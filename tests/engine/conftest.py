"""Fixtures of the consolidation-engine tests: `gm` (tests/conftest.py) on a settable clock,
and a scripted Ollama through httpx's MockTransport (or, for replies that need a
connection, on a socket)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.helpers import Clock
from tests.support.ollama_fake import FakeOllama
from tests.support.over_socket import OllamaOverSocket


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_clock(clock: Clock) -> Clock:
    """`gm` runs on `clock` (fixed until the test moves it)."""
    return clock


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    fake = FakeOllama()
    yield fake
    assert fake.errors == []


@pytest.fixture
def ollama_socket() -> Iterator[OllamaOverSocket]:
    with OllamaOverSocket() as server:
        yield server
    assert server.errors == []
