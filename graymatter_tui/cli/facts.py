"""Commands over individual facts: remember, list, show, pin, unpin, revise, retire."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import msgspec

from graymatter_tui.cli.common import common_options, open_reader, open_store
from graymatter_tui.cli.explain import explanation_lines, explanations
from graymatter_tui.cli.output import emit_json, fact_line, note, one_line, say, warn
from graymatter_tui.cli.params import as_of_option, checked_by
from graymatter_tui.core.confidence import Confidence, parse_confidence, parse_weight
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import FACT_STATES, CycleRecord, Fact, cycle_to_dict, fact_to_dict
from graymatter_tui.core.retirement import retirement_key, retirement_of
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted
from graymatter_tui.recall.past import live_then, rank_as_of
from graymatter_tui.recall.ranking import Hit, RankOptions, RecallWeights, check_query, rank, recall
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import MemoryStore, PastFacts, validate_fact_id
from graymatter_tui.views.past import (
    APPROXIMATE_NOTE,
    ending_said,
    event_line,
    events,
    heading,
    past_keys,
    when,
)
from graymatter_tui.views.presentation import fact_fields

if TYPE_CHECKING:
    from graymatter_tui.embedding.query import VectorUse

F = TypeVar("F", bound=Callable[..., Any])

# `echo x | remember A -` should store "x", as `$(...)` in a shell would.
_TRAILING_NEWLINES = re.compile(r"(?:\r?\n)+\Z")


def _read_text(text: str) -> str:
    """TEXT itself, or for '-' standard input without its trailing newlines."""
    if text == "-":
        data = sys.stdin.buffer.read()
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"text on stdin is not valid UTF-8 (byte {exc.start})") from None
        return _TRAILING_NEWLINES.sub("", decoded)
    return text


def _print_fact(fact: Fact, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(fact_to_dict(fact))
    else:
        say(f"{verb} {fact.id}")


def _confidence_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--confidence",
        default=None,
        metavar="LEVEL",
        callback=checked_by(lambda raw: parse_confidence(raw, "confidence")),
        help=help_text,
    )


@click.command()
@click.argument("agent")
@click.argument("text")
@click.option("--pin", is_flag=True, help="Pin the new fact (exempt from decay and consolidation).")
@_confidence_option(
    "How sure the writer is: verified, inferred or unverified (default: none, unknown)."
)
@common_options
def remember(
    agent: str,
    text: str,
    pin: bool,
    confidence: Confidence | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Store a fact for AGENT and print its id. TEXT '-' reads standard input.

    A fact that duplicates or may update a live fact of AGENT is stored, and the pair is
    held for review (a note on stderr names it; `review show ID` draws it)."""
    validate_agent(agent)
    written = open_store(data_dir).remember(
        agent, _read_text(text), pinned=pin, confidence=confidence
    )
    fact = written.fact
    if as_json:
        emit_json(fact_to_dict(fact))  # the fact as `show` prints it; the items: `review list`
    else:
        say(fact.id)
    for item in written.held:
        kind = item.action.replace("_", " ")
        note(f"{kind} of {item.held_id} held for review as {item.id} ({item.why})")


@click.command(name="list")
@click.argument("agent", required=False)
@click.option(
    "--state",
    type=click.Choice(FACT_STATES),
    default="live",
    show_default=True,
    help="Live facts, tombstones, or both.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N facts.")
