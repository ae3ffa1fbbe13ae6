"""Memory as it was: `list --as-of` and `recall --as-of` beside plain `list` and
`recall preview` on the same store, in the same run.

    python benchmarks/asof_bench.py [--facts 100000] [--repeat 3] [--changed 2000]

An LMDB store gets `--facts` facts of one agent (the worst case: `--as-of` reads a whole
agent), then a history a minute apart: `--changed` revisions, as many retirements, a
consolidation consuming 50 facts and its revert. Each figure is the best of `--repeat`
runs of the real CLI in a fresh process (`python -m graymatter_tui`, startup included),
and of the store call alone in this process (`past_facts` against `list_facts`). The
moment asked for is before the history, so every changed fact is in the answer with what
happened to it since. A printed check confirms the as-of list has the facts the store
listed as live at that moment.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import NOW, new_facts
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core import clock
from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage.values import ApplyRequest

AGENT = "ops"
CHUNK = 20_000


class Tick:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self):  # type: ignore[no-untyped-def]
        return self.now


def build(path: Path, facts: int, changed: int) -> tuple[str, str, set[str]]:
    """The store; the moment before its history, the cycle's id, and the live ids then."""
    tick = Tick()
    with LmdbStore.open(path, clock_fn=tick) as store:
        items = new_facts(AGENT, facts, seed=7)
        for start in range(0, len(items), CHUNK):
            store.put_many(items[start : start + CHUNK])
        live = store.list_facts(AGENT, "live")
        before = clock.format_time(tick.now)
        live_then = {f.id for f in live}
        tick.now += timedelta(minutes=1)
        for fact in live[:changed]:
            store.revise(fact.id, fact.text + " (revised)")
        tick.now += timedelta(minutes=1)
        for fact in live[changed : 2 * changed]:
            store.retire(fact.id)
        tick.now += timedelta(minutes=1)
        batch = live[2 * changed : 2 * changed + 50]
        cycle = store.unused_id(tick.now)
        stamp = clock.format_time(tick.now)
        store.apply_consolidation(
            ApplyRequest(
                cycle_id=cycle,
                agent_id=AGENT,
                summary="Fifty facts in one.",
                consume=[f.id for f in batch],
                snapshot={f.id: f.text for f in batch},
            ),
            CycleRecord(cycle_id=cycle, agent_id=AGENT, started_at=stamp, finished_at=stamp),
        )
        tick.now += timedelta(minutes=1)
        store.revert(cycle)
    return before, cycle, live_then


def cli(path: Path, *args: str) -> tuple[float, str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_")},
        "GRAYMATTER_DIR": str(path),
        "GRAYMATTER_EMBED": "none",
        "GRAYMATTER_NOW": "2026-12-01T00:00:00Z",
        "COLUMNS": "200",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args}: exit {done.returncode}: {done.stderr.strip()}")
    return took, done.stdout


def best(repeat: int, path: Path, *args: str) -> tuple[float, str]:
    runs = [cli(path, *args) for _ in range(repeat)]
    return min(t for t, _ in runs), runs[0][1]


def in_process(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--changed", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        started = time.perf_counter()
        before, cycle, live_then = build(path, args.facts, args.changed)
        print(
            f"built {args.facts} facts and their history in {time.perf_counter() - started:.1f} s"
        )

        pairs = [
            ("list AGENT --json", ["list", AGENT, "--json"], ["--as-of", before]),
            ("list AGENT (text)", ["list", AGENT], ["--as-of", before]),
            ("list AGENT --limit 50", ["list", AGENT, "--limit", "50"], ["--as-of", before]),
            ("list AGENT --json, as of a cycle", ["list", AGENT, "--json"], ["--as-of", cycle]),
            (
                "recall --preview AGENT 'deploy gateway latency'",
                ["recall", "--preview", AGENT, "deploy gateway latency"],
                ["--as-of", before],
            ),
        ]
        print()
        print(
            f"| command ({args.facts // 1000}k facts, best of {args.repeat}) "
            "| plain | --as-of | ratio |"
        )
        print("|---|---:|---:|---:|")
        for name, plain_args, extra in pairs:
            plain, _ = best(args.repeat, path, *plain_args)
            if plain_args[0] == "recall":
                as_of_args = ["recall", AGENT, plain_args[3], *extra]
            else:
                as_of_args = [*plain_args, *extra]
            past, out = best(args.repeat, path, *as_of_args)
            print(f"| `{name}` | {plain:.3f} s | {past:.3f} s | {past / plain:.2f}× |")
            if name == "list AGENT --json":
                listed = {f["id"] for f in json.loads(out)}
                print(
                    f"|   check: as-of list == live then: {listed == live_then} "
                    f"({len(listed)}) | | | |"
                )

        with LmdbStore.open(path, read_only=True) as store:
            moment = AsOf(time=clock.parse_time(before))
            plain = in_process(args.repeat, lambda: store.list_facts(AGENT, "live"))
            past = in_process(args.repeat, lambda: store.past_facts(AGENT, moment))
            ids = in_process(args.repeat, lambda: store.past_facts(AGENT, moment, with_facts=False))
            print(
                f"| store: `list_facts` / `past_facts` | {plain:.3f} s | {past:.3f} s "
                f"| {past / plain:.2f}× |"
            )
            print(
                f"| store: `past_facts(with_facts=False)` | {plain:.3f} s | {ids:.3f} s "
                f"| {ids / plain:.2f}× |"
            )


if __name__ == "__main__":
    main()
