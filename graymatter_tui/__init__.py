"""graymatter-tui: a terminal workbench for AI-agent memory stored in LMDB."""

__version__ = "0.9.7"
