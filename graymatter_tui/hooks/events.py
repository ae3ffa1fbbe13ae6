"""What each hook event does (ADR 0055). Each handler takes the run's context and returns
what to inject (`Reply`): context for the model, and a line for the person.

- SessionStart (any source; after a compaction too): the agent's pinned facts, its
  strongest recent ones and the shared namespace's, within a byte budget. Sessions that
  never ended are tidied up (their recalled facts' accesses written).
- UserPromptSubmit: `remember:` lines stored at once (or held for review, or refused
  with the reason); then the facts recalled for the rest of the prompt, unless they are
  exactly what the previous prompt was shown.
- PreCompact: the accesses of facts recalled so far written, and a checkpoint saved.
- SessionEnd: the same, the session's state removed, and with `--consolidate` a
  consolidation cycle started in a process of its own (not where the hook's options hold
  changes for review: a person runs that one).

Recall here ranks on keywords and recency only (`recall.ranking.rank` without a vector
signal): a hook never waits for an embedding server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from graymatter_tui.backends.opening import open_location
from graymatter_tui.core import clock, provenance
from graymatter_tui.core.config import Settings
from graymatter_tui.core.model import Fact
from graymatter_tui.core.review_modes import HELD_BY_MODE
from graymatter_tui.hooks import hook_log, session_state
from graymatter_tui.hooks.context import (
    SHARED_AGENT,
    clip,
    focused_query,
    quoted,
    recall_block,
    session_block,
)
from graymatter_tui.hooks.options import HookOptions
from graymatter_tui.hooks.prompt_lines import Remember, parse
from graymatter_tui.recall.ranking import MAX_QUERY_BYTES, rank
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import MemoryStore

PINNED_READ = 40
RECENT_READ = 60
RECENT_SHOWN = 5
SHARED_SHOWN = 3
RECALL_K = 3
SHARED_K = 2
CONSOLIDATE_EVERY = timedelta(hours=24)
CONSOLIDATE_LOG = "consolidate.log"
MAX_FIELD = 1024  # bytes of a client's string kept in a checkpoint


@dataclass(frozen=True)
class Reply:
    """What the hook answers: context for the model, a line for the person."""

    context: str = ""
    message: str = ""


@dataclass
class Run:
    """One hook run: its options, the event as the client sent it, and what follows from
    them (settings, the agent, the session's state file)."""

    options: HookOptions
    event: str
    payload: dict[str, Any]
    settings: Settings
    agent: str
    notes: list[str] = field(default_factory=list)  # for the log, when worth a line

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    @property
    def state_path(self) -> Path:
        return session_state.state_path(self.data_dir, self.payload.get("session_id"))

    def holds(self, action: str) -> bool:
        return action in HELD_BY_MODE.get(self.options.review, frozenset())


@contextmanager
def opened(run: Run, *, write: bool) -> Iterator[MemoryStore]:
    """The store, for reading (nothing created) or writing (created if new)."""
    store = open_location(run.settings.location, read_only=not write)
    try:
        yield store
    finally:
        store.close()


def _text_field(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    raw = value.encode("utf-8", "replace")[:MAX_FIELD]
    return raw.decode("utf-8", "ignore")


# ---- SessionStart ----------------------------------------------------------------------


def _strongest(facts: list[Fact], shown: set[str], limit: int) -> list[Fact]:
    """The heaviest of `facts` not already shown, heaviest first (newer on ties)."""
    # `facts` come newest first, and the sort is stable: newer first among equal weights.
    fresh = sorted((f for f in facts if not f.pinned), key=lambda f: -f.weight)
    out: list[Fact] = []
    for fact in fresh:
        if fact.text not in shown:
            shown.add(fact.text)
            out.append(fact)
        if len(out) >= limit:
            break
    return out


def _unique(facts: list[Fact], shown: set[str]) -> list[Fact]:
    out = []
    for fact in facts:
        if fact.text not in shown:
            shown.add(fact.text)
            out.append(fact)
    return out


def session_start(run: Run) -> Reply:
    _tidy_stale_sessions(run)
    path = run.state_path
    state = session_state.load(path)
    state.agent, state.last_block = run.agent, ""  # a new context: nothing shown yet
    pinned: list[Fact] = []
    recent: list[Fact] = []
    shared: list[Fact] = []
    with opened(run, write=False) as store:
        if not store.absent:
            shown: set[str] = set()
            pinned = _unique(store.pinned_facts(run.agent, limit=PINNED_READ), shown)
            recent = _strongest(store.list_facts(run.agent, limit=RECENT_READ), shown, RECENT_SHOWN)
            if run.agent != SHARED_AGENT:
                shared_pinned = _unique(store.pinned_facts(SHARED_AGENT, limit=PINNED_READ), shown)
                newest = store.list_facts(SHARED_AGENT, limit=RECENT_READ)
                shared = shared_pinned + _strongest(newest, shown, SHARED_SHOWN)
    if path.exists() or pinned or recent or shared:
        session_state.save(path, state)
    compacted = run.payload.get("source") == "compact"
    return Reply(context=session_block(run.agent, pinned, recent, shared, compacted=compacted))


def _tidy_stale_sessions(run: Run) -> None:
    """Write the accesses of sessions that never ended, and remove their files."""
    stale = session_state.stale_sessions(run.data_dir, keep=run.state_path)
    if not stale:
        return
    accessed: dict[str, int] = {}
    for _, state in stale:
        for fact_id, times in state.accessed.items():
            accessed[fact_id] = accessed.get(fact_id, 0) + times
    if accessed and not run.options.read_only:
        with opened(run, write=True) as store:
            store.touch(_repeated(accessed))
    for path, _ in stale:
        session_state.remove(path)


def _repeated(accessed: dict[str, int]) -> Iterator[str]:
    for fact_id, times in accessed.items():
        for _ in range(min(times, 1000)):
            yield fact_id


# ---- UserPromptSubmit ------------------------------------------------------------------


def user_prompt_submit(run: Run) -> Reply:
    prompt = run.payload.get("prompt")
    if not isinstance(prompt, str):
        return Reply()
    parsed = parse(prompt)
    lines: list[str] = []
    messages: list[str] = []
    stored_texts: set[str] = set()
    path = run.state_path
    state = session_state.load(path)
    state.prompts += 1
    if parsed.remembers:
        _remember(run, parsed.remembers, state, lines, messages, stored_texts)
    block = _recall(run, parsed.rest, stored_texts, state)
    if block:
        digest = session_state.block_digest(block)
        if digest == state.last_block:
            block = ""  # exactly what the previous prompt was shown: still in context
        else:
            state.last_block = digest
            lines.append(block)
    if parsed.remembers or block or path.exists():
        session_state.save(path, state)
    return Reply(context="\n".join(lines), message="\n".join(messages))


def _remember(
    run: Run,
    remembers: list[Remember],
    state: session_state.SessionState,
    lines: list[str],
    messages: list[str],
    stored_texts: set[str],
) -> None:
    """Store (or hold, or refuse) each remember line in the prompt's order, saying what
    became of each."""
    store: MemoryStore | None = None
    try:
        for item in remembers:
            reason = item.refusal
            if reason is None and run.options.read_only:
                reason = "this memory is read-only here (--read-only)"
            if reason is not None:
                lines.append(f"Not stored in memory (a remember: line): {reason}.")
                messages.append(f"graymatter: not remembered: {reason}")
                run.notes.append(f"refused a remember line: {reason}")
                continue
            if store is None:
                store = open_location(run.settings.location, read_only=False)
            agent = SHARED_AGENT if item.shared else run.agent
            where = f"agent {quoted(agent)}"
            shown = clip(item.text)
            if run.holds("add"):
                held = store.hold_change(agent, "add", "", item.text)
                lines.append(f"Held for a person's review as {held.id} ({where}): {shown}")
                messages.append(f"graymatter: held for review as {held.id}: {clip(shown, 120)}")
                run.notes.append(f"held {held.id} for review ({where})")
                continue
            written = store.remember(agent, item.text)
            fact = written.fact
            stored_texts.add(item.text)
            state.remembered.append(fact.id)
            lines.append(f"Stored in memory as {fact.id} ({where}): {shown}")
            messages.append(f"graymatter: remembered ({where}): {clip(shown, 120)}")
            run.notes.append(f"stored {fact.id} ({where})")
            for pair in written.held:
                kind = pair.action.replace("_", " ")
                lines.append(
                    f"It is a {kind} of fact {pair.held_id}, held for a person's review as "
                    f"{pair.id} ({pair.why})."
                )
                run.notes.append(f"held {pair.id} for review: {kind} of {pair.held_id}")
    finally:
        if store is not None:
            store.close()


def _recall(run: Run, text: str, skip: set[str], state: session_state.SessionState) -> str:
    """The recall block for `text` ("" when nothing is recalled)."""
    if not text.strip():
        return ""
    with opened(run, write=False) as store:
        if store.absent:
            return ""
        names = [run.agent] if run.agent == SHARED_AGENT else [run.agent, SHARED_AGENT]
        queries = store.read_index(
            lambda index: [focused_query(index, name, text) for name in names]
        )
        found: list[list[Fact]] = []
        for name, query, k in zip(names, queries, (RECALL_K, SHARED_K), strict=False):
            if not query or len(query.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
                found.append([])
                continue
            # Keywords only: a prompt's hook must not load a model (its 150 ms budget).
            hits = rank(store, name, query, k=k + len(skip), vectors=NO_VECTORS)
            found.append([h.fact for h in hits if h.fact.text not in skip][:k])
    own = found[0]
    shared = found[1] if len(found) > 1 else []
    seen = {f.text for f in own}
    shared = [f for f in shared if f.text not in seen]
    block = recall_block(run.agent, own, shared)
    if block:
        for fact in [*own, *shared]:
            state.accessed[fact.id] = state.accessed.get(fact.id, 0) + 1
    return block


# ---- PreCompact and SessionEnd ---------------------------------------------------------


def _checkpoint(run: Run, store: MemoryStore, state: session_state.SessionState) -> str:
    """Write the session's pending accesses and a checkpoint of where it stands."""
    if state.accessed:
        store.touch(_repeated(state.accessed))
        state.accessed = {}
    saved: dict[str, object] = {
        "saved_by": provenance.current(),
        "event": run.event,
        "session_id": _text_field(run.payload.get("session_id")),
        "cwd": _text_field(run.payload.get("cwd")),
        "transcript_path": _text_field(run.payload.get("transcript_path")),
        "prompts": state.prompts,
        "remembered": state.remembered[-session_state.MAX_REMEMBERED :],
    }
    for name in ("trigger", "reason", "custom_instructions"):
        value = _text_field(run.payload.get(name))
        if value:
            saved[name] = value
    checkpoint = store.save_checkpoint(run.agent, json.dumps(saved, ensure_ascii=False))
    return checkpoint.id


def pre_compact(run: Run) -> Reply:
    if run.options.read_only:
        return Reply()
    path = run.state_path
    state = session_state.load(path)
    with opened(run, write=True) as store:
        run.notes.append(f"checkpoint {_checkpoint(run, store, state)} saved")
    state.last_block = ""  # the compaction drops what was shown
    session_state.save(path, state)
    return Reply()


def session_end(run: Run) -> Reply:
    path = run.state_path
    state = session_state.load(path)
    if not run.options.read_only:
        with opened(run, write=True) as store:
            run.notes.append(f"checkpoint {_checkpoint(run, store, state)} saved")
            started = _maybe_consolidate(run, store)
            if started:
                run.notes.append(started)
    session_state.remove(path)
    return Reply()


def _maybe_consolidate(run: Run, store: MemoryStore) -> str:
    """Start a consolidation cycle of the agent in a detached process, when asked to and
    when nothing says not to; what was done, for the log ("" for nothing)."""
    if not run.options.consolidate:
        return ""
    if HELD_BY_MODE.get(run.options.review):
        return (
            f"consolidation left to a person: --review {run.options.review} holds changes "
            f"for review (graymatter-tui consolidate {run.agent})"
        )
    live = next((a.live_facts for a in store.agents() if a.agent_id == run.agent), 0)
    if live <= run.settings.threshold:
        return ""
    now = store.now()
    for record in store.records(run.agent, limit=20):
        if record.kind == "consolidate" and record.started_at:
            if now - clock.parse_time(record.started_at) < CONSOLIDATE_EVERY:
                return ""
            break
    pid = _spawn_consolidation(run)
    return f"consolidation of {run.agent} started in the background (pid {pid})"


def _cli_command() -> list[str]:
    beside = Path(sys.executable).parent / "graymatter-tui"
    if beside.is_file():
        return [str(beside)]
    return [sys.executable, "-m", "graymatter_tui"]


def _spawn_consolidation(run: Run) -> int:
    import subprocess  # only SessionEnd starts a process

    location = run.settings.location
    # A database is named without its password (never on a command line anyone can
    # read): the child finds it where the hook did, in ~/.pgpass or PGPASSWORD.
    where = (
        ["--dir", str(location.path)]
        if location.path is not None
        else ["--store", location.without_password]
    )
    log = hook_log.log_dir(run.data_dir) / CONSOLIDATE_LOG
    hook_log.private_dir(log.parent)
    if log.exists() and log.stat().st_size > hook_log.MAX_LOG_BYTES:
        os.replace(log, log.with_name(CONSOLIDATE_LOG + ".1"))
    with open(log, "ab") as out:
        child = subprocess.Popen(
            [*_cli_command(), *where, "consolidate", run.agent, "--json"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # outlives the session and the client's process group
            close_fds=True,
        )
    return child.pid


HANDLERS: dict[str, Callable[[Run], Reply]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}
# Events whose reply carries context for the model (the others' stdout is only logged).
INJECTING = frozenset({"SessionStart", "UserPromptSubmit"})
