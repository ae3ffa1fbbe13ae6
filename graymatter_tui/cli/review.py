"""`review`: the queue of agents' changes held by `mcp --review` (ADR 0027), and of the
duplicates and possible updates found when facts are written. A person
lists them, reads one as a diff, and approves (applied in one transaction, or discarded
as stale: exit 3, as for a consolidation whose proposal was not applied) or rejects."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from graymatter_tui.cli.common import common_options, open_reader, open_store
from graymatter_tui.cli.output import emit_json, one_line, say
from graymatter_tui.consolidation.diff import build_review_diff
from graymatter_tui.core import clock
from graymatter_tui.core.confidence import shown
from graymatter_tui.core.model import (
    REVIEW_STATUSES,
    CycleRecord,
    ReviewProposal,
    cycle_to_dict,
    proposal_to_dict,
)
from graymatter_tui.storage import MemoryStore, ReviewDecision
from graymatter_tui.storage.review_ops import validate_proposal_id, validate_reason

EXIT_NOT_APPLIED = 3  # as `consolidate`: the decision was made but nothing was applied


def _payload(proposal: ReviewProposal, record: CycleRecord | None) -> dict[str, Any]:
    out = proposal_to_dict(proposal)
    out["record"] = cycle_to_dict(record) if record is not None else None
    return out


def print_proposal(proposal: ReviewProposal) -> None:
    """A held change for a person: who asked what, when, its status, then the diff."""
    say(
        one_line(
            f"proposal {proposal.id}  {proposal.agent_id}  {proposal.action}  {proposal.status}"
        )
    )
    if proposal.is_pair:
        say(one_line(f"  {proposal.found_how()} at {proposal.created_at}"))
    else:
        say(one_line(f"  asked by {proposal.source or 'unknown'} at {proposal.created_at}"))
    if proposal.confidence is not None:
        say(one_line(f"  confidence {shown(proposal.confidence)} (of the fact it writes)"))
    if not proposal.pending:
        say(one_line(f"  {proposal.status} by {proposal.decided_by} at {proposal.decided_at}"))
    if proposal.why:
        say(f"  {proposal.action.replace('_', ' ')}: {one_line(proposal.why)}")
    if proposal.reason:
        say(f"  reason: {one_line(proposal.reason)}")
    if proposal.record_id:
        say(f"  journal record {proposal.record_id}")
    diff = build_review_diff(proposal)
    say("")
    for row in diff.rows:
        head = f"  {row.sign} {row.id or '':<26} "
        say(f"{head}{one_line(row.text)}")
        say(f"    {one_line(row.note)}")
    say(f"  {diff.counts_line}")


@click.group(name="review")
def review() -> None:
    """Held for review: agents' changes (`mcp --review`), duplicates and possible updates.

    List, show, approve, reject."""


@review.command(name="list")
@click.argument("agent", required=False)
@click.option(
    "--status",
    type=click.Choice([*REVIEW_STATUSES, "all"]),
    default="pending",
    show_default=True,
    help="Which proposals to list.",
)
@common_options
def list_proposals(agent: str | None, status: str, data_dir: Path | None, as_json: bool) -> None:
    """Held changes, newest first (pending ones unless --status says otherwise)."""
    store = open_reader(data_dir, as_json=as_json)
    wanted = None if status == "all" else status
    proposals = store.proposals(agent, status=wanted)  # type: ignore[arg-type]
    if as_json:
        emit_json([proposal_to_dict(p) for p in proposals])
        return
    if not proposals:
        say("nothing held for review" if status == "pending" else f"no {status} proposals")
    now = store.now()
    for p in proposals:
        what = p.text if p.action == "add" else p.target
        arrow = f" → {p.text}" if p.action in ("update", "possible_update") else ""
        if p.action == "duplicate":
            what, arrow = p.text, f" ≈ {p.target}"
        age = clock.short_age(now, p.created_at)
        say(
            one_line(
                f"{p.id}  {age:>4}  {p.agent_id[:24]:<24} {p.action:<6} {p.status:<9} {what}{arrow}"
            )
        )


@review.command(name="show")
@click.argument("proposal_id", metavar="ID")
@common_options
def show_proposal(proposal_id: str, data_dir: Path | None, as_json: bool) -> None:
    """One held change as a diff (− what goes, + what it writes), with its decision."""
    proposal_id = validate_proposal_id(proposal_id)
    store = open_reader(data_dir, as_json=as_json)
    proposal = store.require_proposal(proposal_id)
    if as_json:
        record = store.find_record(proposal.record_id) if proposal.record_id else None
        emit_json(_payload(proposal, record))
        return
    print_proposal(proposal)


def _report(decision: ReviewDecision, as_json: bool) -> None:
    proposal, record = decision.proposal, decision.record
    if as_json:
        emit_json(_payload(proposal, record))
    elif decision.applied:
        wrote = f", wrote {record.summary_id}" if record.summary_id else ""
        gone = f", {len(record.consumed)} tombstoned" if record.consumed else ""
        say(
            one_line(
                f"approved {proposal.action} {proposal.id}{wrote}{gone} "
                f"(journal record {record.cycle_id}; `revert {record.cycle_id}` undoes it)"
            )
        )
    elif proposal.status == "discarded":
        say(one_line(f"discarded {proposal.id}, nothing applied: {proposal.reason}"))
    else:
        why = f": {proposal.reason}" if proposal.reason else ""
        say(one_line(f"rejected {proposal.action} {proposal.id}{why}"))
    if proposal.status == "discarded":
        sys.exit(EXIT_NOT_APPLIED)


@review.command(name="approve")
@click.argument("proposal_id", metavar="ID")
@common_options
def approve(proposal_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Apply a held change in one transaction. Exit 3 when it is discarded as stale (a
    fact it names changed since it was held)."""
    proposal_id = validate_proposal_id(proposal_id)
    store: MemoryStore = open_store(data_dir)
    _report(store.approve_proposal(proposal_id), as_json)


@review.command(name="reject")
@click.argument("proposal_id", metavar="ID")
@click.option("--reason", default="", help="Why (kept in the proposal and the journal).")
@common_options
def reject(proposal_id: str, reason: str, data_dir: Path | None, as_json: bool) -> None:
    """Refuse a held change; nothing is applied."""
    proposal_id = validate_proposal_id(proposal_id)
    validate_reason(reason)
    store: MemoryStore = open_store(data_dir)
    _report(store.reject_proposal(proposal_id, reason), as_json)
