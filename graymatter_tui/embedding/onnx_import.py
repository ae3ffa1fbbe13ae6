"""onnxruntime, imported with its telemetry off (ADR 0080).

Since 1.2x the official onnxruntime wheels for Linux and macOS report usage to Microsoft
(1DS, to mobile.events.data.microsoft.com): at the first import a process writes a
persistent device id and an event cache under ~/.cache/Microsoft/DeveloperTools, and
uploads when it can. graymatter-tui runs its model offline and says so; the telemetry is
turned off with onnxruntime's own opt-out, `ORT_DISABLE_TELEMETRY=1`, read once when the
runtime starts, so it is set before the first import. A user who sets the variable
themselves (to 0, say) keeps their choice."""

from __future__ import annotations

import os
from typing import Any

OPT_OUT = "ORT_DISABLE_TELEMETRY"


def onnxruntime() -> Any:
    """The onnxruntime module (ImportError when it is not installed)."""
    os.environ.setdefault(OPT_OUT, "1")
    import onnxruntime as ort

    return ort
