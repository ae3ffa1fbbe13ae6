"""A full consolidation cycle with the offline `local` summariser at 1k, 10k and 100k
facts, beside raw py-lmdb scanning and rewriting every record of the same data.

    python benchmarks/cycle_bench.py [--sizes 1000,10000,100000]

"first" includes extracting every fact into the graph; "steady" is the next cycle, where
the extraction watermark skips unchanged facts. Goal (DESIGN.md §7): under 1 s at 100k.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import lmdb
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOW, new_facts

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.model import Fact
from graymatter_tui.store import Store

encode = msgspec.json.Encoder().encode
decode = msgspec.json.Decoder(Fact).decode


def raw_rewrite(source: Path, agent: str) -> float:
    """Scan every record of the agent, decode, change the weight, encode, put: one txn."""
    env = lmdb.open(str(source), map_size=8 << 30, max_dbs=16, lib_version=0)
    db = env.open_db(b"facts", create=False)
    prefix = agent.encode() + b"\0"
    started = time.perf_counter()
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
    elapsed = time.perf_counter() - started
    env.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    print("cycle_bench: full cycle, local summariser, threshold 20, max_batch 32")
    print("| facts | raw scan+rewrite | cycle (first) | ratio | cycle (steady) | ratio | outcome |")
    print("|------:|-----------------:|--------------:|------:|---------------:|------:|---------|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "store"
            store = Store.open(path, clock_fn=lambda: NOW)
            store.put_many(new_facts("bench", size, dupes=0.05))
            options = CycleOptions(threshold=20, max_batch=32)
            started = time.perf_counter()
            first = Cycle(store, "bench", LocalSummariser(), options).run_sync()
            first_s = time.perf_counter() - started
            started = time.perf_counter()
            Cycle(store, "bench", LocalSummariser(), options).run_sync()
            steady_s = time.perf_counter() - started
            store.close()
            raw_s = raw_rewrite(path, "bench")
        print(
            f"| {size:>7} | {raw_s:>14.3f} s | {first_s:>11.3f} s | {first_s / raw_s:>4.1f}× "
            f"| {steady_s:>12.3f} s | {steady_s / raw_s:>4.1f}× | {first.outcome} |"
        )


if __name__ == "__main__":
    main()
