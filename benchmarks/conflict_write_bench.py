"""`remember` latency with the pair check on the write path, at 10k facts of one agent.

    python benchmarks/conflict_write_bench.py [--facts 10000] [--writes 200]
                                              [--backend lmdb|postgres]

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

`--backend postgres` runs the same on PostgreSQL: a throwaway cluster on loopback
(tests/support/postgres.py), each store a fresh database. There the check's reads are
round trips, and the server's CPU is not this process's: read the wall columns.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parent.parent))  # tests.support

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


Opener = Callable[[], AbstractContextManager[Any]]


@contextmanager
def lmdb_store() -> Iterator[Any]:
    with tempfile.TemporaryDirectory() as tmp, LmdbStore.open(Path(tmp) / "s") as store:
        yield store


@contextmanager
def postgres_stores() -> Iterator[Opener]:
    """Fresh databases of one throwaway cluster, one per store."""
    from graymatter_tui.backends.postgres import PgStore
    from tests.support.postgres import throwaway_cluster

    with throwaway_cluster() as cluster:

        @contextmanager
        def one() -> Iterator[Any]:
            with PgStore.open(cluster.url(cluster.new_database("gm_pairs"))) as store:
                yield store

        yield one


def run(kind: str, facts: int, count: int, backend: str, open_store: Opener) -> None:
    texts = fact_texts(facts) if kind == "vocabulary" else template_texts(facts)
    with open_store() as store:
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
    for side in ("before", "after"):
        w, c = wall[side], cpu[side]
        print(
            f"| {backend} | {kind} | {side} | {facts} | {count} | {percentile(w, 50):.2f} | "
            f"{percentile(w, 95):.2f} | {percentile(w, 99):.2f} | {percentile(c, 50):.2f} | "
            f"{percentile(c, 99):.2f} | {pending if side == 'after' else 0} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--backend", choices=("lmdb", "postgres"), default="lmdb")
    args = parser.parse_args()
    print(
        "| backend | store | path | facts | writes | wall p50 ms | p95 | p99 | CPU p50 ms "
        "| CPU p99 | items held |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    if args.backend == "lmdb":
        for kind in ("vocabulary", "templates"):
            run(kind, args.facts, args.writes, "lmdb", lmdb_store)
        return
    with postgres_stores() as open_store:
        for kind in ("vocabulary", "templates"):
            run(kind, args.facts, args.writes, "postgres", open_store)


if __name__ == "__main__":
    main()
