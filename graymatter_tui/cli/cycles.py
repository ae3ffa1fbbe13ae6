"""Commands of the consolidation cycle: consolidate, journal, revert, doctor."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from graymatter_tui.backends.opening import open_location
from graymatter_tui.cli.common import common_options, open_reader, settings_for
from graymatter_tui.cli.output import emit_json, one_line, say, warn
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.cli.probes import hits_of, run_lines
from graymatter_tui.cli.progress import open_upgrading
from graymatter_tui.consolidation.diff import build_diff
from graymatter_tui.core.config import GUARD_MODES, SUMMARISERS, Settings
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.model import CycleRecord, cycle_to_dict
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted
from graymatter_tui.embedding.settings import EMBEDDERS
from graymatter_tui.storage import MemoryStore, validate_cycle_id

if TYPE_CHECKING:
    from graymatter_tui.embedding.base import Embedder
    from graymatter_tui.views.health import HealthReport

EXIT_NOT_APPLIED = 3


def outcome_label(record: CycleRecord) -> str:
    """How a record ended, as the Journal tab says it: `applied ↺` once reverted, and
    `unfinished` for a cycle still running or whose process ended before it did."""
    return (record.outcome or "unfinished") + (" ↺" if record.reverted_by else "")


def print_record(record: CycleRecord) -> None:
    """A cycle for a person: header, stages, then the diff."""
    say(
        one_line(
            f"cycle {record.cycle_id}  {record.agent_id}  {record.kind}  {outcome_label(record)}"
        )
    )
    if record.reason:
        say(f"  reason: {one_line(record.reason)}")
    if record.kind == "revert":
        restored = counted(len(record.restored), "fact")
        say(f"  reverted cycle {record.reverted_cycle_id}: restored {restored},")
        say(f"  retired summary {record.retired_summary_id}")
        return
    if record.kind == "review":
        _print_review(record)
        return
    if record.kind == "probe_run":
        for line in run_lines(record):
            say(line)
        return
    model = f" ({one_line(record.model)})" if record.model else ""
    say(
        one_line(f"  summariser: {record.summariser}{model} · guard: {record.guard_mode or 'keys'}")
    )
    for stage in record.stages:
        say(one_line(f"  {stage.stage:<12} {stage.summary}"))
    if record.reverted_by:
        say(f"  reverted later by {record.reverted_by}")
    diff = build_diff(record)
    if diff.rows:
        say("")
        for row in diff.rows:
            text = one_line(row.text)
            head = f"  {row.sign} {row.id or '':<26} "
            say(f"{head}{text}" if text else head.rstrip())
            if row.note and row.kind in ("guarded", "ignored", "summary"):
                say(f"    {one_line(row.note)}")
        say(f"  {diff.counts_line}")
    if record.pruned:
        say(f"  pruned {counted(len(record.pruned), 'fact')} (copies kept in this record)")
    _print_probes(record)


def _print_probes(record: CycleRecord) -> None:
    """What each probe would have found after apply, as checked at review (ADR 0039)."""
    if not record.probes:
        return
    say("")
    say("  probes, checked before apply:")
    for probe in record.probes:
        say(one_line(f"    {probe.verdict:<10} top {probe.k:<3} {probe.query}"))
        for label, ids in (
            ("lost", probe.lost),
            ("replaced by the summary", probe.replaced),
            ("displaced (still live)", probe.displaced),
        ):
            for fact_id in ids:
                say(f"      {label}: {fact_id}")


def _print_review(record: CycleRecord) -> None:
    """A decision on an agent's held change (`review`): who asked, who decided, what it
    did to which facts."""
    say(one_line(f"  {record.action} held as proposal {record.proposal_id}"))
    say(one_line(f"  asked by {record.asked_by or 'unknown'} at {record.started_at}"))
    say(one_line(f"  decided by {record.decided_by} at {record.finished_at}"))
    if record.target:
        say(f"  target: {one_line(record.target)}")
    if record.summary_text:
        say(f"  text:   {one_line(record.summary_text)}")
    if record.outcome == "applied":
        wrote = f", wrote {record.summary_id}" if record.summary_id else ""
        made = counted(len(record.consumed), "tombstone")
        say(f"  matched {len(record.batch)}, made {made}{wrote}")
    if record.reverted_by:
        say(f"  reverted later by {record.reverted_by}")


@click.command()
@click.argument("agent")
@click.option("--llm", type=click.Choice(SUMMARISERS), default=None, help="Summariser to use.")
@click.option("--threshold", type=click.IntRange(min=0), default=None, help="Live-fact threshold.")
@click.option("--guard", type=click.Choice(GUARD_MODES), default=None, help="Coverage guard mode.")
@click.option("--dry-run", is_flag=True, help="Propose and review, apply nothing.")
@common_options
def consolidate(
    agent: str,
    llm: str | None,
    threshold: int | None,
    guard: str | None,
    dry_run: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Run one consolidation cycle for AGENT. Exit 3 when a proposal was not applied."""
    from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
    from graymatter_tui.consolidation.summarisers import factory as summarisers

    settings = settings_for(data_dir).with_overrides(
        summariser=llm, threshold=threshold, guard=guard
    )
    store = open_upgrading(settings)
    cycle = Cycle(
        store,
        agent,
        summarisers.from_settings(settings),
        CycleOptions.from_settings(settings, dry_run=dry_run),
    )
    try:
        record = cycle.run_sync()
    except KeyboardInterrupt:
        # ctrl+c while the summariser thinks: decay has committed, so the cycle is
        # journaled with where it stopped before the command ends as interrupted.
        if cycle.started:
            cycle.cancel("interrupted (ctrl+c)")
            warn(f"cycle {cycle.record.cycle_id} interrupted; journaled as {cycle.record.outcome}")
        raise
    if as_json:
        emit_json(cycle_to_dict(record))
    else:
        print_record(record)
    if record.probes_lost:
        losing = sum(1 for p in record.probes if p.lost)
        done = "was applied" if record.outcome == "applied" else "was checked"
        lose, they = ("loses", "it") if losing == 1 else ("lose", "they")
        warn(
            f"this cycle {done} although {counted(losing, 'probe')} of its agent {lose} "
            f"{counted(record.probes_lost, 'fact')} {they} used to find (see 'probes' in "
            "its record)"
        )
    if cycle.probe_check.note:
        warn(cycle.probe_check.note)
    if record.outcome in ("failed", "discarded"):
        sys.exit(EXIT_NOT_APPLIED)


