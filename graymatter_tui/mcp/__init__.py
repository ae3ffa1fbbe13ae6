"""The MCP server: upstream GrayMatter's seven memory tools over stdio (or HTTP), so agents
use this store as their memory while a person watches it in the TUI.

`tools` declares the tools (names, arguments, descriptions, output schemas) exactly as
upstream's clients call them; `arguments` reads a call's arguments with upstream's error
wording; `memory_tools` runs them against the store; `server` wires them to the MCP SDK.
"""
