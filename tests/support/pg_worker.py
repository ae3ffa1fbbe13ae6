"""A process of the PostgreSQL fault and soak harness, one per simulated host, each with
its own `PgStore` (its own connection pool):

    python -m tests.support.pg_worker MODE URL LOG SECONDS SEED [AGENT]

MODE `writer`: remember / revise / retire / pin on its own AGENT in a loop, appending one
JSON line to LOG after each call returned (an acknowledged write) with its latency.
MODE `cycler`: full consolidation cycles (local summariser) on random agents, sometimes
a revert, logging each applied cycle with the apply stage's latency.
MODE `reader`: once a second, check every invariant (`check_invariants`, whose I-4 is
"no applied cycle is half there") inside ONE snapshot, logging what it found.

Every refusal is logged too ({"refused": kind}); a StoreError never should be (contention
is retried, ADR 0047). Each mode prints "ready" once its store is open and stops after
SECONDS (0 = until killed); with WAIT_FOR_GO set in its environment it then waits for a
line on stdin first, so a harness can start the next process while checking the last.
`entries` and `lost_writes` read the logs back.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from subprocess import PIPE, Popen
from typing import Any, TextIO, TypeVar

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.model import RETIRED

T = TypeVar("T")
TEXTS = (
    "The staging database listens on port 5432.",
    "The staging database listens on port 5432. Use the VPN.",
    "Deploys happen on Tuesdays.",
    "Deploys happen on Tuesdays. Never on Fridays.",
    "Invoices for Acme go to billing@acme.example.",
    "Acme wants invoices sent to billing@acme.example.",
)
OPTIONS = CycleOptions(threshold=5, max_batch=16)
WAIT_FOR_GO = "PG_WORKER_WAIT_FOR_GO"
ROOT = Path(__file__).resolve().parents[2]


def _log(out: TextIO, entry: dict[str, Any]) -> None:
    out.write(json.dumps(entry) + "\n")
    out.flush()


def _refused(out: TextIO, op: str, exc: GraymatterError) -> None:
    _log(out, {"op": op, "refused": type(exc).__name__, "message": str(exc)})


def _timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    started = time.perf_counter()
    result = fn(*args)
    return result, (time.perf_counter() - started) * 1000


def writer(store: PgStore, agent: str, rng: random.Random, until: float, out: TextIO) -> None:
    """Texts repeat without numbers (a number is a detail the local summariser never
    merges across), so cycles find near-duplicates among them."""
    while not until or time.monotonic() < until:
        roll = rng.random()
        op = "remember"
        try:
            live = store.fact_ids(agent, "live", limit=50) if roll >= 0.7 else []
            if roll < 0.7 or not live:
                text = rng.choice(TEXTS)
                fact, ms = _timed(store.put, agent, text)
                _log(out, {"op": op, "id": fact.id, "ms": ms})
            elif roll < 0.8:
                op, target, text = "revise", rng.choice(live), f"{rng.choice(TEXTS)} (revised)"
                (new, old), ms = _timed(store.revise, target, text)
                _log(out, {"op": op, "id": new.id, "old": old.id, "ms": ms})
            elif roll < 0.85:
                op, target = "retire", rng.choice(live)
                fact, ms = _timed(store.retire, target)
                _log(out, {"op": op, "id": fact.id, "ms": ms})
            else:
                op, target = "pin", rng.choice(live)
                change = store.unpin if store.require(target).pinned else store.pin
                # Said before: killed between its commit and its acknowledgement, a
                # toggle leaves the fact changed with no line saying so.
                _log(out, {"op": "pin-try", "id": target})
                fact, ms = _timed(change, target)
                _log(out, {"op": op, "id": fact.id, "pinned": fact.pinned, "ms": ms})
        except GraymatterError as exc:
            _refused(out, op, exc)


async def _cycle(store: PgStore, agent: str) -> tuple[Cycle, float | None]:
    cycle = Cycle(store, agent, LocalSummariser(), OPTIONS)
    apply_ms = None
    while not cycle.done:
        stage = cycle.next_stage
        started = time.perf_counter()
        await cycle.step()
        if stage == "apply":
            apply_ms = (time.perf_counter() - started) * 1000
    return cycle, apply_ms


def cycler(
    store: PgStore, agents: list[str], rng: random.Random, until: float, out: TextIO
) -> None:
    while not until or time.monotonic() < until:
        agent = rng.choice(agents)
        op = "cycle"
        try:
            if rng.random() < 0.2:
                op = "revert"
                applied = [
                    r.cycle_id
                    for r in store.records(agent, limit=10)
                    if r.kind == "consolidate" and r.outcome == "applied" and not r.reverted_by
                ]
                if applied:
                    target = rng.choice(applied)
                    store.revert(target)
                    _log(out, {"op": op, "id": target})
                continue
            cycle, apply_ms = asyncio.run(_cycle(store, agent))
            record = cycle.record
            entry: dict[str, Any] = {"op": op, "id": record.cycle_id, "outcome": record.outcome}
            if record.outcome == "applied":
                entry["apply_ms"] = apply_ms
            _log(out, entry)
        except GraymatterError as exc:
            _refused(out, op, exc)
        time.sleep(0.05)  # a cycler runs now and then, not flat out


def violations_now(store: PgStore) -> list[str]:
    return [f"{c.name}: {v}" for c in store.in_one_snapshot(check_invariants) for v in c.violations]


def reader(store: PgStore, until: float, out: TextIO) -> None:
    while not until or time.monotonic() < until:
        started = time.monotonic()
        try:
            found, ms = _timed(violations_now, store)
            _log(out, {"op": "check", "violations": found, "ms": ms})
        except GraymatterError as exc:
            _refused(out, "check", exc)
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))


# ---- for the harness ------------------------------------------------------------------
def spawn(mode: str, url: str, log: Path, seconds: float, seed: int, *extra: str) -> Popen[str]:
    """A worker process that opens the store, says so, and waits for `go`: a harness
    can start processes ahead of their turn (clean environment: no GRAYMATTER_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_")}
    env["GRAYMATTER_EMBED"] = "none"  # the suite's default (tests/support/suite_env.py)
    return Popen(
        [sys.executable, "-m", "tests.support.pg_worker", mode, url, str(log), str(seconds),
         str(seed), *extra],
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        text=True,
        cwd=ROOT,
        env={**env, WAIT_FOR_GO: "1"},
    )  # fmt: skip


def go(child: Popen[str]) -> None:
    """Wait until `child` has opened its store, then let it work."""
    assert child.stdout is not None and child.stdin is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"a worker failed to start: {child.communicate(timeout=30)[1][-1500:]}")
    child.stdin.write("go\n")
    child.stdin.flush()


