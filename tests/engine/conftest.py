"""Fixtures of the consolidation-engine tests: a store on a settable clock, and a scripted
Ollama through httpx's MockTransport (or, for replies that need a connection, on a socket)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter_tui.store import Store
from tests.engine.helpers import Clock
from tests.support.ollama_fake import FakeOllama
from tests.support.over_socket import OllamaOverSocket


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gm(tmp_path: Path, clock: Clock) -> Iterator[Store]:
    """A fresh store whose clock is `clock` (fixed until the test moves it)."""
    opened = Store.open(tmp_path / "s", clock_fn=clock)
    try:
        yield opened
    finally:
        opened.close()


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
