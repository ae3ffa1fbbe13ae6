"""A store worker run as a child process by the reliability tests.

    python tests/reliability/worker.py MODE STORE_DIR [OUT_FILE] [SECONDS] [SEED]

MODE `mixed`: loop forever over remember / revise / retire / pin / local consolidation
cycles / reverts, with random agents. MODE `writer`: remember only, appending each id to
OUT_FILE after its transaction committed (an acknowledged write), with per-write latency.
MODE `cycler`: remember and consolidation cycles. MODE `reader`: read and check that no
half-applied cycle is ever visible, writing its tally to OUT_FILE. Each mode stops after
SECONDS (0 = until killed).

`mixed` and `cycler` append every refusal (a GraymatterError) to OUT_FILE as it happens, one
JSON line each, so the tests can count them by kind and fail on any a correct store would
not make (see `refusal_problems`), even when the worker is killed.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graymatter_tui.backends.lmdb import LmdbStore  # noqa: E402
from graymatter_tui.backends.lmdb.tx import Tx  # noqa: E402
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions  # noqa: E402
from graymatter_tui.consolidation.summarisers.local import LocalSummariser  # noqa: E402
from graymatter_tui.core.errors import GraymatterError  # noqa: E402

AGENTS = ("alpha", "beta")
TEXTS = (
    "The staging database listens on port 5432.",
    "The staging database listens on port 5432. Use the VPN.",
    "Deploys happen on Tuesdays.",
    "Deploys happen on Tuesdays. Never on Fridays.",
    "Invoices for Acme go to billing@acme.example.",
    "Acme wants invoices sent to billing@acme.example.",
)

# Refusals a correct store makes to this worker's requests: `mixed` picks any live fact, so
# it may ask to retire a pinned one, and a revert is refused once the cycle's summary or
# facts moved on (revised, pinned, consumed by a later cycle, pruned), and a revision that
# draws the fact's own text again changes nothing and is refused. Nothing else: `mixed`
# runs alone and reads the ids it acts on itself, so no race can explain a refusal, and a
# StoreError ("truncated", "corrupt", "not a graymatter store"...) is never one.
EXPECTED_REFUSALS = {
    ("retire", "Conflict", "is pinned; unpin it before retiring it"),
    ("revise", "Conflict", "text is unchanged; nothing revised"),
    ("revert", "Conflict", "cannot be reverted:"),
}
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


def log_refusal(out: TextIO, op: str, exc: GraymatterError) -> None:
    entry = {"op": op, "kind": type(exc).__name__, "message": str(exc)}
    out.write(json.dumps(entry) + "\n")
    out.flush()


def read_refusals(logs: Iterable[Path]) -> Counter[str]:
    """Refusals from the workers' logs, counted by operation, kind and message (ids elided)."""
    counts: Counter[str] = Counter()
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # the last line of a killed worker may be cut short
            message = ULID.sub("<id>", entry["message"])
            counts[f"{entry['op']}: {entry['kind']}: {message}"] += 1
    return counts


def refusal_problems(counts: Counter[str]) -> list[str]:
    """The counted refusals a correct store would not make."""
    return [
        key
        for key in counts
        if not any(
            key.startswith(f"{op}: {kind}: ") and needle in key
            for op, kind, needle in EXPECTED_REFUSALS
        )
    ]


def mixed(store: LmdbStore, rng: random.Random, until: float, out: TextIO) -> None:
    options = CycleOptions(threshold=5, max_batch=16)
    while not until or time.monotonic() < until:
        agent = rng.choice(AGENTS)
        roll = rng.random()
        op = "remember"
        try:
            if roll < 0.45:
                store.put(agent, f"{rng.choice(TEXTS)} #{rng.randint(0, 40)}")
            elif roll < 0.6:
                op = "revise"
                ids = store.fact_ids(agent, "live")
                if ids:
                    store.revise(rng.choice(ids), f"{rng.choice(TEXTS)} (revised)")
            elif roll < 0.67:
                op = "pin"
                ids = store.fact_ids(agent, "live")
                if ids:
                    target = rng.choice(ids)
                    if store.require(target).pinned:
                        store.unpin(target)
                    else:
                        store.pin(target)
            elif roll < 0.72:
                op = "retire"
                ids = store.fact_ids(agent, "live")
                if ids:
                    store.retire(rng.choice(ids))
            elif roll < 0.92:
                op = "cycle"
                Cycle(store, agent, LocalSummariser(), options).run_sync()
            else:
                op = "revert"
                applied = [
                    r
                    for r in store.records(agent, limit=20)
                    if r.outcome == "applied" and r.kind == "consolidate" and not r.reverted_by
                ]
                if applied:
                    store.revert(rng.choice(applied).cycle_id)
        except GraymatterError as exc:
            log_refusal(out, op, exc)


def writer(store: LmdbStore, ack: Path, until: float, name: str) -> None:
    with open(ack, "a", encoding="utf-8") as out:
        n = 0
        while not until or time.monotonic() < until:
            started = time.perf_counter()
            fact = store.put(f"agent-{name}", f"write {n} from {name}")
            latency = time.perf_counter() - started
            out.write(json.dumps({"id": fact.id, "ms": latency * 1000}) + "\n")
            out.flush()
            n += 1


def cycler(store: LmdbStore, until: float, rng: random.Random, out: TextIO) -> None:
    options = CycleOptions(threshold=5, max_batch=16)
    while not until or time.monotonic() < until:
        agent = rng.choice(("agent-w0", "agent-w1", "agent-w2"))
        op = "remember"
        try:
            for text in rng.sample(TEXTS, 2):
                store.put(agent, text)
            op = "cycle"
            Cycle(store, agent, LocalSummariser(), options).run_sync()
        except GraymatterError as exc:
            log_refusal(out, op, exc)


def reader(store: LmdbStore, until: float, report: Path) -> None:
    """Within one read transaction, every applied cycle must be whole: its summary present
    (or pruned) and each consumed fact a tombstone pointing at it (or pruned/restored)."""
    checks = violations = 0
    while not until or time.monotonic() < until:

        def check(tx: Tx) -> int:
            bad = 0
            cursor = tx.txn.cursor(db=tx.dbs.journal)
            from graymatter_tui.storage.codec import decode_record

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
    store = LmdbStore.open(directory)
    print("ready", flush=True)  # a test may time its kill from here, not from start-up
    if mode in ("mixed", "cycler"):
        with open(extra, "a", encoding="utf-8") as out:
            if mode == "mixed":
                mixed(store, rng, until, out)
            else:
                cycler(store, until, rng, out)
    elif mode == "writer":
        writer(store, Path(extra), until, str(seed))
    elif mode == "reader":
        reader(store, until, Path(extra))
    store.close()


if __name__ == "__main__":
    main()
