"""The layers hold at run time too (lint-imports checks the imports as written): the
storage contract loads no backend's driver, and the PostgreSQL backend loads no lmdb."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "absent"),
    [
        ("graymatter_tui.storage", ("lmdb", "psycopg", "textual")),
        ("graymatter_tui.storage.store", ("lmdb", "psycopg", "textual")),
        ("graymatter_tui.backends.postgres", ("lmdb", "textual")),
        ("graymatter_tui.backends.lmdb", ("psycopg", "textual")),
    ],
)
def test_importing_a_layer_loads_nothing_below_it_does_not_need(
    module: str, absent: tuple[str, ...]
) -> None:
    code = f"import sys, {module}; print(sorted(m for m in {absent!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
