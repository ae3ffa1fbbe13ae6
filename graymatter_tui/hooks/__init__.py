"""Hooks for coding agents' clients (Claude Code): memory that flows in and out of a
session without the model deciding to call a tool (ADR 0055).

The client runs `graymatter-tui-hook` (or `python -m graymatter_tui.hooks`) at
SessionStart, UserPromptSubmit, PreCompact and SessionEnd with the event as JSON on stdin;
the hook answers with context to inject, stores `remember:` lines, saves checkpoints, and
never breaks the session: on any failure it exits 0 with no output and logs one line.
The runtime (`entry`, `events`) imports neither Textual, the MCP SDK nor click: it runs on
every prompt. `claude_settings` is the installer's half, used by the CLI."""