# ---- reading the logs back -----------------------------------------------------------
def entries(logs: Iterable[Path]) -> list[dict[str, Any]]:
    """Every complete line of the logs (a killed worker's last line may be cut short)."""
    found: list[dict[str, Any]] = []
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def lost_writes(store: PgStore, logged: list[dict[str, Any]]) -> list[str]:
    """Each acknowledged write that the store does not show (read after the workers
    stopped): a remembered fact must exist, live or as a tombstone (consumed by a cycle,
    revised, retired), or be in a journal record's pruned copies; a revision must have
    tombstoned the old fact towards the new; a retirement must have stuck; the last pin
    or unpin of a fact still live must show, unless a toggle of it was tried after that
    one and never acknowledged (it may have committed before the kill)."""
    facts = {f.id: f for f in store.all_facts()}
    pruned = {f.id for r in store.records() for f in r.pruned}
    problems: list[str] = []
    last_pin: dict[str, bool] = {}
    tried_since: set[str] = set()  # a toggle tried after the fact's last acknowledged one
    for entry in logged:
        op, fact_id = entry.get("op"), entry.get("id")
        if op == "pin-try" and isinstance(fact_id, str):
            tried_since.add(fact_id)
            continue
        if "refused" in entry or op not in ("remember", "revise", "retire", "pin"):
            continue
        assert isinstance(fact_id, str)
        fact = facts.get(fact_id)
        if fact is None and fact_id not in pruned:
            problems.append(f"{op} {fact_id}: acknowledged but not in the store")
            continue
        if op == "revise":
            old = facts.get(entry["old"])
            if old is None or old.superseded_by != fact_id:
                problems.append(
                    f"revise {entry['old']} -> {fact_id}: the old fact is not its tombstone"
                )
        elif op == "retire" and fact is not None and fact.superseded_by != RETIRED:
            problems.append(f"retire {fact_id}: acknowledged but the fact is not retired")
        elif op == "pin":
            last_pin[fact_id] = bool(entry["pinned"])
            tried_since.discard(fact_id)
    for fact_id, pinned in last_pin.items():
        if fact_id in tried_since:
            continue
        fact = facts.get(fact_id)
        if fact is not None and fact.is_live and fact.pinned != pinned:
            problems.append(f"pin {fact_id}: acknowledged {pinned} but the fact says {fact.pinned}")
    return problems


def main() -> None:
    mode, url, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    extra = sys.argv[6:]
    rng = random.Random(seed)
    store = PgStore.open(url)
    print("ready", flush=True)  # a harness times its kill or its clock from here
    if os.environ.get(WAIT_FOR_GO):
        sys.stdin.readline()  # started ahead of its turn: work only when told
    until = time.monotonic() + seconds if seconds else 0.0
    with open(log, "a", encoding="utf-8") as out:
        if mode == "writer":
            writer(store, extra[0], rng, until, out)
        elif mode == "cycler":
            cycler(store, extra, rng, until, out)
        elif mode == "reader":
            reader(store, until, out)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    store.close()


if __name__ == "__main__":
    main()
