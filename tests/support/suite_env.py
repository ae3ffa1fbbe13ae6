"""Settings every test process starts with, whatever the developer's shell holds.

The product embeds with its local model when GRAYMATTER_EMBED is unset (ADR 0058); the
suite runs without embeddings (fast, rankings on keyword and recency) except where a test
asks for them by setting GRAYMATTER_EMBED itself (tests/embedding)."""

from __future__ import annotations

TEST_DEFAULTS = {"GRAYMATTER_EMBED": "none"}
