"""Which project a hook runs for, and so which agent's memory it reads and writes.

The agent is, in order: the `--agent` written into the hook command (by `hooks install
--project DIR`, or given by a person); else the name of the project directory, made an
agent id by `core.project_names` — the same function `init` uses for the `--agent` of the
MCP entry it writes, so hooks and tools meet in one memory. The project directory is the
one Claude Code names in `CLAUDE_PROJECT_DIR` (where the session was started), else the
event's `cwd`, else the hook's working directory; symbolic links resolved."""

from __future__ import annotations

import os
from pathlib import Path

from graymatter_tui.core.project_names import agent_from_directory_name

PROJECT_VARIABLE = "CLAUDE_PROJECT_DIR"


def project_dir(event_cwd: object = None) -> Path:
    """The project directory of the session that runs the hook."""
    named = os.environ.get(PROJECT_VARIABLE, "").strip()
    if not named and isinstance(event_cwd, str) and event_cwd.strip():
        named = event_cwd
    return Path(os.path.realpath(named or os.getcwd()))


def agent_for_directory(directory: Path) -> str:
    """The agent id of the project in `directory` (resolved first)."""
    return agent_from_directory_name(Path(os.path.realpath(directory)).name)
