"""Reading an import file: our JSON Lines export or upstream's `memories.json` array.

Every entry is parsed and validated before anything is written, and every bad entry is
reported by its line (jsonl) or item (array) number. Each fact keeps where it came from,
so the store can name the line of a fact it refuses too.

Two routes, one set of rules: entries are decoded straight into typed structs, which is
fast; a file or line that does not fit them is decoded again as plain JSON and converted
field by field, which is slower but says exactly what is wrong. Both end in `_checked`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_args

import msgspec

from graymatter_tui.core import clock, provenance
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import (
    HELD_ACTIONS,
    RETIRED,
    CycleRecord,
    Fact,
    Outcome,
    Probe,
    ProbeResult,
)
from graymatter_tui.core.progress import Report
from graymatter_tui.core.summariser_names import SUMMARISERS
from graymatter_tui.core.textsafe import canonical_id, validate_agent, validate_text
from graymatter_tui.core.words import counted
from graymatter_tui.storage import validate_probe

JSONL_FORMAT = "graymatter-tui"
# The first line of `export --format markdown`: how an import knows it was handed one.
MARKDOWN_HEADING = "# graymatter-tui memory export"
MAX_REPORTED_ERRORS = 5
RECORD_OUTCOMES = (*get_args(Outcome), "")
RECORD_SUMMARISERS = (*SUMMARISERS, "")  # "": a record written before the field existed
_REPORT_EVERY = 2000


@dataclass
class ParsedImport:
    """The file's facts and journal records, each with where it was ("line 7", "item 3"),
    and its probes (jsonl only)."""

    facts: list[Fact] = field(default_factory=list)
    fact_where: list[str] = field(default_factory=list)
    records: list[CycleRecord] = field(default_factory=list)
    record_where: list[str] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)


class _EntryError(Exception):
    pass


class _Incoming(msgspec.Struct):
    """A fact as a file may hold it: types only, every value checked by `_checked`."""

    id: str
    agent_id: str
    text: str
    created_at: str
    accessed_at: str | None = None
    access_count: int = 0
    weight: float = 1.0
    superseded_by: str | None = None
    pinned: bool = False
    pinned_at: Any = None  # read only when pinned: upstream writes a zero time otherwise
    cycle_id: str | None = None
    confidence: str | None = None
    kind: str | None = None
    source: str | None = None


class _FactLine(msgspec.Struct, tag_field="type", tag="fact"):
    fact: _Incoming


class _CycleLine(msgspec.Struct, tag_field="type", tag="cycle"):
    record: CycleRecord


class _ProbeLine(msgspec.Struct, tag_field="type", tag="probe"):
    probe: Probe


class _HeaderLine(msgspec.Struct, tag_field="type", tag="header"):
    format: str = ""


_decode_line = msgspec.json.Decoder(_FactLine | _CycleLine | _ProbeLine | _HeaderLine).decode
_decode_array = msgspec.json.Decoder(list[_Incoming]).decode

_WHAT = {
    "weight": "'weight' must be a number between 0 and 1",
    "access_count": "'access_count' must be a non-negative integer",
    "pinned": "'pinned' must be true or false",
    "created_at": "'created_at' must be an RFC 3339 timestamp",
    "accessed_at": "'accessed_at' must be an RFC 3339 timestamp",
    "superseded_by": "'superseded_by' must be empty, \"agent\" or a fact id",
    "cycle_id": "'cycle_id' must be empty or a cycle id (ULID)",
    "source": "'source' must name who wrote the fact (cli, tui, import, consolidation, demo, "
    "api or mcp:<client name>)",
}
_MISSING = re.compile(r"missing required field `(\w+)`")
_AT_FIELD = re.compile(r"at `\$\.(\w+)`")


def _explain(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    missing = _MISSING.search(text)
    if missing:
        return f"missing {missing.group(1)!r}"
    at = _AT_FIELD.search(text)
    if at:
        name = at.group(1)
        return _WHAT.get(name, f"{name!r} must be a string")
    return text


def _stamp(value: str, name: str) -> str:
    """A timestamp in the stored form (UTC, microseconds, `Z`); most files hold exactly
    that form already, which is checked far faster than it is re-formatted."""
    if (
        len(value) == 27
        and value[26] == "Z"
        and value[4] == value[7] == "-"
        and value[10] == "T"
        and value[13] == value[16] == ":"
        and value[19] == "."
    ):
        try:
            datetime.fromisoformat(value)
            return value
        except ValueError:
            pass
    try:
        return clock.format_time(clock.parse_time(value))
    except InvalidInput:
        raise _EntryError(f"{name!r} is not an RFC 3339 timestamp: {value[:40]!r}") from None


class _Checker:
    """Validates facts; remembers agent names already found valid (they repeat)."""

    def __init__(self) -> None:
        self._agents: set[str] = set()

    def checked(self, item: _Incoming) -> Fact:
        fact_id = canonical_id(item.id)
        if fact_id is None:
            raise _EntryError(f"'id' is not a ULID: {item.id[:40]!r}")
        try:
            if item.agent_id not in self._agents:
                self._agents.add(validate_agent(item.agent_id))
            validate_text(item.text)
        except InvalidInput as exc:
            raise _EntryError(str(exc)) from None
        created = _stamp(item.created_at, "created_at")
        accessed = created if item.accessed_at is None else _stamp(item.accessed_at, "accessed_at")
        if not 0 <= item.weight <= 1:
            raise _EntryError(_WHAT["weight"])
        if item.access_count < 0:
            raise _EntryError(_WHAT["access_count"])
        superseded = item.superseded_by or ""
        if superseded not in ("", RETIRED):
            superseded = canonical_id(superseded) or ""
            if not superseded:
                raise _EntryError(_WHAT["superseded_by"])
        if superseded == fact_id:
            raise _EntryError("a fact cannot supersede itself")
        pinned = item.pinned and not superseded  # a tombstone is never pinned
        pinned_at: str | None = None
        if pinned:
            raw = item.pinned_at
            usable = isinstance(raw, str) and not raw.startswith("0001-01-01")
            pinned_at = _stamp(raw, "pinned_at") if usable else created
        cycle_id = item.cycle_id or ""
        if cycle_id:
            cycle_id = canonical_id(cycle_id) or ""
            if not cycle_id:
                raise _EntryError(_WHAT["cycle_id"])
        if item.source and not provenance.is_valid(item.source):
            raise _EntryError(_WHAT["source"])
        return Fact(
            id=fact_id,
            agent_id=item.agent_id,
            text=item.text,
            created_at=created,
            accessed_at=accessed,
            access_count=item.access_count,
            weight=float(item.weight),
            superseded_by=superseded,
            pinned=pinned,
            pinned_at=pinned_at,
            cycle_id=cycle_id,
            confidence=item.confidence or None,
            kind=item.kind or None,
            source=item.source or None,
        )

    def from_object(self, obj: Any) -> Fact:
        """The slow route: a fact from plain decoded JSON, with exact complaints."""
        if not isinstance(obj, dict):
            raise _EntryError("a fact must be a JSON object")
        try:
            item = msgspec.convert(obj, _Incoming)
        except msgspec.ValidationError as exc:
            raise _EntryError(_explain(exc)) from None
        return self.checked(item)


def parse_fact(obj: Any) -> Fact:
    """Validate one fact object (plain decoded JSON) from either format."""
    try:
        return _Checker().from_object(obj)
    except _EntryError as exc:
        raise InvalidInput(str(exc)) from None


def _checked_record(record: CycleRecord) -> CycleRecord:
    if canonical_id(record.cycle_id) is None:
        raise _EntryError("cycle record has no valid 'cycle_id'")
    if record.outcome not in RECORD_OUTCOMES:
        raise _EntryError(f"cycle record has an unknown outcome {record.outcome[:20]!r}")
    if record.summariser not in RECORD_SUMMARISERS:
        raise _EntryError(f"cycle record names an unknown summariser {record.summariser[:20]!r}")
    try:
        validate_agent(record.agent_id)
    except InvalidInput as exc:
        raise _EntryError(f"cycle record: {exc}") from None
    if record.kind == "review" and (
        record.action not in HELD_ACTIONS or canonical_id(record.proposal_id) is None
    ):
        raise _EntryError("review record has no valid 'action' and 'proposal_id'")
    for ref in (record.summary_id, record.reverted_by, record.reverted_cycle_id):
        if ref and canonical_id(ref) is None:
            raise _EntryError(_WHAT["cycle_id"])
    if any(f.source and not provenance.is_valid(f.source) for f in record.pruned):
        raise _EntryError(f"cycle record: a pruned fact's {_WHAT['source']}")
    return _canonical_record(record)


def _canonical(value: str) -> str:
    """An id in its canonical (upper-case) form; anything else (``, `agent`, a summary
    mark, a summariser's invented id kept with the reason it was ignored) as it is."""
    return canonical_id(value) or value


def _canonical_ids(values: list[str]) -> list[str]:
    return [_canonical(v) for v in values]


def _canonical_json(value: Any) -> Any:
    """Plain JSON (a summariser's proposal, a stage's details) with every string that is
    an id in canonical form."""
    if isinstance(value, str):
        return _canonical(value)
    if isinstance(value, list):
        return [_canonical_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _canonical_json(v) for k, v in value.items()}
    return value


def _canonical_fact(fact: Fact) -> Fact:
    """A pruned copy in a journal record with its ids in canonical form."""
    return msgspec.structs.replace(
        fact,
        id=_canonical(fact.id),
        superseded_by=_canonical(fact.superseded_by),
        cycle_id=_canonical(fact.cycle_id),
    )


def _canonical_probe_result(result: ProbeResult) -> ProbeResult:
    return msgspec.structs.replace(
        result,
        probe_id=_canonical(result.probe_id),
        before=_canonical_ids(result.before),
        after=_canonical_ids(result.after),
        lost=_canonical_ids(result.lost),
        replaced=_canonical_ids(result.replaced),
        displaced=_canonical_ids(result.displaced),
        gained=_canonical_ids(result.gained),
        moved=[msgspec.structs.replace(m, id=_canonical(m.id)) for m in result.moved],
    )


def _canonical_record(record: CycleRecord) -> CycleRecord:
    """A journal record with every id it holds in canonical form, so the receipts it
    carries name the facts the file's (canonicalised) fact lines hold. A record written
    by this program holds them so already and comes out equal."""
    return msgspec.structs.replace(
        record,
        cycle_id=_canonical(record.cycle_id),
        batch=_canonical_ids(record.batch),
        batch_facts=[msgspec.structs.replace(b, id=_canonical(b.id)) for b in record.batch_facts],
        consumed=_canonical_ids(record.consumed),
        ignored=[msgspec.structs.replace(i, id=_canonical(i.id)) for i in record.ignored],
        summary_id=_canonical(record.summary_id),
        pruned=[_canonical_fact(f) for f in record.pruned],
        verdicts=[msgspec.structs.replace(v, id=_canonical(v.id)) for v in record.verdicts],
        reverted_by=_canonical(record.reverted_by),
        reverted_cycle_id=_canonical(record.reverted_cycle_id),
        restored=_canonical_ids(record.restored),
        retired_summary_id=_canonical(record.retired_summary_id),
        proposal_id=_canonical(record.proposal_id),
        probes=[_canonical_probe_result(p) for p in record.probes],
        proposal=None if record.proposal is None else _canonical_json(record.proposal),
        stages=[
            msgspec.structs.replace(s, details=_canonical_json(s.details)) for s in record.stages
        ],
    )


def _checked_probe(probe: Probe) -> Probe:
    probe_id = canonical_id(probe.id)
    if probe_id is None:
        raise _EntryError("probe has no valid 'id'")
    try:
        validate_probe(probe.agent_id, probe.query, probe.k)
    except InvalidInput as exc:
        raise _EntryError(f"probe: {exc}") from None
    return probe if probe_id == probe.id else msgspec.structs.replace(probe, id=probe_id)


def _probe_from_object(obj: Any) -> Probe:
    if not isinstance(obj, dict):
        raise _EntryError("a probe must be a JSON object")
    try:
        return _checked_probe(msgspec.convert(obj, Probe))
    except msgspec.ValidationError as exc:
        raise _EntryError(f"bad probe: {exc}") from None


def _record_from_object(obj: Any) -> CycleRecord:
    if not isinstance(obj, dict):
        raise _EntryError("a cycle record must be a JSON object")
    try:
        record = msgspec.convert(obj, CycleRecord)
    except msgspec.ValidationError as exc:
        outcome = obj.get("outcome")
        if isinstance(outcome, str) and outcome not in RECORD_OUTCOMES:
            raise _EntryError(f"cycle record has an unknown outcome {outcome[:20]!r}") from None
        raise _EntryError(f"bad cycle record: {exc}") from None
    return _checked_record(record)


def parse_import(data: bytes, progress: Report | None = None) -> ParsedImport:
    """Parse a whole import file; raise InvalidInput naming every bad entry (first few)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"nothing imported: the file is not UTF-8 (byte {exc.start})") from None
    if is_markdown_export(text):
        raise InvalidInput(
            "nothing imported: markdown is an export-only format; import a jsonl export "
            "(export --format jsonl) or upstream's memories.json"
        )
    if text.lstrip().startswith("["):
        return _parse_array(text, progress)
    return _parse_jsonl(text, progress)


def is_markdown_export(text: str) -> bool:
    """Whether `text` is an `export --format markdown` file: its first line, past any
    byte-order mark and blank lines, is the export's heading (whatever the file's name)."""
    first = text.lstrip("\ufeff \t\r\n").partition("\n")[0]
    return first.rstrip() == MARKDOWN_HEADING


def _fail(errors: list[str]) -> None:
    total = len(errors)
    shown = "; ".join(errors[:MAX_REPORTED_ERRORS])
    more = f"; and {total - MAX_REPORTED_ERRORS} more" if total > MAX_REPORTED_ERRORS else ""
    bad = counted(total, "bad entry", "bad entries")
    raise InvalidInput(f"nothing imported: {bad}: {shown}{more}")


def _check_duplicates(parsed: ParsedImport, errors: list[str]) -> None:
    for kind, ids, where in (
        ("id", [f.id for f in parsed.facts], parsed.fact_where),
        ("cycle id", [r.cycle_id for r in parsed.records], parsed.record_where),
    ):
        seen: dict[str, str] = {}
        for item_id, place in zip(ids, where, strict=True):
            if item_id in seen:
                errors.append(f"{place}: duplicate {kind} {item_id} (also at {seen[item_id]})")
            else:
                seen[item_id] = place


def _parse_array(text: str, progress: Report | None) -> ParsedImport:
    """Upstream's `memories.json`: one array of fact objects."""
    checker = _Checker()
    try:
        typed: list[Any] = _decode_array(text)
        convert: Callable[[Any], Fact] = checker.checked
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        try:
            typed = msgspec.json.decode(text)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"nothing imported: the JSON array is malformed ({exc})") from None
        except RecursionError:
            raise InvalidInput("nothing imported: the JSON is nested too deeply") from None
        if not isinstance(typed, list):
            raise InvalidInput("nothing imported: expected a JSON array of facts") from None
        convert = checker.from_object
    parsed = ParsedImport()
    errors: list[str] = []
    total = len(typed)
    for index, item in enumerate(typed, start=1):
        try:
            parsed.facts.append(convert(item))
            parsed.fact_where.append(f"item {index}")
        except _EntryError as exc:
            errors.append(f"item {index}: {exc}")
        if progress is not None and (index % _REPORT_EVERY == 0 or index == total):
            progress("reading", index, total)
    _check_duplicates(parsed, errors)
    if errors:
        _fail(errors)
    return parsed


