"""A cycle's scans of the vitals rows take as many rows as the agent's counts say, in one
C call, and check that those are exactly the agent's. Counts that disagree with the rows
(a store damaged by hand, or a bug) must never make a scan miss a fact or take another
agent's: the scan then walks the rows one by one.

LMDB only: the vitals table and the counts row are LMDB's.
"""

from __future__ import annotations

from pathlib import Path

import lmdb
import msgspec
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def _set_live_count(path: Path, agent: str, change: int) -> None:
    env = lmdb.open(str(path), max_dbs=32)
    try:
        with env.begin(write=True) as txn:
            table = env.open_db(b"agents", txn=txn)
            counts = msgspec.json.decode(txn.get(agent.encode(), db=table))
            counts["live"] += change
            txn.put(agent.encode(), msgspec.json.encode(counts), db=table)
    finally:
        env.close()


@pytest.mark.parametrize("change", [0, -1, +1, +5, -50])
def test_weights_and_decay_see_every_fact_of_the_agent_and_no_other(
    tmp_path: Path, change: int
) -> None:
    path = tmp_path / "s"
    with LmdbStore.open(path) as store:
        # "a" sorts right before "a-b" and "b": rows of other agents follow its own.
        for agent, n in (("a", 50), ("a-b", 7), ("b", 9)):
            store.put_many(NewFact(agent, f"fact {i} of {agent}", weight=0.5) for i in range(n))
        want = store.weights("a")
    _set_live_count(path, "a", change)
    with LmdbStore.open(path) as store:
        assert store.weights("a") == want
        assert len(want) == 50
        assert store.decay("a", 1.0, dry_run=True).examined == 50
        assert store.selection("a", 1.0, max_batch=4).live == 50
