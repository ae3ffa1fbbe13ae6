"""The embedded model runs without onnxruntime's telemetry (onnx_import): a process that
embeds leaves no device id or event cache behind, where onnxruntime imported plainly
does (when the installed build has telemetry at all)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter_tui.embedding import onnx_import

PLAIN = """
import onnxruntime as ort
from graymatter_tui.embedding import int8_product
ort.InferenceSession(int8_product.graph_bytes(8), providers=["CPUExecutionProvider"])
"""
OURS = """
from graymatter_tui.embedding import local
from graymatter_tui.embedding.settings import EmbedSettings
local.from_settings(EmbedSettings.from_env()).embed(["the staging ledger listens on 6432"])
"""


def _traces(code: str, home: Path) -> tuple[list[str], str]:
    """What a process running `code` with `home` as its home leaves under it, and its
    stderr."""
    env = {k: v for k, v in os.environ.items() if k != onnx_import.OPT_OUT}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), GRAYMATTER_EMBED="local")
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    left = sorted(str(p.relative_to(home)) for p in home.rglob("*") if "Microsoft" in str(p))
    return left, done.stderr


def test_a_process_that_embeds_leaves_no_telemetry_behind(tmp_path: Path) -> None:
    plain, _ = _traces(PLAIN, tmp_path / "plain")
    if not plain:
        pytest.skip("this onnxruntime build keeps no telemetry: nothing to turn off")
    assert any(p.endswith("deviceid") for p in plain)
    ours, stderr = _traces(OURS, tmp_path / "ours")
    assert ours == []
    assert "telemetry" not in stderr


def test_a_users_own_choice_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(onnx_import.OPT_OUT, "0")
    onnx_import.onnxruntime()
    assert os.environ[onnx_import.OPT_OUT] == "0"
