"""A full consolidation cycle with the offline `local` summariser at 1k, 10k and 100k
facts, beside raw py-lmdb scanning and rewriting every record of the same data.

    python benchmarks/cycle_bench.py [--sizes 1000,10000,100000]

"first" includes extracting every fact into the graph; "steady" are the next cycles, where
the extraction watermark skips unchanged facts. The store holds 20 pairs of old
near-duplicates, so every cycle has something to apply, and the clock moves on an hour
before each cycle, so every cycle's decay rewrites every unpinned weight. Each cycle's
own outcome is printed. Goal: under 1 s at 100k, and a steady cycle within 2× the raw
rewrite. Each time is also given in CPU time of this process (the cycle runs in it): on a
shared, loaded machine the CPU ratio moves far less than the wall one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import lmdb
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOW, new_facts

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.core.model import Fact
from graymatter_tui.storage import NewFact

TWINS = 20

encode = msgspec.json.Encoder().encode
decode = msgspec.json.Decoder(Fact).decode


def raw_rewrite(source: Path, agent: str) -> tuple[float, float]:
    """Scan every record of the agent, decode, change the weight, encode, put: one txn."""
    env = lmdb.open(str(source), map_size=8 << 30, max_dbs=16, lib_version=0)
    db = env.open_db(b"facts", create=False)
    prefix = agent.encode() + b"\0"
    started, cpu = time.perf_counter(), time.process_time()
    with env.begin(write=True) as txn:
        cursor = txn.cursor(db=db)
        found = cursor.set_range(prefix)
        while found and cursor.key().startswith(prefix):
            fact = decode(cursor.value())
            cursor.put(
                bytes(cursor.key()),
                encode(msgspec.structs.replace(fact, weight=fact.weight * 0.999)),
            )
            found = cursor.next()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    env.close()
    return elapsed, cpu


def old_twins(n: int) -> list[NewFact]:
    """`n` pairs of near-duplicates older than every other fact, so each cycle's batch (the
    weakest facts) holds some and the `local` summariser has something to merge."""
    out = []
    for i in range(n):
        text = f"Legacy runbook {i} for the billing host moved to the wiki."
        created = NOW - timedelta(days=100 + i)
        for body in (text, text + " Confirmed."):
            out.append(NewFact(agent_id="bench", text=body, created_at=created))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--steady", type=int, default=3, help="steady cycles after the first")
    args = parser.parse_args()
    print(
        "cycle_bench: full cycle, local summariser, threshold 20, max_batch 32; the clock moves "
        "on one hour before every cycle, so each one decays every fact"
    )
    print(
        "| facts | raw scan+rewrite | cycle (first) | ratio | outcome | cycle (steady, median) "
        "| ratio | steady outcomes | CPU: raw, steady cycle, ratio |"
    )
    print("|------:|---:|---:|---:|---|---:|---:|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "store"
            now = [NOW]
            store = LmdbStore.open(path, clock_fn=lambda now=now: now[0])  # type: ignore[misc]
            store.put_many(new_facts("bench", size - 2 * TWINS, dupes=0.05) + old_twins(TWINS))
            options = CycleOptions(threshold=20, max_batch=32)
            times: list[float] = []
            cpus: list[float] = []
            outcomes: list[str] = []
            for _ in range(1 + args.steady):
                now[0] += timedelta(hours=1)
                started, cpu = time.perf_counter(), time.process_time()
                record = Cycle(store, "bench", LocalSummariser(), options).run_sync()
                times.append(time.perf_counter() - started)
                cpus.append(time.process_time() - cpu)
                outcomes.append(f"{record.outcome} ({len(record.consumed)} consumed)")
            store.close()
            raws = [raw_rewrite(path, "bench") for _ in range(2)]
        raw_s, raw_cpu = min(r[0] for r in raws), min(r[1] for r in raws)
        first_s, steady = times[0], sorted(times[1:])
        steady_s = steady[len(steady) // 2] if steady else float("nan")
        steady_cpus = sorted(cpus[1:])
        steady_cpu = steady_cpus[len(steady_cpus) // 2] if steady_cpus else float("nan")
        print(
            f"| {size:>7} | {raw_s:.3f} s | {first_s:.3f} s | {first_s / raw_s:.1f}× "
            f"| {outcomes[0]} | {steady_s:.3f} s | {steady_s / raw_s:.1f}× "
            f"| {', '.join(outcomes[1:])} "
            f"| {raw_cpu:.3f} s, {steady_cpu:.3f} s, {steady_cpu / raw_cpu:.1f}× |"
        )


if __name__ == "__main__":
    main()
