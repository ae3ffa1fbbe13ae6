"""Shared fixtures: a fresh store in a temporary directory and the real CLI (through its
`main()` in this process, or in a subprocess: tests/support/cli_process.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual import _wait as textual_wait

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core import provenance
from graymatter_tui.embedding import local
from graymatter_tui.embedding.local import LocalEmbedder
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings
from tests.support.backends import BACKENDS, AnyStore, CliStore, fresh_pg_url, open_backend
from tests.support.cli_process import run_in_process, wants_subprocess
from tests.support.clock import ManualClock
from tests.support.postgres import Cluster, ClusterUnavailable, throwaway_cluster
from tests.support.suite_env import TEST_DEFAULTS  # no embeddings unless a test asks

# Pilot's `press` and `pause` wait for the process to look idle: sleeps of 20 ms until one
# shows almost no CPU used (textual._wait reads these two globals at each wait). Two waits
# a key made typing the largest part of many tests. A 5 ms window still needs a whole
# window without work; every test that waits for a result waits for the result itself
# (helpers.wait_until, first_read, workers_done), not for an idle heuristic.
textual_wait.SLEEP_GRANULARITY = 0.005
textual_wait.SLEEP_IDLE = textual_wait.SLEEP_GRANULARITY / 20.0


# Every CLI run sees this clock unless a test overrides GRAYMATTER_NOW.
FIXED_NOW = "2026-03-01T12:00:00Z"
CLI_TIMEOUT = 120
# onnxruntime's own telemetry opt-out, as the product sets it (ADR 0080): for this process,
# whose tests may import onnxruntime directly, and every process it starts.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without any graymatter or summariser settings, plus the
    suite's TEST_DEFAULTS and `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GRAYMATTER_", "ANTHROPIC_", "LMDB_"))
    }
    env.update(TEST_DEFAULTS)
    env["COLUMNS"] = "400"  # `list` truncates rows to the terminal width
    env["PYTHONIOENCODING"] = "utf-8"
    if extra:
        env.update(extra)
    return env


def run_graymatter(
    *args: str,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m graymatter_tui ARGS` and decode its output as UTF-8."""
    data = input.encode("utf-8") if isinstance(input, str) else input
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args],
        input=data if data is not None else b"",
        capture_output=True,
        env=clean_env(env),
        timeout=CLI_TIMEOUT,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )


