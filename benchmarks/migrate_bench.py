"""`migrate` between backends, timed hop by hop, with an LMDB -> LMDB copy as the
baseline in the same run (issue 13).

    python benchmarks/migrate_bench.py [--facts 100000] [--no-cycle] [--pg-url URL]

An LMDB store gets `--facts` facts over three agents (`put_many`, 20k a chunk), then
(unless `--no-cycle`) one consolidation cycle of each agent with the `local` summariser,
which also extracts the graph of every live fact, a probe, a checkpoint and an alias.
Then three migrations, each `migration.migrate` with its verification (a second read of
the target, the comparison, and the invariants): LMDB -> LMDB (the baseline), LMDB ->
PostgreSQL and PostgreSQL -> LMDB. The run checks that the three targets export the same
bytes as the source (our jsonl) and that doctor passes on each. Without `--pg-url` it
starts a throwaway cluster (tests/support/postgres.py: fsync off).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import NOW, new_facts, postgres_url
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.cli.cycles import doctor_checks
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers.local import LocalSummariser
from graymatter_tui.core.config import Settings
from graymatter_tui.exchange.migration import MigrationReport, migrate
from graymatter_tui.exchange.transfer import export_bytes
from graymatter_tui.storage import MemoryStore

AGENTS = ("ops", "support", "research")
CHUNK = 20_000


def build(store: LmdbStore, facts: int, cycle: bool) -> None:
    per_agent = facts // len(AGENTS)
    for n, agent in enumerate(AGENTS):
        items = new_facts(agent, per_agent, seed=n + 7, dupes=0.05)
        for start in range(0, len(items), CHUNK):
            store.put_many(items[start : start + CHUNK])
    if cycle:
        for agent in AGENTS:
            Cycle(store, agent, LocalSummariser(), CycleOptions(threshold=20)).run_sync()
    store.add_probe(AGENTS[0], "staging database port")
    store.save_checkpoint(AGENTS[0], '{"step": 1}')
    store.add_alias(AGENTS[0], "db", ["database"])


def hop(name: str, source: MemoryStore, target: MemoryStore) -> tuple[str, MigrationReport, float]:
    started = time.perf_counter()
    report = migrate(source, target)
    return name, report, time.perf_counter() - started


def doctor_ok(location: str) -> bool:
    settings = Settings.from_env(store=location)
    return all(check["status"] != "fail" for check in doctor_checks(settings))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--no-cycle", action="store_true")
    parser.add_argument("--pg-url", default=None)
    args = parser.parse_args()
    clock = lambda: NOW  # noqa: E731 - one fixed time: exports compare byte for byte
    with tempfile.TemporaryDirectory() as tmp, postgres_url(args.pg_url, "migrate_bench") as url:
        root = Path(tmp)
        started = time.perf_counter()
        with LmdbStore.open(root / "source", clock_fn=clock) as source:
            build(source, args.facts, not args.no_cycle)
        print(f"built the source in {time.perf_counter() - started:.1f} s")
        hops = []
        with (
            LmdbStore.open(root / "source", read_only=True, clock_fn=clock) as source,
            LmdbStore.open(root / "copy", clock_fn=clock) as copy,
        ):
            hops.append(hop("LMDB -> LMDB (baseline)", source, copy))
            original = export_bytes(source)
            assert export_bytes(copy) == original, "the LMDB copy exports differently"
        with (
            LmdbStore.open(root / "source", read_only=True, clock_fn=clock) as source,
            PgStore.open(url, clock_fn=clock) as middle,
        ):
            hops.append(hop("LMDB -> PostgreSQL", source, middle))
            assert export_bytes(middle) == original, "the PostgreSQL copy exports differently"
        with (
            PgStore.open(url, read_only=True, clock_fn=clock) as middle,
            LmdbStore.open(root / "back", clock_fn=clock) as back,
        ):
            hops.append(hop("PostgreSQL -> LMDB", middle, back))
            assert export_bytes(back) == original, "the round trip exports differently"
        doctors = {
            where: doctor_ok(where) for where in (str(root / "copy"), url, str(root / "back"))
        }
    report = hops[0][1]
    records, rows = report.records, report.rows
    print(
        f"{report.facts} facts, {records} journal records, {rows['graph_nodes']} graph nodes, "
        f"{rows['graph_edges']} edges, {rows['extracted']} extraction marks, "
        f"{report.activity} activity entries"
    )
    print("exports identical on every hop: yes")
    print(f"doctor clean on every target: {'yes' if all(doctors.values()) else doctors}")
    base = hops[0][2]
    head = ("hop", "total s", "read", "write", "verify", "facts/s")
    print("| {:<24} | {:>7} | {:>5} | {:>5} | {:>6} | {:>8} | ratio |".format(*head))
    print(f"|{'-' * 26}|{'-' * 9}|{'-' * 7}|{'-' * 7}|{'-' * 8}|{'-' * 10}|-------|")
    for name, hop_report, seconds in hops:
        parts = hop_report.seconds
        print(
            f"| {name:<24} | {seconds:>7.1f} | {parts['read']:>5.1f} | {parts['write']:>5.1f} "
            f"| {parts['verify']:>6.1f} | {hop_report.facts / seconds:>8,.0f} "
            f"| {seconds / base:>5.1f} |"
        )


if __name__ == "__main__":
    main()
