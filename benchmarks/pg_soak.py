"""Several hosts on one PostgreSQL store, simulated: 4 writer processes (each its own
`PgStore`, so its own connection pool), a cycler and a checking reader, for a while.

    python benchmarks/pg_soak.py [SECONDS] [--writers 4] [--pg-url URL]

Without --pg-url it runs on a throwaway cluster (tests/support/postgres.py). Prints the
throughput and latencies, and what correctness demands: zero lost writes (every
acknowledged write found, or accounted for by a cycle's tombstone or a pruned copy),
zero half-applied cycles (the reader's check, in one snapshot, every second, and a last
one when all have stopped) and no StoreError (contention is retried, ADR 0047).
`tests/pg/test_pg_soak.py` runs a short one and asserts the correctness only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import median, percentile, postgres_url
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.consolidation.invariants import check_invariants
from tests.support.pg_worker import TEXTS, entries, go, lost_writes, spawn

WRITERS = 4


@dataclass
class Soak:
    seconds: float
    writers: int
    writes: int = 0
    remember_ms: list[float] = field(default_factory=list)
    write_ms: list[float] = field(default_factory=list)
    apply_ms: list[float] = field(default_factory=list)
    cycles: Counter[str] = field(default_factory=Counter)
    reverts: int = 0
    checks: int = 0
    check_ms: list[float] = field(default_factory=list)
    half_applied: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    final_violations: list[str] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    crashed: list[str] = field(default_factory=list)
    deadlocks: int = 0  # the server's count for the database: store sessions never deadlock

    @property
    def store_errors(self) -> int:
        return sum(n for kind, n in self.refusals.items() if kind.endswith("StoreError"))

    @property
    def correct(self) -> bool:
        return not (
            self.half_applied
            or self.lost
            or self.final_violations
            or self.store_errors
            or self.crashed
        )


def run(url: str, seconds: float, workdir: Path, writers: int = WRITERS) -> Soak:
    agents = [f"host-{n}" for n in range(writers)]
    with PgStore.open(url) as store:
        for agent in agents:  # enough near-duplicates that the first cycles apply
            for i in range(12):
                store.put(agent, TEXTS[i % len(TEXTS)])
    logs = {name: workdir / f"{name}.jsonl" for name in [*agents, "cycler", "reader"]}
    children = {name: spawn("writer", url, logs[name], seconds, n, name) for n, name in
                enumerate(agents)}  # fmt: skip
    children["cycler"] = spawn("cycler", url, logs["cycler"], seconds, 99, *agents)
    children["reader"] = spawn("reader", url, logs["reader"], seconds, 0)
    for child in children.values():
        go(child)
    started = time.monotonic()
    soak = Soak(seconds, writers)
    for name, child in children.items():
        _, err = child.communicate(timeout=seconds + 120)
        if child.returncode != 0:
            soak.crashed.append(f"{name} exited {child.returncode}: {err[-1500:]}")
    soak.seconds = time.monotonic() - started
    writes = entries(logs[a] for a in agents)
    _tally(soak, writes, entries([logs["cycler"]]), entries([logs["reader"]]))
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        soak.deadlocks = int(row[0]) if row else 0
    with PgStore.open(url) as store:
        soak.lost = lost_writes(store, writes)
        soak.final_violations = [
            f"{c.name}: {v}" for c in check_invariants(store) for v in c.violations
        ]
    return soak


def _tally(soak: Soak, writes: list[Any], cycles: list[Any], checks: list[Any]) -> None:
    for entry in [*writes, *cycles, *checks]:
        if "refused" in entry:
            soak.refusals[f"{entry['op']}: {entry['refused']}"] += 1
    for entry in writes:
        if "refused" not in entry and entry["op"] != "pin-try":  # a try is said, not a write
            soak.writes += 1
            soak.write_ms.append(entry["ms"])
            if entry["op"] == "remember":
                soak.remember_ms.append(entry["ms"])
    for entry in cycles:
        if entry["op"] == "revert" and "refused" not in entry:
            soak.reverts += 1
        elif entry["op"] == "cycle" and "refused" not in entry:
            soak.cycles[entry["outcome"]] += 1
            if entry["outcome"] == "applied":
                soak.apply_ms.append(entry["apply_ms"])
    for entry in checks:
        if entry["op"] == "check" and "refused" not in entry:
            soak.checks += 1
            soak.check_ms.append(entry["ms"])
            soak.half_applied += entry["violations"]


def _p(samples: list[float], p: float) -> str:
    return f"{percentile(samples, p):.1f}" if samples else "-"


def med(samples: list[float]) -> str:
    return f"{median(samples):.1f}" if samples else "-"


def report(soak: Soak) -> str:
    rate = soak.writes / soak.seconds if soak.seconds else 0.0
    lines = [
        f"{soak.writers} writers + cycler + reader for {soak.seconds:.1f} s",
        f"| {'figure':<34} | {'value':>12} |",
        f"|{'-' * 36}|{'-' * 14}|",
        f"| {'acknowledged writes':<34} | {soak.writes:>12} |",
        f"| {'writes/s (all writers)':<34} | {rate:>12.1f} |",
        f"| {'remember p50 / p99 (ms)':<34} | {med(soak.remember_ms):>5} / "
        f"{_p(soak.remember_ms, 99):>4} |",
        f"| {'any write p50 / p99 (ms)':<34} | {med(soak.write_ms):>5} / "
        f"{_p(soak.write_ms, 99):>4} |",
        f"| {'cycles applied / other':<34} | {soak.cycles['applied']:>5} / "
        f"{sum(soak.cycles.values()) - soak.cycles['applied']:>4} |",
        f"| {'cycle apply p50 / p99 (ms)':<34} | {med(soak.apply_ms):>5} / "
        f"{_p(soak.apply_ms, 99):>4} |",
        f"| {'reverts':<34} | {soak.reverts:>12} |",
        f"| {'reader checks (p50 ms)':<34} | {soak.checks:>5} ({med(soak.check_ms)}) |",
        f"| {'lost writes':<34} | {len(soak.lost):>12} |",
        f"| {'half-applied cycles seen':<34} | {len(soak.half_applied):>12} |",
        f"| {'invariant violations at the end':<34} | {len(soak.final_violations):>12} |",
        f"| {'StoreErrors':<34} | {soak.store_errors:>12} |",
        f"| {'deadlocks (server statistics)':<34} | {soak.deadlocks:>12} |",
        "refusals (a correct store's answers to racing requests): "
        + (", ".join(f"{k} {n}" for k, n in soak.refusals.most_common()) or "none"),
    ]
    for problem in [*soak.crashed, *soak.lost, *soak.half_applied, *soak.final_violations][:20]:
        lines.append(f"PROBLEM: {problem}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("seconds", nargs="?", type=float, default=60.0)
    parser.add_argument("--writers", type=int, default=WRITERS)
    parser.add_argument("--pg-url", default=None)
    args = parser.parse_args()
    with postgres_url(args.pg_url, "soak") as url, tempfile.TemporaryDirectory() as tmp:
        soak = run(url, args.seconds, Path(tmp), args.writers)
    print(report(soak))
    sys.exit(0 if soak.correct else 1)


if __name__ == "__main__":
    main()