@click.option(
    "--before",
    default=None,
    callback=checked_by(validate_fact_id),
    help="Keyset paging: facts older than this id.",
)
@as_of_option(
    "Memory as it was: the facts of that moment (a time, RFC 3339 or a date in UTC, or "
    "a journal record id: just before it), each with what happened to it since."
)
@common_options
def list_facts(
    agent: str | None,
    state: str,
    limit: int | None,
    before: str | None,
    as_of: AsOf | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """List facts, newest first (all agents unless AGENT is given)."""
    if agent is not None:
        validate_agent(agent)
    store = open_reader(data_dir, as_json=as_json)
    if as_of is not None:
        past = store.past_facts(agent, as_of, state=state, limit=limit, before=before)  # type: ignore[arg-type]
        _print_past(store, past, state, as_json)
        return
    facts = store.list_facts(agent, state, limit=limit, before=before)  # type: ignore[arg-type]
    retired = {f.id: r for f in facts if (r := retirement_of(f, store.find_record))}
    if as_json:
        emit_json([{**fact_to_dict(f), **retirement_key(retired.get(f.id))} for f in facts])
        return
    now = store.now()
    for fact in facts:
        say(fact_line(fact, now, with_agent=agent is None, retirement=retired.get(fact.id)))
    if not facts:
        say("no facts")


def _print_past(store: MemoryStore, past: PastFacts, state: str, as_json: bool) -> None:
    """`list --as-of`: the facts of the moment with what happened to each since."""
    facts = [p.fact for p in past.facts if p.fact is not None]
    retired = {f.id: r for f in facts if (r := retirement_of(f, store.find_record))}
    moment = past.moment
    if as_json:
        emit_json(
            [
                {
                    **fact_to_dict(p.fact),
                    **retirement_key(retired.get(p.fact_id)),
                    **past_keys(p, moment),
                }
                for p in past.facts
                if p.fact is not None
            ]
        )
        return
    now = store.now()
    say(heading(past, state))
    for item in past.facts:
        if item.fact is None:
            continue
        # A fact live then is shown as it stood, not marked † (what ended it since is a
        # ↳ line below); a tombstone then is shown as one.
        shown, retirement = item.fact, retired.get(item.fact_id)
        if item.then == "live":
            shown, retirement = msgspec.structs.replace(shown, superseded_by=""), None
        line = fact_line(shown, now, with_agent=past.agent is None, retirement=retirement)
        say(line + ("  (pruned since)" if item.now == "pruned" else ""))
        if item.ended is not None:
            say(f"    † {when(item.ended.at, item.ended.approximate)}  {ending_said(item.ended)}")
        for event in events(item, moment):
            say(f"    ↳ {event_line(event)}")
    if past.approximate or past.derived:
        note(APPROXIMATE_NOTE)  # on stderr: the list itself stays greppable


@click.command()
@click.argument("fact_id", metavar="ID")
@common_options
def show(fact_id: str, data_dir: Path | None, as_json: bool) -> None:
    """One fact with its receipt chain: what replaced it, what it consumed, its cycle."""
    fact_id = validate_fact_id(fact_id)
    result = open_reader(data_dir, as_json=as_json).show(fact_id)
    retirement = result.retirement
    if as_json:
        emit_json(
            {
                "fact": {**fact_to_dict(result.fact), **retirement_key(retirement)},
                "replaced_by": fact_to_dict(result.replaced_by) if result.replaced_by else None,
                "consumed": [fact_to_dict(f) for f in result.consumed],
                "cycle": cycle_to_dict(result.cycle) if result.cycle else None,
                "retirement": cycle_to_dict(retirement.record) if retirement else None,
                "restored": [fact_to_dict(f) for f in result.restored],
            }
        )
        return
    fact = result.fact
    rows = fact_fields(fact, retirement)
    width = max(len(key) for key, _ in rows)  # 9 ("pinned at"), 10 with a confidence
    for key, value in rows:
        say(f"{key:>{width}}: {one_line(value)}")
    say("")
    say(fact.text)
    if result.replaced_by is not None:
        say("")
        say(f"replaced by {result.replaced_by.id}:")
        say("  " + one_line(result.replaced_by.text))
    elif fact.is_tombstone and not fact.is_retired:
        say("")
        say(f"replaced by {fact.superseded_by} (pruned since; its copy is in the journal)")
    if result.consumed:
        say("")
        say(f"consumed {counted(len(result.consumed), 'fact')}:")
        for item in result.consumed:
            say(f"  − {item.id}  " + one_line(item.text))
    if retirement is not None and retirement.by_revert and retirement.restored:
        say("")
        say(
            f"consumed {counted(len(retirement.restored), 'fact')}, restored by revert "
            f"{retirement.record.cycle_id}:"
        )
        found = {f.id: f for f in result.restored}
        for fact_id in retirement.restored:
            back = found.get(fact_id)
            text = one_line(back.text) if back else "(pruned since; its copy is in the journal)"
            say(f"  ↺ {fact_id}  {text}")
    if result.cycle is not None:
        say("")
        say(record_line(result.cycle))


def record_line(cycle: CycleRecord) -> str:
    """The journal record a fact names, in one line: a cycle's outcome, or the review
    that approved an agent's change; a reverted one says by which revert."""
    if cycle.kind == "review":  # an agent's change a person approved: the receipt
        line = (
            f"review {cycle.cycle_id}: {cycle.action} asked by {cycle.asked_by} as "
            f"proposal {cycle.proposal_id}, {cycle.outcome} by {cycle.decided_by}"
        )
    else:
        outcome = cycle.outcome or "unfinished"
        line = f"cycle {cycle.cycle_id}: {outcome} ({cycle.summariser or 'none'})"
    if cycle.reverted_by:
        line += f", reverted by {cycle.reverted_by}"
    return one_line(line)


@click.command()
@click.argument("fact_id", metavar="ID")
@common_options
def pin(fact_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Pin a live fact: never decayed, consolidated or pruned."""
    fact_id = validate_fact_id(fact_id)  # before the open: a bad id creates nothing
    _print_fact(open_store(data_dir).pin(fact_id), as_json, "pinned")


@click.command()
@click.argument("fact_id", metavar="ID")
@common_options
def unpin(fact_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove a fact's pin."""
    fact_id = validate_fact_id(fact_id)  # before the open: a bad id creates nothing
    _print_fact(open_store(data_dir).unpin(fact_id), as_json, "unpinned")


@click.command()
@click.argument("fact_id", metavar="ID")
@click.argument("text")
@_confidence_option(
    "The revision's confidence: verified, inferred or unverified (default: the old fact's)."
)
@common_options
def revise(
    fact_id: str, text: str, confidence: Confidence | None, data_dir: Path | None, as_json: bool
) -> None:
    """Replace a fact's text: a new fact, and the old one tombstoned pointing at it."""
    fact_id = validate_fact_id(fact_id)
    store = open_store(data_dir)
    revision, _tomb = store.revise(fact_id, _read_text(text), confidence=confidence)
    if as_json:
        emit_json(fact_to_dict(revision))
    else:
        say(f"revised {fact_id} -> {revision.id}")


@click.command()
@click.argument("fact_id", metavar="ID")
@common_options
def retire(fact_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Tombstone a fact with no replacement (it stays auditable until pruned)."""
    fact_id = validate_fact_id(fact_id)  # before the open: a bad id creates nothing
    _print_fact(open_store(data_dir).retire(fact_id), as_json, "retired")


def _weights_from_env() -> RecallWeights:
    chosen = os.environ.get("GRAYMATTER_RECALL_WEIGHTS", "").strip()
    if not chosen:
        return RecallWeights()
    try:
        return RecallWeights.parse(chosen)
    except InvalidInput as exc:
        raise InvalidInput(f"GRAYMATTER_RECALL_WEIGHTS: {exc}") from None


@click.command(name="recall")
@click.argument("agent")
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1, max=1000), default=8, show_default=True)
@click.option(
    "--weights",
    default=None,
    callback=checked_by(RecallWeights.parse),
    help="VECTOR,KEYWORD,RECENCY[,DATE] fusion weights, or KEYWORD,RECENCY with the vector "
    "weight at 0.7: score = (V·cosine + K·keyword/best keyword)/(V+K) + R·recency + D "
    "for a fact written on a date the query names (default $GRAYMATTER_RECALL_WEIGHTS or "
    "0.7,0.3,0; D 0.15).",
)
@click.option(
    "--min-confidence",
    default=None,
    metavar="LEVEL",
    callback=checked_by(lambda raw: parse_confidence(raw, "min-confidence")),
    help="Only facts at least this sure: verified, inferred or unverified (facts with no "
    "confidence pass only unverified).",
)
@click.option(
    "--confidence-weight",
    default=None,
    metavar="W",
    callback=checked_by(lambda raw: parse_weight(raw, "confidence-weight")),
    help="Rank by confidence too, 0 to 0.5: score × (1 + W) for verified, × (1 − W) for "
    "unverified; inferred and facts with no confidence unchanged (default 0).",
)
@click.option("--preview", is_flag=True, help="Rank without recording the access.")
@as_of_option(
    "Rank over the facts live at that moment (a time or a journal record id, as `list "
    "--as-of` takes it); never records an access."
)
@click.option(
    "--explain",
    is_flag=True,
    help="Say why each fact ranked (what each signal contributed to its score, their "
    "ranks, weight, source) and what it replaced.",
)
@common_options
def recall_cmd(
    agent: str,
    query: str,
    k: int,
    weights: RecallWeights | None,
    min_confidence: Confidence | None,
    confidence_weight: float | None,
    preview: bool,
    as_of: AsOf | None,
    explain: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Ranked live facts of AGENT for QUERY (records the access unless --preview)."""
    fusion = weights or _weights_from_env()
    validate_agent(agent)
    check_query(query)
    reading = preview or as_of is not None
    store = open_reader(data_dir, as_json=as_json) if reading else open_store(data_dir)
    from graymatter_tui.embedding.query import from_env, use_of  # numpy, httpx only if used

    vectors = from_env(store)
    options: RankOptions = {
        "k": k,
        "weights": fusion,
        "vectors": vectors or NO_VECTORS,
        "min_confidence": min_confidence,
        "confidence_weight": confidence_weight or 0.0,
    }
    past: PastFacts | None = None
    if as_of is not None:
        hits, past = rank_as_of(store, agent, query, as_of, **options)
    else:
        hits = (rank if preview else recall)(store, agent, query, **options)
    _say_vector_use(use_of(vectors) if vectors is not None else None, explain=explain)
    why = explanations(store, agent, hits) if explain else [{} for _ in hits]
    then = {p.fact_id: p for p in past.facts} if past is not None else {}

    def added(hit: Hit) -> dict[str, Any]:
        item = then.get(hit.fact.id)
        return past_keys(item, past.moment) if item is not None and past is not None else {}

    if as_json:
        emit_json(
            [
                {
                    "id": h.fact.id,
                    "text": h.fact.text,
                    "score": round(h.score, 6),
                    **w,
                    **added(h),
                }
                for h, w in zip(hits, why, strict=True)
            ]
        )
        return
    if past is not None:
        say(f"as of {past.moment.said()}: ranked over {counted(live_then(past), 'live fact')}")
    if not hits:
        say("no matching facts")
    for hit, w in zip(hits, why, strict=True):
        say(f"{hit.score:.4f}  {hit.fact.id}  {one_line(hit.fact.text)}")
        if explain:
            for line in explanation_lines(w):
                say(f"    {line}")
        item = then.get(hit.fact.id)
        if item is not None and past is not None:
            for event in events(item, past.moment):
                say(f"    ↳ {event_line(event)}")
    if past is not None and (past.approximate or past.derived):
        note(APPROXIMATE_NOTE)  # on stderr: the list itself stays greppable


def _say_vector_use(use: VectorUse | None, *, explain: bool) -> None:
    """A failed embedder is said on stderr (the ranking is keyword and recency only);
    with --explain, any other reason the vector signal was not used as well."""
    if use is None or use.used:
        return
    if use.failed:
        warn(f"ranked on keyword and recency only: the embedder failed: {use.reason}")
    elif explain:
        note(f"ranked on keyword and recency only: {use.reason}")
