"""Three writers, a cycling process and a checking reader at once: every acknowledged
write is present afterwards, nobody errors or is refused, the reader never sees half a
cycle."""

from __future__ import annotations

import json
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.invariants import check_invariants
from tests.reliability.conftest import start_worker
from tests.reliability.worker import read_refusals


def test_writers_cycler_and_reader_together(tmp_path: Path, soak: bool) -> None:
    seconds = 60 if soak else 8
    path = tmp_path / "store"
    LmdbStore.open(path).close()
    acks = [tmp_path / f"ack{i}.jsonl" for i in range(3)]
    report = tmp_path / "reader.json"
    refusals = tmp_path / "cycler-refusals.jsonl"
    procs = [
        start_worker("writer", str(path), str(ack), str(seconds), str(i))
        for i, ack in enumerate(acks)
    ]
    procs.append(start_worker("cycler", str(path), str(refusals), str(seconds), "7"))
    procs.append(start_worker("reader", str(path), str(report), str(seconds), "8"))
    names = ["writer 0", "writer 1", "writer 2", "cycler", "reader"]
    errors = []
    for name, proc in zip(names, procs, strict=True):
        proc.wait(timeout=seconds + 120)
        if proc.returncode != 0:
            tail = proc.stderr.read().decode()[-1500:] if proc.stderr else ""
            errors.append(f"{name} exited {proc.returncode}: {tail}")
    assert errors == [], "\n".join(errors)
    acknowledged = [json.loads(line) for ack in acks for line in ack.read_text().splitlines()]
    latencies = sorted(a["ms"] for a in acknowledged)
    reader = json.loads(report.read_text())
    with LmdbStore.open(path) as store:
        missing = [a["id"] for a in acknowledged if store.find(a["id"]) is None]
        pruned = {f.id for r in store.records() for f in r.pruned}
        missing = [m for m in missing if m not in pruned]
        problems = [v for c in check_invariants(store) for v in c.violations]
        cycles = store.counters().cycles
    # The cycler works its own agents alone and the writers only add facts, so a correct
    # store refuses it nothing: any refusal counts against it.
    refused = read_refusals([refusals])
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    print(
        f"\nconcurrency: {seconds} s, {len(acknowledged)} acknowledged writes "
        f"({len(acknowledged) / seconds:.0f}/s), p50 {latencies[len(latencies) // 2]:.2f} ms, "
        f"p99 {p99:.2f} ms, {cycles} cycles, reader checks {reader['checks']}, "
        f"half-applied seen {reader['violations']}, missing {len(missing)}, "
        f"cycler refusals {sum(refused.values())}"
    )
    assert not refused, f"the cycler was refused: {dict(refused)}"
    assert missing == [], f"{len(missing)} acknowledged writes missing"
    assert reader["violations"] == 0 and reader["checks"] > 0, reader
    assert problems == [], problems
    assert cycles > 0, "the cycler never finished a cycle"
