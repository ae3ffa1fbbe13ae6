"""The one error a tool call reports back to the agent (`isError: true`), never a crash."""

from __future__ import annotations


class ToolError(Exception):
    """A call that changed nothing, with the reason as the agent will read it."""
