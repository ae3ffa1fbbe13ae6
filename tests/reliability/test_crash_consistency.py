"""SIGKILL a writer at random moments of remember, revise, apply and revert; after every
kill the store must open and invariants I-1…I-6 (the code `doctor` runs) must hold, and
the writer must have met no refusal a correct store would not make. Short by default (5
kills, more until one lands after an applied cycle), 220 kills with GRAYMATTER_SOAK=1."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.invariants import check_invariants
from tests.reliability.conftest import start_worker
from tests.reliability.worker import read_refusals, refusal_problems
from tests.support.soak import rounds

SOAK_KILLS = 220


def test_random_kills_leave_a_consistent_store(tmp_path: Path) -> None:
    at_least = rounds(5, SOAK_KILLS)
    at_most = max(at_least, SOAK_KILLS)
    path = tmp_path / "store"
    rng = random.Random(2026)
    refusals = tmp_path / "refusals.jsonl"
    violations: list[str] = []
    died_early: list[str] = []
    applied_seen = 0
    kills = 0
    # The kills must land among real consolidation work: go on (up to the soak's figure)
    # until an applied cycle has been seen.
    while kills < at_least or (applied_seen == 0 and kills < at_most):
        attempt = kills
        kills += 1
        child = start_worker("mixed", str(path), str(refusals), "0", str(attempt), ready=True)
        time.sleep(rng.uniform(0.05, 0.5))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.returncode != -signal.SIGKILL:  # it stopped on its own: an uncaught error
            tail = child.stderr.read().decode()[-1500:] if child.stderr else ""
            died_early.append(f"worker {attempt} exited {child.returncode}: {tail}")
        if child.stderr:
            child.stderr.close()
        with LmdbStore.open(path) as store:
            for check in check_invariants(store):
                violations += [f"kill {attempt}: {v}" for v in check.violations]
            applied_seen = store.counters().consolidations
    counts = read_refusals([refusals])
    print(
        f"\ncrash consistency: {kills} SIGKILLs, {applied_seen} applied cycles survived, "
        f"{len(violations)} violations, refusals by kind:"
    )
    for key, count in counts.most_common():
        print(f"  {count:5d}  {key}")
    assert died_early == [], "\n".join(died_early)
    assert violations == []
    unexpected = refusal_problems(counts)
    assert unexpected == [], f"refusals a correct store would not make: {unexpected}; {counts}"
    assert applied_seen > 0  # the kills did land among real consolidation work
