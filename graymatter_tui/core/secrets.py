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

# (what it is, the pattern). Ordered from the most specific shape to the most general, so
# an Anthropic key is named as one and not as "an API key".
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    (
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    ("a password in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.I)),
    (
        "a password",
        re.compile(r"\b(?:password|passwd|passphrase|pwd)\s*[:=]\s*[\"']?[^\s\"']{3,}", re.I),
    ),
    (
        "a credential",
        re.compile(
            r"\b(?:secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret"
            r"|private[_-]?key|auth[_-]?token|bearer)\s*=\s*[\"']?[^\s\"']{6,}",
            re.I,
        ),
    ),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*")),
)


def find_secret(text: str) -> str | None:
    """What kind of secret `text` holds ("an AWS access key id"), or None when it looks
    like none. The secret itself is never returned."""
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return None