def _parse_jsonl(text: str, progress: Report | None) -> ParsedImport:
    checker = _Checker()
    parsed = ParsedImport()
    errors: list[str] = []
    lines = text.splitlines()
    total = len(lines)
    for number, line in enumerate(lines, start=1):
        if progress is not None and (number % _REPORT_EVERY == 0 or number == total):
            progress("reading", number, total)
        if not line.strip():
            continue
        try:
            try:
                entry = _decode_line(line)
            except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
                _parse_line_slowly(line, number, checker, parsed)
                continue
            if isinstance(entry, _FactLine):
                parsed.facts.append(checker.checked(entry.fact))
                parsed.fact_where.append(f"line {number}")
            elif isinstance(entry, _CycleLine):
                parsed.records.append(_checked_record(entry.record))
                parsed.record_where.append(f"line {number}")
            elif isinstance(entry, _ProbeLine):
                parsed.probes.append(_checked_probe(entry.probe))
            elif entry.format != JSONL_FORMAT:
                raise _EntryError("header names an unknown format")
        except msgspec.DecodeError as exc:
            errors.append(f"line {number}: malformed JSON ({exc})")
        except RecursionError:
            errors.append(f"line {number}: JSON nested too deeply")
        except _EntryError as exc:
            errors.append(f"line {number}: {exc}")
    _check_duplicates(parsed, errors)
    if errors:
        _fail(errors)
    if not parsed.facts and not parsed.records and not parsed.probes:
        raise InvalidInput("nothing imported: the file holds no facts")
    return parsed


def _parse_line_slowly(line: str, number: int, checker: _Checker, parsed: ParsedImport) -> None:
    """A line the typed route refused: decode it plainly and say exactly what is wrong."""
    obj = msgspec.json.decode(line)
    if not isinstance(obj, dict):
        raise _EntryError("not a JSON object")
    kind = obj.get("type")
    if kind == "header":
        if obj.get("format") != JSONL_FORMAT:
            raise _EntryError("header names an unknown format")
    elif kind == "fact":
        parsed.facts.append(checker.from_object(obj.get("fact")))
        parsed.fact_where.append(f"line {number}")
    elif kind == "cycle":
        parsed.records.append(_record_from_object(obj.get("record")))
        parsed.record_where.append(f"line {number}")
    elif kind == "probe":
        parsed.probes.append(_probe_from_object(obj.get("probe")))
    elif kind is None and "id" in obj and "text" in obj:
        parsed.facts.append(checker.from_object(obj))
        parsed.fact_where.append(f"line {number}")
    else:
        raise _EntryError(f"unknown entry type {kind!r}")
