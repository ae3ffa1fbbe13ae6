"""graymatter-tui: a terminal workbench for AI-agent memory stored in LMDB."""

__version__ = "0.8.0"
