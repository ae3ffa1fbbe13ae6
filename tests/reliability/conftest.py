"""The reliability harness runs short by default; GRAYMATTER_SOAK=1 runs the full figures
(200+ kills, 60 s of concurrency, growth past 500 MB). Each test prints its figures
(`pytest -s` shows them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).resolve().parent / "worker.py"


@pytest.fixture
def soak() -> bool:
    return os.environ.get("GRAYMATTER_SOAK", "") == "1"


def start_worker(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
