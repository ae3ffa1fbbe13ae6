"""Recognising secrets in text a person or an agent is about to store: API keys, tokens,
private keys, passwords. Memory is read back into prompts, exported and shared between
agents, so a secret that lands there leaks far beyond where it was typed.

`find_secret` names the kind of the first secret it sees, never the secret itself, so a
refusal can say what it found without repeating it. The patterns look for the published
shapes of each provider's keys and for credentials written as assignments (`password=…`,
`api_key: …`, `postgresql://user:pass@host`); they would rather refuse a harmless line
now and then than keep a key."""

from __future__ import annotations

import re
from functools import cache

# (what it is, the pattern). Ordered from the most specific shape to the most general, so
# an Anthropic key is named as one and not as "an API key".
_SOURCES: tuple[tuple[str, str, int], ...] = (
    ("a private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", 0),
    ("an Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{16,}", 0),
    ("an OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", 0),
    ("an AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", 0),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})", 0),
    ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}", 0),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}", 0),
    ("a Stripe key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}", 0),
    (
        "a JSON web token",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        0,
    ),
    ("a password in a URL", r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.I),
    (
        "a password",
        r"\b(?:password|passwd|passphrase|pwd)\s*[:=]\s*[\"']?[^\s\"']{3,}",
        re.I,
    ),
    (
        "a credential",
        r"\b(?:secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret"
        r"|private[_-]?key|auth[_-]?token|bearer)\s*=\s*[\"']?[^\s\"']{6,}",
        re.I,
    ),
    ("a bearer token", r"\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*", 0),
)


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Compiled on first use: most runs (a hook on a prompt without a remember line)
    never look for a secret."""
    return tuple((kind, re.compile(source, flags)) for kind, source, flags in _SOURCES)


def find_secret(text: str) -> str | None:
    """What kind of secret `text` holds ("an AWS access key id"), or None when it looks
    like none. The secret itself is never returned."""
    for kind, pattern in _patterns():
        if pattern.search(text):
            return kind
    return None
