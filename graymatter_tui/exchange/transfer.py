"""Export and import: our JSON Lines format, upstream's `memories.json`, and Markdown.

Import is all-or-nothing: every line is parsed and validated (`import_parse`) before one
transaction writes anything, and every bad line is reported by number.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from graymatter_tui import __version__
from graymatter_tui.core import clock
from graymatter_tui.core.errors import GraymatterError, InvalidInput
from graymatter_tui.core.model import Fact, cycle_to_dict, fact_to_dict, probe_to_dict
from graymatter_tui.core.progress import Report
from graymatter_tui.core.retirement import retirement_key, retirement_of
from graymatter_tui.core.textsafe import neutralise
from graymatter_tui.core.words import counted
from graymatter_tui.exchange.import_parse import (
    JSONL_FORMAT,
    MARKDOWN_HEADING,
    ParsedImport,
    parse_fact,
    parse_import,
)
from graymatter_tui.exchange.output_file import write_output
from graymatter_tui.storage import ImportConflicts, ImportResult, MemoryStore, OnConflict

__all__ = [
    "FORMATS",
    "ParsedImport",
    "export_bytes",
    "export_file",
    "export_json",
    "export_jsonl",
    "export_markdown",
    "import_file",
    "import_parsed",
    "parse_fact",
    "parse_import",
]

FORMATS = ("jsonl", "json", "markdown")
_encode = msgspec.json.Encoder().encode
_REPORT_EVERY = 2000


def _facts(store: MemoryStore, agent: str | None) -> list[Fact]:
    facts = store.all_facts()
    return [f for f in facts if agent is None or f.agent_id == agent]


def export_jsonl(
    store: MemoryStore, agent: str | None = None, progress: Report | None = None
) -> Iterator[bytes]:
    """Header, then every fact (tombstones included), every journal record, and every
    probe (recall queries cycles are checked against)."""
    yield _encode(
        {
            "type": "header",
            "format": JSONL_FORMAT,
            "version": 1,
            "exported_at": clock.format_time(store.now()),
            "exported_by": f"graymatter-tui {__version__}",
        }
    )
    facts = _facts(store, agent)
    records = store.records(agent)
    journal = {r.cycle_id: r for r in records}
    for done, fact in enumerate(facts, start=1):
        # `retired_by` names the revert or review that retired a fact (import ignores it:
        # the journal records below say the same).
        shown = {**fact_to_dict(fact), **retirement_key(retirement_of(fact, journal.get))}
        yield _encode({"type": "fact", "fact": shown})
        if progress is not None and (done % _REPORT_EVERY == 0 or done == len(facts)):
            progress("exporting", done, len(facts))
    for record in reversed(records):
        yield _encode({"type": "cycle", "record": cycle_to_dict(record)})
    for probe in store.probes(agent):
        yield _encode({"type": "probe", "probe": probe_to_dict(probe)})


def upstream_fact(fact: Fact) -> dict[str, Any]:
    """A fact shaped as upstream GrayMatter writes it: empty optional fields omitted, and
    our provenance left out (upstream has no such field; ADR 0032)."""
    out = fact_to_dict(fact)
    out.pop("source", None)
    if not out["superseded_by"]:
        del out["superseded_by"]
    if not out["pinned"]:
        del out["pinned"]
    if out["pinned_at"] is None:
        del out["pinned_at"]
    if not out["cycle_id"]:
        del out["cycle_id"]
    return out


def export_json(
    store: MemoryStore, agent: str | None = None, progress: Report | None = None
) -> bytes:
    """Upstream's `memories.json`: one array of fact objects, pretty-printed."""
    facts = _facts(store, agent)
    items = []
    for done, fact in enumerate(facts, start=1):
        items.append(upstream_fact(fact))
        if progress is not None and (done % _REPORT_EVERY == 0 or done == len(facts)):
            progress("exporting", done, len(facts))
    return msgspec.json.format(_encode(items), indent=2)


def export_markdown(
    store: MemoryStore, agent: str | None = None, progress: Report | None = None
) -> str:
    facts = _facts(store, agent)
    journal = {r.cycle_id: r for r in store.records(agent)}
    lines = [MARKDOWN_HEADING, ""]
    current = None
    for done, fact in enumerate(sorted(facts, key=lambda f: (f.agent_id, f.id)), start=1):
        if progress is not None and (done % _REPORT_EVERY == 0 or done == len(facts)):
            progress("exporting", done, len(facts))
        if fact.agent_id != current:
            current = fact.agent_id
            lines += [f"## {current}", ""]
        flags = []
        if fact.pinned:
            flags.append("pinned")
        retirement = retirement_of(fact, journal.get)
        if retirement is not None:
            flags.append(retirement.describe())
        elif fact.is_retired:
            flags.append("retired")
        elif fact.is_tombstone:
            flags.append(f"superseded by {fact.superseded_by}")
        lines.append(f"### {fact.created_at} · {fact.id}")
        lines.append("")
        lines.append(fact.text)
        lines.append("")
        meta = f"_weight: {fact.weight:.3f} · accessed: {counted(fact.access_count, 'time')}_"
        if flags:
            meta += f" · _{', '.join(flags)}_"
        lines += [meta, ""]
    return "\n".join(lines)


def export_bytes(
    store: MemoryStore,
    fmt: str = "jsonl",
    agent: str | None = None,
    *,
    terminal: bool = False,
    progress: Report | None = None,
) -> bytes:
    """The whole export in `fmt`; `terminal` neutralises Markdown meant for a screen."""
    if fmt == "jsonl":
        return b"".join(line + b"\n" for line in export_jsonl(store, agent, progress))
    if fmt == "json":
        return export_json(store, agent, progress) + b"\n"
    if fmt == "markdown":
        text = export_markdown(store, agent, progress)
        return (neutralise(text) if terminal else text).encode("utf-8")
    raise InvalidInput(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")


def export_file(
    store: MemoryStore,
    target: Path | None,
    fmt: str = "jsonl",
    agent: str | None = None,
    *,
    terminal: bool = False,
    progress: Report | None = None,
) -> int:
    """Export to `target` (None: standard output) by output_file's rules; the one export
    path of the CLI and the TUI. Returns the number of bytes written."""
    data = export_bytes(store, fmt, agent, terminal=terminal, progress=progress)
    write_output(data, target, protect=store.own_files())
    return len(data)


# ---- import ------------------------------------------------------------------------------
def import_file(
    store: MemoryStore,
    data: bytes,
    *,
    on_conflict: OnConflict = "refuse",
    progress: Report | None = None,
) -> ImportResult:
    """Parse and validate the whole file, then write it in one transaction, or nothing.
    See ADR 0013 for what happens to ids the store already holds."""
    return import_parsed(
        store, parse_import(data, progress), on_conflict=on_conflict, progress=progress
    )


def import_parsed(
    store: MemoryStore,
    parsed: ParsedImport,
    *,
    on_conflict: OnConflict = "refuse",
    progress: Report | None = None,
) -> ImportResult:
    """Write a file `parse_import` read, in one transaction, or nothing (a caller that
    must not create a store for a file that cannot be imported parses it first)."""
    try:
        return store.import_all(
            parsed.facts,
            parsed.records,
            fact_where=parsed.fact_where,
            record_where=parsed.record_where,
            on_conflict=on_conflict,
            progress=progress,
            probes=parsed.probes,
        )
    except ImportConflicts:
        raise  # the caller words it (it may offer a way to import anyway)
    except GraymatterError as exc:
        raise type(exc)(f"nothing imported: {exc}") from None
