"""A writer host and a cycler host on one PostgreSQL store, each killed with SIGKILL at a
random moment, round after round: after every round the invariants hold and every write
the writer saw acknowledged is in the store. Most kills land with a transaction open (the
workers spend their time in one), which the server then rolls back whole. 5 rounds by
default (more until a cycle has applied), 50 with GRAYMATTER_SOAK=1, N with
GRAYMATTER_SOAK=N (tests/support/soak.py)."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from subprocess import Popen

import psycopg

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.consolidation.invariants import check_invariants
from tests.support.pg_worker import TEXTS, entries, go, lost_writes, spawn
from tests.support.soak import rounds

SOAK_ROUNDS = 50
AT_LEAST = rounds(5, SOAK_ROUNDS)
AT_MOST = max(AT_LEAST, SOAK_ROUNDS)
AGENT = "agent-w"


def _pair(url: str, acks: Path, cycles: Path, n: int) -> tuple[Popen[str], Popen[str]]:
    return spawn("writer", url, acks, 0, n, AGENT), spawn("cycler", url, cycles, 0, n, AGENT)


def _open_transactions(watcher: psycopg.Connection) -> int:
    row = watcher.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'graymatter-tui' "
        "AND datname = current_database() AND xact_start IS NOT NULL"
    ).fetchone()
    return int(row[0]) if row else 0


def test_writer_and_cycler_killed_mid_transaction_round_after_round(
    pg_url: str, tmp_path: Path
) -> None:
    rng = random.Random(2026)
    with PgStore.open(pg_url) as store:
        for i in range(30):  # near-duplicates, so cycles find something to merge at once
            store.put(AGENT, TEXTS[i % len(TEXTS)])
    acks = tmp_path / "writer.jsonl"
    cycles = tmp_path / "cycler.jsonl"
    problems: list[str] = []
    open_at_kill = 0
    started = time.monotonic()
    played = applied_so_far = 0
    with psycopg.connect(pg_url, autocommit=True) as watcher:
        upcoming: tuple[Popen[str], Popen[str]] | None = _pair(pg_url, acks, cycles, 0)
        # The kills must land among real consolidation work: go on (up to the soak's
        # figure) until a cycle has applied.
        while upcoming is not None:
            n = played
            played += 1
            writer, cycler = upcoming
            go(writer)
            go(cycler)
            # the next pair starts up while this one works, as long as one may be needed
            wanted = played < AT_LEAST or (applied_so_far == 0 and played < AT_MOST)
            upcoming = _pair(pg_url, acks, cycles, played) if wanted else None
            # kill each at its own random moment, the writer or the cycler first
            first, second = (writer, cycler) if rng.random() < 0.5 else (cycler, writer)
            for child in (first, second):
                time.sleep(rng.uniform(0.02, 0.3))
                open_at_kill += min(_open_transactions(watcher), 1)
                child.send_signal(signal.SIGKILL)
            for child in (writer, cycler):
                _, err = child.communicate(timeout=30)
                if child.returncode != -signal.SIGKILL:
                    problems.append(f"round {n}: a worker exited {child.returncode}: {err[-800:]}")
            with PgStore.open(pg_url) as store:
                for check in check_invariants(store):
                    problems += [f"round {n}: {check.name}: {v}" for v in check.violations]
                problems += [f"round {n}: {p}" for p in lost_writes(store, entries([acks]))]
                applied_so_far = store.counters().consolidations
            if upcoming is not None and played >= AT_LEAST and applied_so_far > 0:
                for unused in upcoming:  # started ahead, never told to go
                    unused.kill()
                    unused.communicate(timeout=30)
                upcoming = None
    elapsed = time.monotonic() - started
    logged = entries([acks, cycles])
    acknowledged = sum(1 for e in logged if "id" in e and e["op"] not in ("cycle", "pin-try"))
    applied = sum(1 for e in logged if e["op"] == "cycle" and e.get("outcome") == "applied")
    reverts = sum(1 for e in logged if e["op"] == "revert")
    store_errors = [e for e in logged if e.get("refused") == "StoreError"]
    with PgStore.open(pg_url) as store:
        consolidations = store.counters().consolidations
    print(
        f"\nSIGKILL x {2 * played} over {played} rounds in {elapsed:.1f} s: "
        f"{open_at_kill} kills with a transaction open, {acknowledged} acknowledged writes, "
        f"{applied} cycles applied ({consolidations} in the journal), {reverts} reverts, "
        f"{len(problems)} problems"
    )
    assert problems == []
    assert store_errors == []
    assert consolidations > 0  # the kills landed among real consolidation work
