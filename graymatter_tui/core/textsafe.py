"""Untrusted text: validating what comes in, neutralising what goes out to a terminal.

Stored text may contain anything a model or an agent wrote, including escape sequences
that would move the cursor, rewrite the clipboard (OSC 52) or reorder a line (bidi
overrides). Display code shows such characters as visible placeholders instead.
"""

from __future__ import annotations

import re

from graymatter_tui.core.errors import InvalidInput

MAX_TEXT_BYTES = 64 * 1024
MAX_AGENT_BYTES = 256

# C0 controls, DEL, C1 controls, bidi embeddings/overrides/isolates, and other invisible
# format characters that can disguise text. Tab and newline are handled by the callers.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ufff9-\ufffb]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_AGENT_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _placeholder(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ ␛ … control pictures
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def neutralise(text: str, *, one_line: bool = False) -> str:
    """Text safe to write to a terminal: every control or format character made visible.

    With `one_line`, newlines become `⏎` and tabs a space so a row never breaks.
    Lone surrogates (undecodable bytes) become U+FFFD.
    """
    if one_line:
        text = text.replace("\r\n", "\u23ce").replace("\n", "\u23ce").replace("\t", " ")
    else:
        text = text.replace("\r\n", "\n")
    text = _SURROGATE.sub("\ufffd", text)
    return _UNSAFE.sub(_placeholder, text)


def _utf8_length(value: str, what: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} is not valid UTF-8 (undecodable byte at character {exc.start})"
        ) from None


def _check_filled_and_within(value: str, what: str, limit: int, limit_text: str) -> None:
    """`value` must be valid UTF-8, not blank, and at most `limit` bytes long."""
    size = _utf8_length(value, what)
    if not value.strip():
        raise InvalidInput(f"{what} is empty")
    if size > limit:
        raise InvalidInput(f"{what} is {size} bytes; the limit is {limit_text}")


def validate_text(text: str) -> str:
    """A fact's text: non-blank, valid UTF-8, at most 64 KiB. Returned unchanged."""
    _check_filled_and_within(text, "text", MAX_TEXT_BYTES, f"{MAX_TEXT_BYTES} bytes (64 KiB)")
    return text


def validate_agent(agent: str) -> str:
    """An agent name: non-blank, at most 256 bytes, no control or bidi characters."""
    _check_filled_and_within(agent, "agent name", MAX_AGENT_BYTES, str(MAX_AGENT_BYTES))
    bad = _AGENT_FORBIDDEN.search(agent)
    if bad:
        raise InvalidInput(
            f"agent name contains a control character (U+{ord(bad.group()):04X}) "
            f"at position {bad.start()}"
        )
    return agent


def validate_query(query: str, limit: int) -> str:
    """A saved query (a recall probe): non-blank, valid UTF-8, at most `limit` bytes, on
    one line with no control or bidi characters (it is shown on one line everywhere)."""
    _check_filled_and_within(query, "query", limit, f"{limit} bytes")
    bad = _AGENT_FORBIDDEN.search(query)
    if bad:
        raise InvalidInput(
            f"query contains a control character (U+{ord(bad.group()):04X}) "
            f"at position {bad.start()}"
        )
    return query


_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
# Spelled out, not re.IGNORECASE: that would also take look-alikes such as the Kelvin sign.
_ULID_ANY_CASE = re.compile(r"[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}")


def looks_like_id(value: str) -> bool:
    """True for an id in its canonical form (26 characters of upper-case Crockford
    base32), as the store writes them. Ids a person or a file gives go through
    `canonical_id` instead."""
    return _ULID.fullmatch(value) is not None


def canonical_id(value: str) -> str | None:
    """A ULID given in any case, in its canonical upper-case form; None when `value` is
    not a ULID. ULIDs are case-insensitive, so `01m8sf…` names the fact `01M8SF…`."""
    if _ULID_ANY_CASE.fullmatch(value) is None:
        return None
    return value.upper()
