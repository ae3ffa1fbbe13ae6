"""The reliability harness runs short by default; GRAYMATTER_SOAK=1 runs the full figures
(200+ kills, 60 s of concurrency, growth past 500 MB), GRAYMATTER_SOAK=N that many kills
(tests/support/soak.py). Each test prints its figures (`pytest -s` shows them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.soak import soaking

WORKER = Path(__file__).resolve().parent / "worker.py"


@pytest.fixture
def soak() -> bool:
    return soaking()


def start_worker(
    *args: str, env: dict[str, str] | None = None, ready: bool = False
) -> subprocess.Popen[bytes]:
    """Start a worker process. With `ready`, return once it has opened the store (so a
    loaded machine's slow interpreter start-up is not mistaken for work)."""
    child = subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    if ready and child.stdout is not None:
        child.stdout.readline()
        child.stdout.close()
    return child
