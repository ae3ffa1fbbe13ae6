"""The two routes of the import parser agree: whatever the typed (fast) route accepts, the
plain (slow) route accepts with the same result; whatever it refuses, the slow route
decides. Checked on fact objects mixing good and bad values of every field."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter_tui.exchange.import_parse import _Checker, _EntryError, _Incoming, parse_import

ULID = "01KG0000000000000000000001"
OTHER = "01KG0000000000000000000002"
STAMPS = [
    "2026-02-01T10:00:00.000000Z",
    "2026-02-01T10:00:00Z",
    "2026-02-01T12:00:00.123456789+02:00",
    "2026-13-01T10:00:00.000000Z",
    "2026-W05-1T10:00:00.000000Z",
    "0001-01-01T00:00:00Z",
    "yesterday",
    "",
]
ANY = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.floats(-1, 2), st.text(max_size=5))
FIELDS: dict[str, Any] = {
    "id": st.sampled_from([ULID, "not-an-id", ""]) | ANY,
    "agent_id": st.sampled_from(["agent", "", "bad\x01agent"]) | ANY,
    "text": st.sampled_from(["some text", " ", "x" * 10]) | ANY,
    "created_at": st.sampled_from(STAMPS) | ANY,
    "accessed_at": st.sampled_from(STAMPS) | ANY,
    "access_count": st.integers(-1, 5) | ANY,
    "weight": st.floats(-0.5, 1.5) | st.sampled_from([0, 1, 0.25]) | ANY,
    "superseded_by": st.sampled_from(["", "agent", OTHER, ULID, "junk"]) | ANY,
    "pinned": st.booleans() | ANY,
    "pinned_at": st.sampled_from(STAMPS) | ANY,
    "cycle_id": st.sampled_from(["", OTHER, "junk"]) | ANY,
    "confidence": st.sampled_from(["", "verified"]) | ANY,
    "kind": st.sampled_from(["", "alias"]) | ANY,
    "embedding": st.lists(st.floats(-1, 1), max_size=3),
}
fact_objects = st.fixed_dictionaries(
    {k: FIELDS[k] for k in ("id", "agent_id", "text", "created_at")},
    optional={k: v for k, v in FIELDS.items() if k not in ("id", "agent_id", "text", "created_at")},
)


def slow(obj: dict[str, Any]) -> Any:
    try:
        return _Checker().from_object(obj)
    except _EntryError:
        return "refused"


def fast(obj: dict[str, Any]) -> Any:
    try:
        typed = msgspec.json.decode(msgspec.json.encode(obj), type=_Incoming)
    except msgspec.ValidationError:
        return "left to the slow route"
    try:
        return _Checker().checked(typed)
    except _EntryError:
        return "refused"


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(fact_objects)
def test_the_fast_route_agrees_with_the_slow_route(obj: dict[str, Any]) -> None:
    quick = fast(obj)
    if quick != "left to the slow route":
        assert quick == slow(obj)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fact_objects, max_size=4))
def test_a_whole_file_parses_alike_either_way(objs: list[dict[str, Any]]) -> None:
    """An array and the same facts as jsonl lines: same facts, or both refused."""
    for index, obj in enumerate(objs):
        obj["id"] = f"01KG00000000000000000000{index:02d}"  # no duplicate-id noise
    array = msgspec.json.encode(objs)
    lines = b"\n".join(msgspec.json.encode({"type": "fact", "fact": o}) for o in objs)
    outcomes = []
    for data in (array, lines):
        try:
            outcomes.append(parse_import(data).facts)
        except Exception as exc:  # InvalidInput: which entries differ in wording only
            outcomes.append(type(exc).__name__)
    if objs:
        assert outcomes[0] == outcomes[1]
