"""Memory as it was, as the CLI and the TUI show it alike: what happened to a fact after
a past moment, in words and in JSON. Values are ids and times (stored text is shown by
the callers, through `say` or `literal`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graymatter_tui.core.lifespan import Ending, Moment
from graymatter_tui.storage import PastFact, PastFacts

# How the text output marks a time derived after the fact (a store from before schema 6).
APPROXIMATE = "~"
APPROXIMATE_NOTE = (
    "times marked ~ are estimates: this store recorded when facts stopped being live "
    "only from its upgrade to schema 6 on; earlier ones were derived from its journal "
    "(a cycle's consumption at the cycle's end; a retirement with no activity entry left "
    "at the fact's last access, the earliest it can have been)"
)


@dataclass(frozen=True)
class Event:
    """One thing that happened to a fact after the moment: it stopped being live (`how`
    of its ending), or a revert made it live again (`restored`)."""

    at: str
    event: str  # consumed, revised, retired, pruned, restored
    by: str = ""
    record: str = ""
    record_kind: str = ""
    source: str = ""
    approximate: bool = False


def events(item: PastFact, moment: Moment) -> list[Event]:
    """What happened to `item` after `moment`, oldest first."""
    out: list[Event] = []
    for ending in item.later:
        if not moment.reached(ending.at):
            out.append(
                Event(
                    at=ending.at,
                    event=ending.how,
                    by=ending.by,
                    record=ending.record,
                    record_kind=ending.record_kind,
                    source=ending.source,
                    approximate=ending.approximate,
                )
            )
        if ending.until and not moment.reached(ending.until):
            out.append(
                Event(
                    at=ending.until,
                    event="restored",
                    record=ending.restored_by,
                    record_kind="revert",
                    approximate=ending.approximate,
                )
            )
    return sorted(out, key=lambda e: e.at)


def said(event: Event) -> str:
    """The event in words, naming the record and the facts by id."""
    record = event.record
    if event.event == "consumed":
        return f"consumed by cycle {record} into summary {event.by}"
    if event.event == "revised":
        return f"revised into {event.by}" + (f" by review {record}" if record else "")
    if event.event == "retired":
        if event.record_kind == "revert":
            return f"retired by revert {record}"
        if record:
            return f"retired by review {record}"
        return "retired by agent" + (f" ({event.source})" if event.source else "")
    if event.event == "pruned":
        return f"pruned by cycle {record}" if record else "pruned"
    return f"live again: revert {record}"


def ending_said(ending: Ending) -> str:
    """What made a fact a tombstone at the moment (`--state tombstones`)."""
    return said(
        Event(
            at=ending.at,
            event=ending.how,
            by=ending.by,
            record=ending.record,
            record_kind=ending.record_kind,
            source=ending.source,
        )
    )


def when(stamp: str, approximate: bool) -> str:
    """A time for people: `2026-12-20 12:00:00`, with `~` when it is an estimate."""
    return (APPROXIMATE if approximate else "") + stamp[:19].replace("T", " ")


def event_line(event: Event) -> str:
    return f"{when(event.at, event.approximate)}  {said(event)}"


BRIEF = {
    "consumed": "consumed by cycle",
    "revised": "revised",
    "retired": "retired",
    "pruned": "pruned by cycle",
    "restored": "live again: revert",
}


def short(item: PastFact, moment: Moment) -> str:
    """What happened to it since, in a few words (a TUI row: `12-20 12:00 consumed by
    cycle …NR8X`, then how many more events): "" when nothing has."""
    found = events(item, moment)
    if not found:
        return ""
    first = found[0]
    stamp = (APPROXIMATE if first.approximate else "") + first.at[5:16].replace("T", " ")
    words = BRIEF[first.event]
    if first.record and (first.event != "retired" or first.record_kind == "revert"):
        kind = "revert" if first.record_kind == "revert" and first.event == "retired" else ""
        words += f"{' by ' + kind if kind else ''} …{first.record[-6:]}"
    more = f" (+{len(found) - 1} later)" if len(found) > 1 else ""
    return f"{stamp} {words}{more}"


def event_to_dict(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {
        "at": event.at,
        "event": event.event,
        "by": event.by,
        "record": event.record,
        "record_kind": event.record_kind,
        "source": event.source,
        "approximate": event.approximate,
    }
    return out


def past_keys(item: PastFact, moment: Moment) -> dict[str, Any]:
    """The keys a fact's JSON gains in `--as-of` output (only added): how it stood then,
    where it is now, what happened in between, and whether a time is an estimate."""
    out: dict[str, Any] = {
        "then": item.then,
        "now": item.now,
        "later": [event_to_dict(e) for e in events(item, moment)],
        "approximate": item.approximate,
    }
    if item.ended is not None:
        out["ended"] = event_to_dict(
            Event(
                at=item.ended.at,
                event=item.ended.how,
                by=item.ended.by,
                record=item.ended.record,
                record_kind=item.ended.record_kind,
                source=item.ended.source,
                approximate=item.ended.approximate,
            )
        )
    return out


def heading(past: PastFacts, state: str) -> str:
    """`as of 2026-12-20 12:00:00 UTC: 101 live facts of support-bot; since then 2
    consumed, 1 revised`."""
    count = len(past.facts)
    noun = {"live": "live fact", "tombstones": "tombstone", "all": "fact"}[state]
    plural = noun if count == 1 else noun + "s"
    whose = f" of {past.agent}" if past.agent is not None else ""
    tally: dict[str, int] = {}
    for item in past.facts:
        for event in events(item, past.moment):
            tally[event.event] = tally.get(event.event, 0) + 1
    since = ", ".join(f"{n} {TALLY.get(name, name)}" for name, n in tally.items())
    return f"as of {past.moment.said()}: {count} {plural}{whose}" + (
        f"; since then: {since}" if since else "; nothing has happened to them since"
    )


TALLY = {"restored": "made live again by a revert"}
