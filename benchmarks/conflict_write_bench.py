"""`remember` latency with the pair check on the write path, at 10k facts of one agent.

    python benchmarks/conflict_write_bench.py [--facts 10000] [--writes 200]

Two stores of `--facts` facts of one agent: `vocabulary` (12 of 22 shared words each, so
every word is in thousands of facts: the worst case for finding candidates through the
keyword index) and `templates` (the demo's ops sentences filled in, as an agent's
notes look). Then `--writes` single `Store.put` calls, each one transaction as
`remember` makes it, timed one by one; half are new sentences of the store's own kind,
half repeat a held sentence with one number changed (a possible update). The store is
filled with `put_many` and no pair check.

Before and after are measured in one process, alternately, on the same store: `before`
is the write path without the check (`fact_ops.put` alone in one transaction, the body
of `Store.put` before the check), `after` is `Store.remember`. On a machine shared with
other work, wall times move with the load; CPU time (of this process) moves less, so
both are given.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOW, fact_texts, percentile

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.exchange.demo import _OPS, _fill
from graymatter_tui.storage import NewFact, fact_ops

AGENT = "ops"


def template_texts(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [f"{_fill(rng.choice(_OPS), rng)} #{i}" for i in range(n)]


def writes(held: list[str], count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        base = rng.choice(held)
        if i % 2:
            out.append(base.rsplit("#", 1)[0] + f"#{len(held) + i} (now {rng.randint(2, 99)})")
        else:
            out.append(f"{base.rsplit('#', 1)[0]} revised {rng.randint(1000, 9999)}")
    return out


def run(kind: str, facts: int, count: int) -> None:
    texts = fact_texts(facts) if kind == "vocabulary" else template_texts(facts)
    with tempfile.TemporaryDirectory() as tmp:
        store = LmdbStore.open(Path(tmp) / "s")
        items = [NewFact(agent_id=AGENT, text=t, created_at=NOW) for t in texts]
        store.put_many(items)
        wall: dict[str, list[float]] = {"before": [], "after": []}
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        for index, text in enumerate(writes(texts, count * 2)):
            side = "after" if index % 2 else "before"
            started, used = time.perf_counter(), time.process_time()
            if side == "after":
                store.remember(AGENT, text)
            else:
                store._write(lambda tx, t=text: fact_ops.put(tx, AGENT, t, False))
            wall[side].append((time.perf_counter() - started) * 1000)
            cpu[side].append((time.process_time() - used) * 1000)
        pending = store.pending_count()
        store.close()
    for side in ("before", "after"):
        w, c = wall[side], cpu[side]
        print(
            f"| {kind} | {side} | {facts} | {count} | {percentile(w, 50):.2f} | "
            f"{percentile(w, 95):.2f} | {percentile(w, 99):.2f} | {percentile(c, 50):.2f} | "
            f"{percentile(c, 99):.2f} | {pending if side == 'after' else 0} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    print(
        "| store | path | facts | writes | wall p50 ms | p95 | p99 | CPU p50 ms | CPU p99 |"
        " items held |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in ("vocabulary", "templates"):
        run(kind, args.facts, args.writes)


if __name__ == "__main__":
    main()
