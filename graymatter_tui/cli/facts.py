"""Commands over individual facts: remember, list, show, pin, unpin, revise, retire."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graymatter_tui.cli.common import common_options, open_reader, open_store
from graymatter_tui.cli.explain import explanation_lines, explanations
from graymatter_tui.cli.output import emit_json, fact_line, note, one_line, say, warn
from graymatter_tui.cli.params import checked_by
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import FACT_STATES, CycleRecord, Fact, cycle_to_dict, fact_to_dict
from graymatter_tui.core.retirement import retirement_key, retirement_of
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted
from graymatter_tui.recall.ranking import RecallWeights, check_query, rank, recall
from graymatter_tui.storage import validate_fact_id
from graymatter_tui.views.presentation import fact_fields

if TYPE_CHECKING:
    from graymatter_tui.embedding.query import VectorUse

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


@click.command()
@click.argument("agent")
@click.argument("text")
@click.option("--pin", is_flag=True, help="Pin the new fact (exempt from decay and consolidation).")
@common_options
def remember(agent: str, text: str, pin: bool, data_dir: Path | None, as_json: bool) -> None:
    """Store a fact for AGENT and print its id. TEXT '-' reads standard input.

    A fact that duplicates or may update a live fact of AGENT is stored, and the pair is
    held for review (a note on stderr names it; `review show ID` draws it)."""
    validate_agent(agent)
    written = open_store(data_dir).remember(agent, _read_text(text), pinned=pin)
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
@common_options
def list_facts(
    agent: str | None,
    state: str,
    limit: int | None,
    before: str | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """List facts, newest first (all agents unless AGENT is given)."""
    if agent is not None:
        validate_agent(agent)
    store = open_reader(data_dir, as_json=as_json)
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
    for key, value in rows:
        say(f"{key:>9}: {one_line(value)}")
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
@common_options
def revise(fact_id: str, text: str, data_dir: Path | None, as_json: bool) -> None:
    """Replace a fact's text: a new fact, and the old one tombstoned pointing at it."""
    fact_id = validate_fact_id(fact_id)
    revision, _tomb = open_store(data_dir).revise(fact_id, _read_text(text))
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
        return RecallWeights.parse("1.0,0.1")
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
    help="KEYWORD,RECENCY or VECTOR,KEYWORD,RECENCY fusion weights "
    "(default $GRAYMATTER_RECALL_WEIGHTS or 1.0,1.0,0.1).",
)
@click.option("--preview", is_flag=True, help="Rank without recording the access.")
@click.option(
    "--explain",
    is_flag=True,
    help="Say why each fact ranked (signal ranks, score, weight, source) and what it replaced.",
)
@common_options
def recall_cmd(
    agent: str,
    query: str,
    k: int,
    weights: RecallWeights | None,
    preview: bool,
    explain: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Ranked live facts of AGENT for QUERY (records the access unless --preview)."""
    fusion = weights or _weights_from_env()
    validate_agent(agent)
    check_query(query)
    store = open_reader(data_dir, as_json=as_json) if preview else open_store(data_dir)
    from graymatter_tui.embedding.query import from_env, use_of  # numpy, httpx only if used

    run = rank if preview else recall
    vectors = from_env(store)
    hits = run(store, agent, query, k=k, weights=fusion, vectors=vectors)
    _say_vector_use(use_of(vectors) if vectors is not None else None, explain=explain)
    why = explanations(store, agent, hits) if explain else [{} for _ in hits]
    if as_json:
        emit_json(
            [
                {"id": h.fact.id, "text": h.fact.text, "score": round(h.score, 6), **w}
                for h, w in zip(hits, why, strict=True)
            ]
        )
        return
    if not hits:
        say("no matching facts")
    for hit, w in zip(hits, why, strict=True):
        say(f"{hit.score:.4f}  {hit.fact.id}  {one_line(hit.fact.text)}")
        if explain:
            for line in explanation_lines(w):
                say(f"    {line}")


def _say_vector_use(use: VectorUse | None, *, explain: bool) -> None:
    """A failed embedder is said on stderr (the ranking is keyword and recency only);
    with --explain, any other reason the vector signal was not used as well."""
    if use is None or use.used:
        return
    if use.failed:
        warn(f"ranked on keyword and recency only: the embedder failed: {use.reason}")
    elif explain:
        note(f"ranked on keyword and recency only: {use.reason}")