def invoke_graymatter(
    *args: str,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """What `run_graymatter` returns, run in this process through the CLI's `main()`
    where that is the same (tests/support/cli_process.py says when it is not)."""
    if wants_subprocess(args):
        return run_graymatter(*args, input=input, env=env)
    data = input.encode("utf-8") if isinstance(input, str) else input
    return run_in_process(args, data or b"", clean_env(env))


@pytest.fixture
def clean_graymatter_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GRAYMATTER_* setting of the developer's shell leaks into an in-process store;
    the suite's TEST_DEFAULTS (no embeddings) hold instead."""
    for key in list(os.environ):
        if key.startswith(("GRAYMATTER_", "LMDB_")):
            monkeypatch.delenv(key)
    for key, value in TEST_DEFAULTS.items():
        monkeypatch.setenv(key, value)


def _fresh_store(path: Path, clock_fn: Callable[[], datetime] | None) -> Iterator[LmdbStore]:
    with LmdbStore.open(path, clock_fn=clock_fn) as opened:
        yield opened


@pytest.fixture
def store(tmp_path: Path, clean_graymatter_env: None) -> Iterator[LmdbStore]:
    """A fresh store in `tmp_path/store` on the wall clock, closed at teardown."""
    yield from _fresh_store(tmp_path / "store", None)


@pytest.fixture
def store_clock() -> ManualClock:
    """The clock of `gm`: FIXED_NOW until the test moves it. A directory's conftest may
    return its own clock fixture here, so its tests move the store's clock through it."""
    return ManualClock(datetime(2026, 3, 1, 12, tzinfo=UTC))


@pytest.fixture
def gm(
    tmp_path: Path, store_clock: Callable[[], datetime], clean_graymatter_env: None
) -> Iterator[LmdbStore]:
    """A fresh store in `tmp_path/gm` on `store_clock`, closed at teardown: the store of
    the store, recall and engine tests that set or move time."""
    yield from _fresh_store(tmp_path / "gm", store_clock)


@pytest.fixture(params=BACKENDS)
def any_store(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    store_clock: Callable[[], datetime],
    clean_graymatter_env: None,
) -> Iterator[AnyStore]:
    """`gm` on each backend in turn: an LMDB store in tmp_path, then a PostgreSQL store on
    a fresh database of the throwaway cluster, on `store_clock`. The store of every test
    of semantics that both backends must share."""
    opened = open_backend(request.param, request, tmp_path, store_clock)
    yield opened
    opened.close()


@pytest.fixture
def cli_dir(tmp_path: Path) -> Path:
    """The data dir `run_cli` points GRAYMATTER_DIR at (not created in advance)."""
    return tmp_path / "cli-data"


@pytest.fixture
def run_cli(cli_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real CLI with GRAYMATTER_DIR=cli_dir and a fixed GRAYMATTER_NOW (in this
    process where that is the same as a subprocess: `invoke_graymatter`).

    `env` adds to (or overrides) those variables for one call.
    """

    def run(
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        merged = {"GRAYMATTER_DIR": str(cli_dir), "GRAYMATTER_NOW": FIXED_NOW}
        if env:
            merged.update(env)
        return invoke_graymatter(*args, input=input, env=merged)

    return run


@pytest.fixture(params=BACKENDS)
def cli_store(request: pytest.FixtureRequest, cli_dir: Path) -> CliStore:
    """The store `any_cli` points the CLI at, on each backend in turn: the LMDB store in
    `cli_dir` (GRAYMATTER_DIR), then a fresh PostgreSQL database (GRAYMATTER_STORE, which
    wins over GRAYMATTER_DIR)."""
    if request.param == "lmdb":
        return CliStore("lmdb", {"GRAYMATTER_DIR": str(cli_dir)}, str(cli_dir))
    url = fresh_pg_url(request)
    return CliStore("postgres", {"GRAYMATTER_DIR": str(cli_dir), "GRAYMATTER_STORE": url}, url)


@pytest.fixture
def any_cli(cli_store: CliStore) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_cli` on `cli_store`'s backend: the CLI tests of semantics run on both."""

    def run(
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        merged = {**cli_store.env, "GRAYMATTER_NOW": FIXED_NOW, **(env or {})}
        return invoke_graymatter(*args, input=input, env=merged)

    return run


@pytest.fixture(autouse=True)
def writes_as_the_library() -> Iterator[None]:
    """Every test starts with this process writing as `api`: the CLI (run in-process by
    some tests) and the app name the whole process, which would leak into later tests."""
    provenance.name_process(provenance.LIBRARY)
    yield
    provenance.name_process(provenance.LIBRARY)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster for the whole session (tests/support/postgres.py).
    Fails, never skips, when PostgreSQL is missing: CI must not pass without these tests."""
    try:
        with throwaway_cluster() as cluster:
            yield cluster
    except ClusterUnavailable as exc:
        pytest.fail(f"the PostgreSQL tests need a throwaway cluster: {exc}", pytrace=False)


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """A password URL of a fresh, empty database of its own, dropped at teardown."""
    name = pg_cluster.new_database()
    yield pg_cluster.url(name)
    pg_cluster.drop_database(name)


@pytest.fixture
def own_model_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled model's verdict cache in a directory of this run, never the developer's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    """The real bundled model, loaded once per module."""
    return local.from_settings(EmbedSettings(embedder=EmbedderName.LOCAL))
