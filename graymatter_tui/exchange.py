"""Export and import: our JSON Lines format, upstream's `memories.json`, and Markdown.

Import is all-or-nothing: every line is parsed and validated before one transaction
writes anything, and every bad line is reported by number.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from graymatter_tui import __version__, clock
from graymatter_tui.errors import GraymatterError, InvalidInput
from graymatter_tui.model import RETIRED, CycleRecord, Fact, cycle_to_dict, fact_to_dict
from graymatter_tui.output_file import write_output
from graymatter_tui.store import Store
from graymatter_tui.store.files import DATA_FILE, LOCK_FILE
from graymatter_tui.textsafe import looks_like_id, neutralise, validate_agent, validate_text

FORMATS = ("jsonl", "json", "markdown")
JSONL_FORMAT = "graymatter-tui"
MAX_REPORTED_ERRORS = 5
_encode = msgspec.json.Encoder().encode


def _facts(store: Store, agent: str | None) -> list[Fact]:
    facts = store.all_facts()
    return [f for f in facts if agent is None or f.agent_id == agent]


def export_jsonl(store: Store, agent: str | None = None) -> Iterator[bytes]:
    """Header, then every fact (tombstones included), then every journal record."""
    yield _encode(
        {
            "type": "header",
            "format": JSONL_FORMAT,
            "version": 1,
            "exported_at": clock.format_time(store.now()),
            "exported_by": f"graymatter-tui {__version__}",
        }
    )
    for fact in _facts(store, agent):
        yield _encode({"type": "fact", "fact": fact_to_dict(fact)})
    records = store.records(agent)
    for record in reversed(records):
        yield _encode({"type": "cycle", "record": cycle_to_dict(record)})


def upstream_fact(fact: Fact) -> dict[str, Any]:
    """A fact shaped as upstream GrayMatter writes it: empty optional fields omitted."""
    out = fact_to_dict(fact)
    if not out["superseded_by"]:
        del out["superseded_by"]
    if not out["pinned"]:
        del out["pinned"]
    if out["pinned_at"] is None:
        del out["pinned_at"]
    if not out["cycle_id"]:
        del out["cycle_id"]
    return out


def export_json(store: Store, agent: str | None = None) -> bytes:
    """Upstream's `memories.json`: one array of fact objects, pretty-printed."""
    items = [upstream_fact(f) for f in _facts(store, agent)]
    return msgspec.json.format(_encode(items), indent=2)


def export_markdown(store: Store, agent: str | None = None) -> str:
    facts = _facts(store, agent)
    lines = ["# graymatter-tui memory export", ""]
    current = None
    for fact in sorted(facts, key=lambda f: (f.agent_id, f.id)):
        if fact.agent_id != current:
            current = fact.agent_id
            lines += [f"## {current}", ""]
        flags = []
        if fact.pinned:
            flags.append("pinned")
        if fact.is_retired:
            flags.append("retired")
        elif fact.is_tombstone:
            flags.append(f"superseded by {fact.superseded_by}")
        lines.append(f"### {fact.created_at} · {fact.id}")
        lines.append("")
        lines.append(fact.text)
        lines.append("")
        meta = f"_weight: {fact.weight:.3f} · accessed: {fact.access_count} times_"
        if flags:
            meta += f" · _{', '.join(flags)}_"
        lines += [meta, ""]
    return "\n".join(lines)


