"""Fixtures of the TUI tests: real LMDB stores on disk with a fixed clock, the demo data,
and the scripted Ollama on a loopback socket (the app builds its own summariser)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.exchange.demo import create_demo
from tests.support.over_socket import OllamaOverSocket
from tests.tui.helpers import open_store


def pytest_configure(config: pytest.Config) -> None:
    """The snapshot plugin writes its HTML report (also for the xfailed snapshots) to
    ./snapshot_report.html by default; keep it out of the working tree."""
    if config.getoption("--snapshot-report", default=None) == "snapshot_report.html":
        report = Path(tempfile.gettempdir()) / "graymatter-tui-snapshot-report.html"
        config.option.snapshot_report = str(report)


@pytest.fixture(autouse=True)
def _no_graymatter_env(clean_graymatter_env: None) -> None:
    """No GRAYMATTER_* variable of the developer's shell reaches the app's settings."""


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


_DEMO_TEMPLATE: list[Path] = []  # the demo store's data file, made once per worker


@pytest.fixture
def demo_store(store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LmdbStore]:
    """The demo store (three agents, 100 facts each) on the fixed clock; closed after.
    Made once per test worker and copied for each test (the copy is the same store, ids
    included: 50-60 ms saved in each of ~300 tests)."""
    if not _DEMO_TEMPLATE:
        made = tmp_path_factory.mktemp("demo-template") / "store"
        with open_store(made) as template:
            create_demo(template)
        _DEMO_TEMPLATE.append(made / "data.mdb")
    store_path.mkdir(parents=True)
    shutil.copyfile(_DEMO_TEMPLATE[0], store_path / "data.mdb")
    store = open_store(store_path)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def empty_store(store_path: Path) -> Iterator[LmdbStore]:
    store = open_store(store_path)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def ollama() -> Iterator[OllamaOverSocket]:
    with OllamaOverSocket() as server:
        yield server
    assert server.errors == []
