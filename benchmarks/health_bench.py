"""`doctor --health` on big stores, one run.

    python benchmarks/health_bench.py [--sizes 100000,1000000] [--keep-stores DIR]

For each size an LMDB store is built once (bulk `put_many` in chunks of 100k, as the
other benchmarks do; tombstones of a second agent by `import_all`): one agent of `size`
facts a second apart, one in 100 a duplicate of another, one in 1,000 a weak decision
near pruning, one in 10,000 pinned, plus an agent of `size // 10` facts of which 60% are
tombstones. Then, best of three each:

- the floor: reading what the rules read (every live fact's id and text, and its
  weight) with nothing computed;
- the rules in-process (`views.health.check_health`, every agent);
- the command a person runs: `graymatter-tui doctor --health --json` in a fresh
  process (interpreter start and imports included), GRAYMATTER_EMBED=none so no model
  is loaded.

The findings of the last run are printed, so the numbers are of a report that found
something.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
AGENT = "bench"
TOMB_AGENT = "bench-loops"
CHUNK = 100_000


def build(path: Path, size: int) -> None:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.clock import format_time
    from graymatter_tui.core.model import RETIRED, Fact
    from graymatter_tui.storage import NewFact
    from graymatter_tui.storage.ids import new_id

    def item(i: int) -> NewFact:
        text = f"Fact number {i}: deploy staging ledger port {i % 9973} ref OPS-{i % 10000}"
        weight = 1.0
        if i % 100 == 1:
            j = i - 1
            text = f"Fact number {j}: deploy staging ledger port {j % 9973} ref OPS-{j % 10000}"
        if i % 1000 == 7:
            text, weight = f"We decided that service {i} must deploy on Tuesdays", 0.02
        return NewFact(
            agent_id=AGENT,
            text=text,
            created_at=NOW - timedelta(seconds=size - i),
            weight=weight,
            pinned=i % 10_000 == 3,
        )

    with LmdbStore.open(path, clock_fn=lambda: NOW) as store:
        for start in range(0, size, CHUNK):
            store.put_many(item(i) for i in range(start, min(start + CHUNK, size)))
        loops = size // 10
        for start in range(0, loops, CHUNK):
            facts = []
            for i in range(start, min(start + CHUNK, loops)):
                moment = NOW - timedelta(seconds=loops - i)
                stamp = format_time(moment)
                facts.append(
                    Fact(
                        id=new_id(moment),
                        agent_id=TOMB_AGENT,
                        text=f"Revision {i} of the staging port note",
                        created_at=stamp,
                        accessed_at=stamp,
                        superseded_by=RETIRED if i % 10 < 6 else "",
                    )
                )
            store.import_all(facts, [])


def best_of(n: int, fn: object) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def measure(path: Path) -> tuple[float, float, float, dict[str, object]]:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.views.health import check_health

    with LmdbStore.open(path, read_only=True) as store:

        def floor() -> None:
            for agent in store.agents():
                store.texts(agent.agent_id, "live")
                store.weights(agent.agent_id, "live")

        raw = best_of(3, floor)
        rules = best_of(3, lambda: check_health(store, embed_model=None))
    env = {**os.environ, "GRAYMATTER_DIR": str(path), "GRAYMATTER_EMBED": "none"}
    env.pop("GRAYMATTER_STORE", None)
    out: dict[str, object] = {}

    def command() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "graymatter_tui", "doctor", "--health", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        out.update(json.loads(done.stdout))

    cli = best_of(3, command)
    return raw, rules, cli, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--keep-stores", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base = args.keep_stores or Path(tempfile.mkdtemp(prefix="health-bench-"))
    print(
        "| facts | read ids, texts, weights | rules in-process | ratio | `doctor --health --json` |"
    )
    print("|---:|---:|---:|---:|---:|")
    reports = []
    for size in sizes:
        path = base / f"store-{size}"
        if not (path / "data.mdb").exists():
            started = time.perf_counter()
            build(path, size)
            print(
                f"(built {size:,} facts in {time.perf_counter() - started:.1f} s)", file=sys.stderr
            )
        raw, rules, cli, report = measure(path)
        total = size + size // 10
        print(f"| {total:,} | {raw:.2f} s | {rules:.2f} s | {rules / raw:.2f}× | {cli:.2f} s |")
        reports.append((total, report))
    for total, report in reports:
        print(f"\nfindings at {total:,} facts (verdict {report['verdict']}):")
        for agent in report["agents"]:  # type: ignore[attr-defined]
            for finding in agent["findings"]:
                if finding["status"] != "ok":
                    rule = f"{agent['agent_id']}: {finding['rule']} {finding['status']}"
                    print(f"  {rule}: {finding['detail']}")


if __name__ == "__main__":
    main()