def export_bytes(
    store: Store, fmt: str = "jsonl", agent: str | None = None, *, terminal: bool = False
) -> bytes:
    """The whole export in `fmt`; `terminal` neutralises Markdown meant for a screen."""
    if fmt == "jsonl":
        return b"".join(line + b"\n" for line in export_jsonl(store, agent))
    if fmt == "json":
        return export_json(store, agent) + b"\n"
    if fmt == "markdown":
        text = export_markdown(store, agent)
        return (neutralise(text) if terminal else text).encode("utf-8")
    raise InvalidInput(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")


def export_file(
    store: Store,
    target: Path | None,
    fmt: str = "jsonl",
    agent: str | None = None,
    *,
    terminal: bool = False,
) -> int:
    """Export to `target` (None: standard output) by output_file's rules; the one export
    path of the CLI and the TUI. Returns the number of bytes written."""
    data = export_bytes(store, fmt, agent, terminal=terminal)
    write_output(data, target, protect=(store.path / DATA_FILE, store.path / LOCK_FILE))
    return len(data)


# ---- import ------------------------------------------------------------------------------
class _LineError(Exception):
    pass


def _str(obj: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise _LineError(f"missing {key!r}")
        return ""
    if not isinstance(value, str):
        raise _LineError(f"{key!r} must be a string")
    return value


def _time(obj: dict[str, Any], key: str, fallback: str | None = None) -> str:
    raw = obj.get(key)
    if raw is None and fallback is not None:
        return fallback
    if not isinstance(raw, str):
        raise _LineError(f"{key!r} must be an RFC 3339 timestamp")
    try:
        return clock.format_time(clock.parse_time(raw))
    except InvalidInput:
        raise _LineError(f"{key!r} is not an RFC 3339 timestamp: {raw[:40]!r}") from None


def parse_fact(obj: Any) -> Fact:
    """Validate one fact object from either format."""
    if not isinstance(obj, dict):
        raise _LineError("a fact must be a JSON object")
    fact_id = _str(obj, "id")
    if not looks_like_id(fact_id):
        raise _LineError(f"'id' is not a ULID: {fact_id[:40]!r}")
    try:
        agent = validate_agent(_str(obj, "agent_id"))
        text = validate_text(_str(obj, "text"))
    except InvalidInput as exc:
        raise _LineError(str(exc)) from None
    created = _time(obj, "created_at")
    accessed = _time(obj, "accessed_at", fallback=created)
    weight = obj.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
        raise _LineError("'weight' must be a number between 0 and 1")
    count = obj.get("access_count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _LineError("'access_count' must be a non-negative integer")
    superseded = _str(obj, "superseded_by", required=False)
    if superseded not in ("", RETIRED) and not looks_like_id(superseded):
        raise _LineError("'superseded_by' must be empty, \"agent\" or a fact id")
    if superseded == fact_id:
        raise _LineError("a fact cannot supersede itself")
    pinned = obj.get("pinned", False)
    if not isinstance(pinned, bool):
        raise _LineError("'pinned' must be true or false")
    pinned_at: str | None = None
    raw_pinned_at = obj.get("pinned_at")
    if pinned and isinstance(raw_pinned_at, str) and not raw_pinned_at.startswith("0001-01-01"):
        pinned_at = _time(obj, "pinned_at")
    elif pinned:
        pinned_at = created
    if pinned and superseded:
        pinned, pinned_at = False, None  # a tombstone is never pinned
    optional: dict[str, str | None] = {}
    for key in ("confidence", "kind"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise _LineError(f"{key!r} must be a string")
        optional[key] = value or None
    return Fact(
        id=fact_id,
        agent_id=agent,
        text=text,
        created_at=created,
        accessed_at=accessed,
        access_count=count,
        weight=float(weight),
        superseded_by=superseded,
        pinned=pinned,
        pinned_at=pinned_at,
        cycle_id=_cycle_ref(_str(obj, "cycle_id", required=False)),
        confidence=optional["confidence"],
        kind=optional["kind"],
    )


def _cycle_ref(value: str) -> str:
    if value and not looks_like_id(value):
        raise _LineError("'cycle_id' must be empty or a cycle id (ULID)")
    return value


RECORD_OUTCOMES = ("applied", "discarded", "failed", "skipped", "dry_run", "")
RECORD_SUMMARISERS = ("ollama", "anthropic", "local", "none", "")


def _parse_record(obj: Any) -> CycleRecord:
    if not isinstance(obj, dict):
        raise _LineError("a cycle record must be a JSON object")
    try:
        record = msgspec.convert(obj, CycleRecord)
    except msgspec.ValidationError as exc:
        raise _LineError(f"bad cycle record: {exc}") from None
    if not looks_like_id(record.cycle_id):
        raise _LineError("cycle record has no valid 'cycle_id'")
    if record.outcome not in RECORD_OUTCOMES:
        raise _LineError(f"cycle record has an unknown outcome {record.outcome[:20]!r}")
    if record.summariser not in RECORD_SUMMARISERS:
        raise _LineError(f"cycle record names an unknown summariser {record.summariser[:20]!r}")
    try:
        validate_agent(record.agent_id)
    except InvalidInput as exc:
        raise _LineError(f"cycle record: {exc}") from None
    for ref in (record.summary_id, record.reverted_by, record.reverted_cycle_id):
        _cycle_ref(ref)
    return record


def parse_import(data: bytes) -> tuple[list[Fact], list[CycleRecord]]:
    """Parse a whole import file; raise InvalidInput naming every bad line (first few)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"import file is not UTF-8 (byte {exc.start})") from None
    if text.lstrip().startswith("["):
        return _parse_upstream(text)
    return _parse_jsonl(text)


def _fail(errors: list[str], total_errors: int) -> None:
    shown = "; ".join(errors[:MAX_REPORTED_ERRORS])
    more = (
        f"; and {total_errors - MAX_REPORTED_ERRORS} more"
        if total_errors > MAX_REPORTED_ERRORS
        else ""
    )
    noun = "entry" if total_errors == 1 else "entries"
    raise InvalidInput(f"nothing imported: {total_errors} bad {noun}: {shown}{more}")


def _check_duplicates(facts: list[tuple[str, Fact]], errors: list[str]) -> None:
    seen: dict[str, str] = {}
    for where, fact in facts:
        if fact.id in seen:
            errors.append(f"{where}: duplicate id {fact.id} (also at {seen[fact.id]})")
        else:
            seen[fact.id] = where


def _parse_upstream(text: str) -> tuple[list[Fact], list[CycleRecord]]:
    try:
        items = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"nothing imported: the JSON array is malformed ({exc})") from None
    except RecursionError:
        raise InvalidInput("nothing imported: the JSON is nested too deeply") from None
    if not isinstance(items, list):
        raise InvalidInput("nothing imported: expected a JSON array of facts")
    errors: list[str] = []
    facts: list[tuple[str, Fact]] = []
    for index, item in enumerate(items, start=1):
        try:
            facts.append((f"item {index}", parse_fact(item)))
        except _LineError as exc:
            errors.append(f"item {index}: {exc}")
    _check_duplicates(facts, errors)
    if errors:
        _fail(errors, len(errors))
    return [f for _, f in facts], []


def _parse_jsonl(text: str) -> tuple[list[Fact], list[CycleRecord]]:
    errors: list[str] = []
    facts: list[tuple[str, Fact]] = []
    records: list[CycleRecord] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = msgspec.json.decode(line)
            if not isinstance(obj, dict):
                raise _LineError("not a JSON object")
            kind = obj.get("type")
            if kind == "header":
                if obj.get("format") != JSONL_FORMAT:
                    raise _LineError("header names an unknown format")
            elif kind == "fact":
                facts.append((f"line {number}", parse_fact(obj.get("fact"))))
            elif kind == "cycle":
                records.append(_parse_record(obj.get("record")))
            elif kind is None and "id" in obj and "text" in obj:
                facts.append((f"line {number}", parse_fact(obj)))
            else:
                raise _LineError(f"unknown entry type {kind!r}")
        except msgspec.DecodeError as exc:
            errors.append(f"line {number}: malformed JSON ({exc})")
        except RecursionError:
            errors.append(f"line {number}: JSON nested too deeply")
        except _LineError as exc:
            errors.append(f"line {number}: {exc}")
    _check_duplicates(facts, errors)
    if errors:
        _fail(errors, len(errors))
    if not facts and not records:
        raise InvalidInput("nothing imported: the file holds no facts")
    return [f for _, f in facts], records


def import_file(store: Store, data: bytes) -> tuple[int, int, int, int]:
    facts, records = parse_import(data)
    try:
        result = store.import_all(facts, records)
    except GraymatterError as exc:
        raise type(exc)(f"nothing imported: {exc}") from None
    return result.facts_added, result.facts_skipped, result.records_added, result.records_skipped
