"""Summarisers behind one small protocol (`base.Summariser`): ollama, anthropic, local.

Names are resolved lazily so that importing the package (the command line does, for
every command) does not import httpx; `factory.from_settings` picks the configured one.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AnthropicSummariser": "anthropic",
    "LocalSummariser": "local",
    "OllamaSummariser": "ollama",
    "Reachability": "base",
    "Reply": "base",
    "Summariser": "base",
    "from_settings": "factory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = sorted(_LAZY)