@click.command()
@click.argument("target", required=False)
@click.argument("cycle_id", required=False)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N records.")
@common_options
def journal(
    target: str | None,
    cycle_id: str | None,
    limit: int | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """The cycle journal, newest first: `journal [AGENT]` or `journal show CYCLE`."""
    if target == "show":
        if cycle_id is None:
            raise click.UsageError("journal show needs a CYCLE id")
        wanted = validate_cycle_id(cycle_id)
        record = open_reader(data_dir, as_json=as_json).require_record(wanted)
        if as_json:
            emit_json(cycle_to_dict(record))
        else:
            print_record(record)
        return
    if cycle_id is not None:
        raise click.UsageError(f"unexpected argument {cycle_id!r}")
    records = open_reader(data_dir, as_json=as_json).records(target, limit=limit)
    if as_json:
        emit_json([cycle_to_dict(r) for r in records])
        return
    if not records:
        say("no cycles yet")
    for r in records:
        if r.kind == "revert":
            detail = f"restored {len(r.restored)}"
        elif r.kind == "probe_run":
            hits, total = hits_of(r)
            detail = f"probes {hits}/{total} found something"
        else:
            detail = (
                f"consumed {len(r.consumed):>3} pruned {len(r.pruned):>3} {r.latency_ms:>7.0f} ms"
            )
        line = (
            f"{r.started_at[:19]}  {r.cycle_id}  {r.agent_id[:24]:<24} "
            f"{r.kind:<11} {r.summariser:<9} {outcome_label(r):<10} {detail}"
        )
        say(one_line(line))


@click.command()
@click.argument("cycle_id", metavar="CYCLE")
@common_options
def revert(cycle_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Undo an applied cycle: its facts live again, its summary retired."""
    cycle_id = validate_cycle_id(cycle_id)
    record = open_upgrading(settings_for(data_dir)).revert(cycle_id)
    if as_json:
        emit_json(cycle_to_dict(record))
    else:
        say(
            f"reverted cycle {cycle_id}: {counted(len(record.restored), 'fact')} live again, "
            f"summary {record.retired_summary_id} retired (record {record.cycle_id})"
        )


def _deep_verify(path: Path) -> tuple[str, str]:
    """Walk every table in a child process: a corrupt file may crash the reader."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "graymatter_tui.backends.lmdb.verify", str(path)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return "fail", "the integrity walk did not finish within 10 minutes"
    except OSError as exc:  # e.g. an interpreter this user may not execute
        return "fail", f"cannot start the integrity walker ({sys.executable}): {exc.strerror}"
    if done.returncode < 0:
        return (
            "fail",
            f"reading the store crashed the verifier (signal {-done.returncode}): corrupt",
        )
    if done.returncode != 0:
        line = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:] or ["unknown error"]
        return "fail", f"integrity walk failed: {line[0][:200]}"
    return "ok", "every table and value decodes"


def doctor_checks(
    settings: Settings,
    *,
    named_summariser: bool = False,
    embedder: str | None = None,
) -> list[dict[str, Any]]:
    """Every check of `doctor`. A summariser named on the command line that does not answer
    fails; one that only the environment configured is a warning (cycles go on without it).
    The embedder likewise: `embedder` (named with --embed) fails, the configured one (the
    default: local) warns (recall then ranks on keyword and recency)."""
    from graymatter_tui.backends.lmdb.access import directory_check, files_check
    from graymatter_tui.consolidation.invariants import check_invariants
    from graymatter_tui.consolidation.summarisers import factory as summarisers

    checks: list[dict[str, Any]] = []

    def add(name: str, status: str, detail: str) -> None:
        checks.append({"name": name, "status": status, "detail": detail})

    location = settings.location
    if location.path is not None:
        for access in (directory_check, files_check):
            add(*access(location.path))
            if checks[-1]["status"] == "fail":
                return checks  # what follows would only say the same thing again
    try:
        store = open_location(location, read_only=True)
        if store.absent:  # a database without our tables (a directory fails above)
            add("store", "fail", f"{store.location} holds no store yet; a write creates it")
            return checks
        info = store.info()
        agents = store.agents()
        counters = store.counters()
    except GraymatterError as exc:
        add("store" if location.path is not None else "server", "fail", str(exc))
        return checks
    if location.path is None:  # a server: say which one and which database, no password
        add("server", "ok", f"{info.engine} at {location.redacted}")
    add(
        "store",
        "ok",
        f"schema {info.schema_version}, {info.engine}, stemming {info.stem_language}; "
        f"{counted(sum(a.live_facts for a in agents), 'live fact')} across "
        f"{counted(len(agents), 'agent')}; consolidations {counters.consolidations} (facts "
        f"consolidated {counters.facts_consolidated}), reverts {counters.reverts}",
    )
    # LMDB's files are walked in a child process (a corrupt file may crash the reader); a
    # server keeps its own pages, so its store goes straight to the invariants.
    walked = True
    if location.path is not None:
        status, detail = _deep_verify(location.path)
        add("integrity", status, detail)
        walked = status == "ok"
    if walked:
        # One snapshot: other processes or hosts may write while the checks read.
        for check in store.in_one_snapshot(check_invariants):
            add(
                check.name,
                "ok" if check.ok else "fail",
                check.title if check.ok else "; ".join(check.violations[:3]),
            )
    add("embeddings", "ok", embedding_note(store, sum(a.live_facts for a in agents)))
    add(*embedder_check(store, embedder))
    add(*review_queue_check(store))
    hooks = hooks_check(settings.data_dir)
    if hooks is not None:
        add(*hooks)
    summariser = summarisers.from_settings(settings)
    if summariser is None:
        add("summariser", "ok", "none configured: cycles decay and prune only")
    else:
        reach = asyncio.run(summariser.check())
        if reach.ok:
            add("summariser", "ok", f"{summariser.name}: {reach.detail}")
        elif named_summariser:
            add("summariser", "fail", f"{summariser.name}: {reach.detail}")
        else:
            add(
                "summariser",
                "warn",
                f"{summariser.name} (configured): {reach.detail}; cycles will only decay "
                "and prune until it answers",
            )
    return checks


def hooks_check(data_dir: Path) -> tuple[str, str, str] | None:
    """The hook log's failures of the last day (None where no hook has ever logged): a
    hook fails silently by design, so this is where a person hears of it."""
    from graymatter_tui.hooks import hook_log

    if not hook_log.log_path(data_dir).exists():
        return None
    tail = hook_log.read_tail(data_dir, 500, since=time.time() - 24 * 3600)
    if tail.failures:
        return (
            "hooks",
            "warn",
            f"{counted(tail.failures, 'hook failure')} in the last day (log {tail.path}); "
            f"the last: {tail.last_failure}",
        )
    return ("hooks", "ok", f"no hook failures in the last day (log {tail.path})")


def review_queue_check(store: MemoryStore) -> tuple[str, str, str]:
    """The top bar's count of changes waiting (a counter kept by each decision) must be
    the number of proposals actually pending, or the TUI would announce the wrong work."""
    said = store.pending_count()
    pending = len(store.proposals(status="pending"))
    if said != pending:
        return (
            "review queue",
            "fail",
            f"the pending counter says {said} but "
            f"{counted(pending, 'proposal is', 'proposals are')} pending",
        )
    return ("review queue", "ok", f"{counted(pending, 'agent change')} waiting for a decision")


def _configured_embedder(named: str | None) -> Embedder | None:
    """The embedder `doctor` looks at: the one named with --embed, else the environment's
    (GRAYMATTER_EMBED, default local); None when off. InvalidInput for a bad setting."""
    from graymatter_tui.embedding.factory import from_settings
    from graymatter_tui.embedding.settings import EmbedSettings

    return from_settings(EmbedSettings.from_env(named))


def embedder_check(store: MemoryStore, named: str | None) -> tuple[str, str, str]:
    """The configured (or --embed named) embedder, made to embed a probe for real."""
    from graymatter_tui.embedding.check import check

    try:
        embedder = _configured_embedder(named)
    except GraymatterError as exc:
        return ("embedder", "fail", f"the embedding settings are wrong: {exc}")
    if embedder is None:
        detail = "none configured (GRAYMATTER_EMBED=none): recall ranks on keyword and recency"
        return ("embedder", "ok", detail)
    model, dimension = store.embed_model()
    result = check(embedder, model, dimension)
    if result.ok:
        return ("embedder", "ok", f"{embedder.name}: {result.detail}")
    if named is not None:
        return ("embedder", "fail", f"{embedder.name}: {result.detail}")
    return (
        "embedder",
        "warn",
        f"{embedder.name} (configured): {result.detail}; recall ranks on keyword and recency "
        "until it works",
    )


def embedding_note(store: MemoryStore, live: int) -> str:
    """Coverage of live facts by vectors of the store's model: a note, never a failure
    (facts without a vector rank on keyword and recency)."""
    state = store.embed_state()
    try:
        embedder = _configured_embedder(None)
        configured = None if embedder is None else embedder.model
    except GraymatterError as exc:
        return f"the embedding settings are wrong: {exc}"
    if state.model is None:
        if configured is not None:
            return f"none stored yet; {configured} will embed every live fact"
        return "none: this store has never embedded (GRAYMATTER_EMBED is off)"
    share = 100.0 if live == 0 else 100 * state.vectors / live
    note = (
        f"{state.vectors} of {counted(live, 'live fact has', 'live facts have')} a vector of "
        f"{state.model} ({share:.0f}%); {state.backlog} waiting"
    )
    if configured is not None and configured != state.model:
        note += f"; {configured} is configured: the next embedder run re-embeds all"
    return note


def _shown(settings: Settings) -> str:
    """The store doctor looked at: the directory, or the URL without its password."""
    location = settings.location
    return str(location.path) if location.path is not None else location.redacted


def doctor_summary(checks: list[dict[str, Any]]) -> str:
    failed = [c["name"] for c in checks if c["status"] == "fail"]
    warned = [c["name"] for c in checks if c["status"] == "warn"]
    if failed:
        return f"{counted(len(failed), 'check')} failed: {', '.join(failed)}."
    if warned:
        return f"Not everything is good: {counted(len(warned), 'warning')}: {', '.join(warned)}."
    return "Everything looks good."


@click.command()
@click.option("--llm", type=click.Choice(SUMMARISERS), default=None, help="Summariser to check.")
@click.option(
    "--embed",
    "embed",
    type=click.Choice(EMBEDDERS),
    default=None,
    help="Embedder to check (default: GRAYMATTER_EMBED's, local unless set).",
)
@click.option(
    "--health",
    is_flag=True,
    help="Instead: the health rules of each agent's memory, with their thresholds "
    "(exit 0 whatever they find).",
)
@click.option(
    "--agent",
    default=None,
    callback=checked_by(validate_agent),
    help="With --health: only this agent.",
)
@common_options
def doctor(
    llm: str | None,
    embed: str | None,
    health: bool,
    agent: str | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Check the data dir and its files, the store's integrity, invariants I-1…I-6, the
    embedder and the summariser. Exit 1 when a check fails (a summariser named with --llm,
    or an embedder named with --embed, that does not answer fails; the configured ones
    only warn).

    With --health, the health rules of each agent's memory instead (tombstone ratio,
    bursts of short facts, weak decisions near pruning, duplicates, probes a cycle
    changed, contradictions waiting in review, embedding coverage, summaries reverted),
    each with its thresholds and the facts it concerns. It exits 0 whatever the rules
    find (the verdict is in the output); 1 when the store cannot be read or --agent
    names no agent of it."""
    if not health:
        if agent is not None:
            raise usage_error("--agent is for --health (doctor checks the whole store)")
    elif llm is not None:
        raise usage_error("--llm checks the summariser; --health does not call it")
    if health:
        _doctor_health(data_dir, agent, embed, as_json)
        return
    settings = settings_for(data_dir).with_overrides(summariser=llm)
    checks = doctor_checks(settings, named_summariser=llm is not None, embedder=embed)
    ok = all(c["status"] != "fail" for c in checks)
    if as_json:
        emit_json({"data_dir": _shown(settings), "ok": ok, "checks": checks})
    else:
        marks = {"ok": "✓", "warn": "!", "fail": "✗"}
        names = [one_line(c["name"]) for c in checks]
        width = max(map(len, names), default=0)
        for c, name in zip(checks, names, strict=True):
            say(f"  {marks[c['status']]} {name:<{width}}  {one_line(c['detail'])}")
        say("")
        say(doctor_summary(checks))
    if not ok:
        sys.exit(1)


def _doctor_health(
    data_dir: Path | None, agent: str | None, embed: str | None, as_json: bool
) -> None:
    """`doctor --health`: every rule of `views.health` per agent; exit 0 with findings
    (they are advice about what memory holds, not a broken store), 1 for a store that
    cannot be read or an unknown agent."""
    from graymatter_tui.views.health import check_health, report_to_dict

    settings = settings_for(data_dir)
    embedder = _configured_embedder(embed)  # InvalidInput (exit 1) for a bad setting
    configured = None if embedder is None else embedder.model
    store = open_reader(data_dir, as_json=as_json)
    report = check_health(store, agent, embed_model=configured)
    if as_json:
        emit_json({"data_dir": _shown(settings), "ok": True, **report_to_dict(report)})
        return
    marks = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗"}
    if not report.agents:
        say(f"No agents in {one_line(_shown(settings))}: nothing to check.")
        return
    width = max(len(f.rule) for a in report.agents for f in a.findings)
    for index, health in enumerate(report.agents):
        if index:
            say("")
        say(
            one_line(
                f"agent {health.agent_id}: {counted(health.live_facts, 'live fact')}, "
                f"{counted(health.tombstones, 'tombstone')} · {health.verdict}"
            )
        )
        for finding in health.findings:
            say(f"  {marks[finding.status]} {finding.rule:<{width}}  {one_line(finding.detail)}")
            say(f"      [{one_line(finding.threshold)}]")
            for fact in finding.facts:
                say(f"      {fact.id}  {one_line(fact.text)}")
            if finding.more:
                say(f"      … and {finding.more} more")
    say("")
    say(health_summary(report))


def health_summary(report: HealthReport) -> str:
    """The last line of `doctor --health`: the verdict and the rules that gave it."""
    said: dict[str, list[str]] = {"fail": [], "warn": [], "info": []}
    for health in report.agents:
        for finding in health.findings:
            if finding.status in said:
                said[finding.status].append(f"{health.agent_id}: {finding.rule}")
    notes = f" ({counted(len(said['info']), 'note')})" if said["info"] else ""
    if not said["fail"] and not said["warn"]:
        return f"Verdict ok: no rule warns{notes}."
    parts = [
        f"{counted(len(said[status]), noun)} ({', '.join(said[status])})"
        for status, noun in (("fail", "failure"), ("warn", "warning"))
        if said[status]
    ]
    return one_line(f"Verdict {report.verdict}: {' and '.join(parts)}{notes}.")
