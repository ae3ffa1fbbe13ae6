"""Reading a tool call's arguments: the checks and wording upstream's clients rely on.

A missing argument's error says "required" (clients match on that word); every other
problem names the argument and what was wrong with it. Nothing here touches the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from graymatter_tui.core.confidence import MAX_WEIGHT, Confidence, check_weight, parse_confidence
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.textsafe import validate_agent, validate_text
from graymatter_tui.mcp.errors import ToolError

DEFAULT_TOP_K = 8
MAX_TOP_K = 100
MAX_QUERIES = 32
MAX_STATE_BYTES = 256 * 1024
# What an agent's text may not hold: C0 controls but tab/newline/CR (escape sequences
# start with ESC), DEL, C1 controls, and bidi overrides/isolates that disguise text.
_HOSTILE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class Arguments:
    """One call's arguments, read field by field; anything unexpected is a ToolError."""

    def __init__(self, raw: Mapping[str, Any] | None) -> None:
        self.raw: Mapping[str, Any] = raw or {}

    def _present(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def string(self, name: str, *, required: bool = True) -> str | None:
        value = self.raw.get(name)
        if value is None:
            if required:
                raise ToolError(f"{name} is required")
            return None
        if not isinstance(value, str):
            raise ToolError(f"{name} must be a string, got {_json_type(value)}")
        return value

    def required_string(self, name: str) -> str:
        value = self.string(name)
        assert value is not None  # string() raised otherwise
        return value

    def agent(self, *names: str) -> str:
        """The agent id, from the first of `names` that is given (`agent_id` before the
        deprecated `agent` on memory_reflect)."""
        for name in names:
            if self._present(name):
                return _checked(validate_agent, self.required_string(name), name)
        raise ToolError(f"{' or '.join(names)} is required")

    def text(self, name: str, *, required: bool = True) -> str | None:
        value = self.string(name, required=required)
        return None if value is None else fact_text(value, name)

    def top_k(self) -> int:
        value = self.raw.get("top_k")
        if value is None:
            return DEFAULT_TOP_K
        # JSON has one number type; 8.0 is 8, but true is not a number here.
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ToolError(f"top_k must be a whole number, got {json.dumps(value)[:40]}")
        if not 1 <= value <= MAX_TOP_K:
            raise ToolError(f"top_k must be between 1 and {MAX_TOP_K}, got {int(value)}")
        return int(value)

    def confidence(self, name: str = "confidence") -> Confidence | None:
        """A confidence level (`verified`, `inferred`, `unverified`), or None when not given."""
        value = self.string(name, required=False)
        if value is None:
            return None
        try:
            return parse_confidence(value, name)
        except InvalidInput as exc:
            raise ToolError(str(exc)) from None

    def confidence_weight(self) -> float:
        """`confidence_weight`: a number from 0 to 0.5 (0 when not given)."""
        name = "confidence_weight"
        value = self.raw.get(name)
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float):
            got = _json_type(value)
            raise ToolError(f"{name} must be a number from 0 to {MAX_WEIGHT}, got {got}")
        try:
            return check_weight(float(value), name)
        except InvalidInput as exc:
            raise ToolError(str(exc)) from None

    def flag(self, name: str) -> bool:
        value = self.raw.get(name, False)
        if not isinstance(value, bool):
            raise ToolError(f"{name} must be true or false, got {_json_type(value)}")
        return value

    def choice(self, name: str, allowed: Sequence[str], *, default: str | None = None) -> str:
        value = self.string(name, required=default is None) or default
        assert value is not None
        if value not in allowed:
            raise ToolError(
                f"unknown {name} {json.dumps(value)[:60]}; expected one of: {', '.join(allowed)}"
            )
        return value

    def strings(self, name: str, *, max_items: int) -> list[str]:
        value = self.raw.get(name)
        if value is None:
            raise ToolError(f"{name} is required")
        if not isinstance(value, list):
            raise ToolError(f"{name} must be an array of strings, got {_json_type(value)}")
        if not value:
            raise ToolError(f"{name} is empty; give at least one")
        if len(value) > max_items:
            raise ToolError(f"{name} has {len(value)} items; the limit is {max_items}")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise ToolError(f"{name}[{index}] must be a string, got {_json_type(item)}")
        return list(value)

    def json_object(self, name: str) -> str | None:
        """A JSON object (checkpoint state) as JSON text: a string holding one, returned
        as given, or the object itself (as recent clients send it), encoded."""
        raw = self.raw.get(name)
        if isinstance(raw, dict):
            return _encoded_object(raw, name)
        if raw is not None and not isinstance(raw, str):
            raise ToolError(
                f"{name} must be a JSON object or a string holding one, got {_json_type(raw)}"
            )
        value = self.string(name, required=False)
        if value is None:
            return None
        if len(value.encode("utf-8", "surrogatepass")) > MAX_STATE_BYTES:
            raise ToolError(f"{name} is over the limit of {MAX_STATE_BYTES // 1024} KiB")
        try:
            decoded = json.loads(value)
        except ValueError as exc:
            raise ToolError(f"{name} is not valid JSON: {exc}") from None
        if not isinstance(decoded, dict):
            raise ToolError(f"{name} must be a JSON object, got {_json_type(decoded)}")
        return value


def _encoded_object(value: dict[str, Any], name: str) -> str:
    """An object argument as the JSON text a string argument would have held."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        raise ToolError(f"{name} is nested too deeply") from None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"{name} holds an unpaired surrogate (U+{ord(text[exc.start]):04X}); it is not "
            "valid Unicode text"
        ) from None
    if size > MAX_STATE_BYTES:
        raise ToolError(f"{name} is over the limit of {MAX_STATE_BYTES // 1024} KiB")
    return text


def fact_text(value: str, name: str = "text") -> str:
    """Text an agent asks us to store or look up: valid, within the limit, and free of
    control and bidi characters (an agent never needs them; a prompt injection might)."""
    _checked(validate_text, value, name)
    bad = _HOSTILE.search(value)
    if bad:
        raise ToolError(
            f"{name} contains a control character (U+{ord(bad.group()):04X}) at position "
            f"{bad.start()}; escape sequences, NUL and bidi controls are refused"
        )
    return value


def _checked(check: Any, value: str, name: str) -> str:
    try:
        check(value)
    except InvalidInput as exc:
        # The store's wording names "text"/"agent name"; the agent knows the argument.
        raise ToolError(f"{name}: {exc}") from None
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
