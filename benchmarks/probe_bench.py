"""Probes at review: how long `check_probes` holds the store's write lock (ADR 0039).

    python benchmarks/probe_bench.py [--facts 100000] [--probes 100] [--k 8] [--runs 5]

Builds one agent's store of `--facts` facts (bulk `put_many`, words drawn Zipf-like from a
~2k-word vocabulary), saves `--probes` probes of 1-3 of those words, and times
`check_probes` for a proposal consuming 10 facts: one write transaction that ranks every
probe, applies, ranks every probe again, and is abandoned. Beside it, the same rankings
done twice in plain read transactions (what the probes cost without the trial), so the
apply-and-abort overhead shows.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall.probes import check_probes
from graymatter_tui.recall.ranking import rank
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import ApplyRequest, NewFact

AGENT = "bench"
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--probes", type=int, default=100)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--pool", type=int, default=0, help="draw probe words from the N commonest (0: all)"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = sorted({"".join(rng.choice(SYLLABLES) for _ in range(3)) for _ in range(2000)})
    weights = [1 / (i + 1) for i in range(len(words))]
    with tempfile.TemporaryDirectory() as tmp, LmdbStore.open(Path(tmp) / "s") as store:
        for start in range(0, args.facts, 20_000):
            count = min(20_000, args.facts - start)
            store.put_many(
                NewFact(AGENT, " ".join(rng.choices(words, weights, k=8))) for _ in range(count)
            )
        for _ in range(args.probes):
            pool = words[: args.pool] if args.pool else words
            store.add_probe(AGENT, " ".join(rng.sample(pool, rng.randint(1, 3))), args.k)
        facts = store.list_facts(AGENT, limit=10)
        request = ApplyRequest(
            cycle_id=store.unused_id(store.now()),
            agent_id=AGENT,
            summary=" ".join(rng.sample(words, 12)),
            consume=[f.id for f in facts],
            snapshot={f.id: f.text for f in facts},
        )
        probes = store.probes(AGENT)
        trial, plain = [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            check = check_probes(store, request)
            trial.append(time.perf_counter() - started)
            started = time.perf_counter()
            for _twice in range(2):
                for probe in probes:
                    rank(store, AGENT, probe.query, k=probe.k, vectors=NO_VECTORS)
            plain.append(time.perf_counter() - started)
        print(
            f"{args.facts} facts, {len(probes)} probes (k={args.k}), {args.runs} runs: "
            f"check_probes median {statistics.median(trial) * 1000:.1f} ms "
            f"(write lock held); the same {2 * len(probes)} rankings in read "
            f"transactions {statistics.median(plain) * 1000:.1f} ms; "
            f"{sum(1 for r in check.results if r.changed)} probes changed, "
            f"{check.lost} facts lost"
        )


if __name__ == "__main__":
    main()
