"""What the interfaces show, shared by the CLI, the TUI and the MCP server: a fact's
description, the store's overview, the activity feed."""
