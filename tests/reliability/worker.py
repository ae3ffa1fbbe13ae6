"""A store worker run as a child process by the reliability tests.

    python tests/reliability/worker.py MODE STORE_DIR [ACK_FILE] [SECONDS] [SEED]

MODE `mixed`: loop forever over remember / revise / retire / pin / local consolidation
cycles / reverts, with random agents. MODE `writer`: remember only, appending each id to
ACK_FILE after its transaction committed (an acknowledged write), with per-write latency.
MODE `cycler`: consolidation cycles and reverts. MODE `reader`: read and check that no
half-applied cycle is ever visible. Each mode stops after SECONDS (0 = until killed).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions  # noqa: E402
from graymatter_tui.consolidation.summarisers.local import LocalSummariser  # noqa: E402
from graymatter_tui.errors import GraymatterError  # noqa: E402
from graymatter_tui.store import Store  # noqa: E402
from graymatter_tui.store.tx import Tx  # noqa: E402

AGENTS = ("alpha", "beta")
TEXTS = (
    "The staging database listens on port 5432.",
    "The staging database listens on port 5432. Use the VPN.",
    "Deploys happen on Tuesdays.",
    "Deploys happen on Tuesdays. Never on Fridays.",
    "Invoices for Acme go to billing@acme.example.",
    "Acme wants invoices sent to billing@acme.example.",
)


def mixed(store: Store, rng: random.Random, until: float) -> None:
    options = CycleOptions(threshold=5, max_batch=16)
    while not until or time.monotonic() < until:
        agent = rng.choice(AGENTS)
        roll = rng.random()
        try:
            if roll < 0.45:
                store.put(agent, f"{rng.choice(TEXTS)} #{rng.randint(0, 40)}")
            elif roll < 0.6:
                ids = store.fact_ids(agent, "live")
                if ids:
                    store.revise(rng.choice(ids), f"{rng.choice(TEXTS)} (revised)")
            elif roll < 0.67:
                ids = store.fact_ids(agent, "live")
                if ids:
                    target = rng.choice(ids)
                    if store.get(target).pinned:
                        store.unpin(target)
                    else:
                        store.pin(target)
            elif roll < 0.72:
                ids = store.fact_ids(agent, "live")
                if ids:
                    store.retire(rng.choice(ids))
            elif roll < 0.92:
                Cycle(store, agent, LocalSummariser(), options).run_sync()
            else:
                applied = [
                    r
                    for r in store.records(agent, limit=20)
                    if r.outcome == "applied" and r.kind == "consolidate" and not r.reverted_by
                ]
                if applied:
                    store.revert(rng.choice(applied).cycle_id)
        except GraymatterError:
            pass  # refusals (tombstone pinned meanwhile, revert unsafe) are expected


def writer(store: Store, ack: Path, until: float, name: str) -> None:
    with open(ack, "a", encoding="utf-8") as out:
        n = 0
        while not until or time.monotonic() < until:
            started = time.perf_counter()
            fact = store.put(f"agent-{name}", f"write {n} from {name}")
            latency = time.perf_counter() - started
            out.write(json.dumps({"id": fact.id, "ms": latency * 1000}) + "\n")
            out.flush()
            n += 1


def cycler(store: Store, until: float, rng: random.Random) -> None:
    options = CycleOptions(threshold=5, max_batch=16)
    while not until or time.monotonic() < until:
        agent = rng.choice(("agent-w0", "agent-w1", "agent-w2"))
        for text in rng.sample(TEXTS, 2):
            store.put(agent, text)
        with contextlib.suppress(GraymatterError):
            Cycle(store, agent, LocalSummariser(), options).run_sync()


def reader(store: Store, until: float, report: Path) -> None:
    """Within one read transaction, every applied cycle must be whole: its summary present
    (or pruned) and each consumed fact a tombstone pointing at it (or pruned/restored)."""
    checks = violations = 0
    while not until or time.monotonic() < until:

        def check(tx: Tx) -> int:
            bad = 0
            cursor = tx.txn.cursor(db=tx.dbs.journal)
            from graymatter_tui.store.codec import decode_record

            records = [decode_record(v) for _k, v in cursor.iternext()]
            restored = {i for r in records if r.kind == "revert" for i in r.restored}
            pruned = {f.id for r in records for f in r.pruned}
            for record in records:
                if record.kind != "consolidate" or record.outcome != "applied":
                    continue
                summary = tx.find(record.summary_id)
                if summary is None and record.summary_id not in pruned:
                    bad += 1
                for fact_id in record.consumed:
                    fact = tx.find(fact_id)
                    if fact is None or fact_id in restored:
                        continue
                    if fact.superseded_by != record.summary_id:
                        bad += 1
            return bad

        violations += store.read(check)
        checks += 1
    report.write_text(json.dumps({"checks": checks, "violations": violations}))


def main() -> None:
    mode, directory = sys.argv[1], Path(sys.argv[2])
    extra = sys.argv[3] if len(sys.argv) > 3 else ""
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else os.getpid()
    until = time.monotonic() + seconds if seconds else 0.0
    rng = random.Random(seed)
    store = Store.open(directory)
    if mode == "mixed":
        mixed(store, rng, until)
    elif mode == "writer":
        writer(store, Path(extra), until, str(seed))
    elif mode == "cycler":
        cycler(store, until, rng)
    elif mode == "reader":
        reader(store, until, Path(extra))
    store.close()


if __name__ == "__main__":
    main()
