"""Map growth: a store opened with a tiny map grows as it fills, and other processes adopt it.

LMDB only: the map is LMDB's.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.storage import NewFact

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

TINY_MAP = 64 * 1024
FILLER = "x" * 2000  # ~2 KB per fact


def batch(agent: str, start: int, n: int) -> list[NewFact]:
    return [NewFact(agent, f"{agent} {i:08d} {FILLER}") for i in range(start, start + n)]


def test_map_grows_past_50_mb_in_one_process(tmp_path: Path) -> None:
    path = tmp_path / "grow"
    store = LmdbStore.open(path, map_size=TINY_MAP)
    try:
        first_map = store.info().map_size
        assert first_map <= 2 * TINY_MAP
        written: dict[str, int] = {"a": 0, "b": 0}
        n = 0
        while (path / "data.mdb").stat().st_size <= 50_000_000:
            agent = "a" if n % 2 == 0 else "b"
            facts = store.put_many(batch(agent, written[agent], 2500))
            assert len(facts) == 2500
            written[agent] += 2500
            n += 1
        info = store.info()
        assert info.map_size > 50_000_000
        assert info.map_size > first_map
        assert info.file_bytes > 50_000_000
        assert info.map_used <= info.map_size

        summaries = {a.agent_id: a for a in store.agents()}
        for agent, count in written.items():
            assert summaries[agent].live_facts == count
            ids = store.fact_ids(agent)
            assert len(ids) == count
            facts = store.list_facts(agent)
            assert len(facts) == count
            texts = sorted(f.text for f in facts)
            assert texts == [f"{agent} {i:08d} {FILLER}" for i in range(count)]

        # still writable, and everything is there after a reopen
        extra = store.put("a", "after growth")
    finally:
        store.close()
    with LmdbStore.open(path, map_size=TINY_MAP) as reopened:
        assert reopened.require(extra.id) == extra
        assert reopened.info().map_size >= reopened.info().file_bytes  # all data mapped
        assert sum(a.live_facts for a in reopened.agents()) == sum(written.values()) + 1


def test_one_big_transaction_grows_the_map(tmp_path: Path) -> None:
    """A single put_many far bigger than the map: grown and retried, all or nothing."""
    with LmdbStore.open(tmp_path / "big", map_size=TINY_MAP) as store:
        generation = store.generation()
        facts = store.put_many(batch("a", 0, 6000))  # ~24 MB of pages
        assert store.generation() == generation + 1  # the retries were aborted, one commit
        assert store.fact_ids("a") == sorted((f.id for f in facts), reverse=True)
        assert store.agents()[0].live_facts == 6000


CHILD_WRITER = textwrap.dedent(
    """
    import sys
    from graymatter_tui.storage import NewFact
    from graymatter_tui.backends.lmdb import LmdbStore
    store = LmdbStore.open(sys.argv[1], map_size=64 * 1024)
    for b in range(int(sys.argv[2])):
        store.put_many(
            [NewFact("child", f"child {b:03d} {i:05d} " + "y" * 2000) for i in range(1000)]
        )
    print(store.info().map_size)
    store.put("child", "last")
    """
)


def test_reader_adopts_a_map_grown_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    parent = LmdbStore.open(path, map_size=TINY_MAP)
    try:
        mine = parent.put("parent", "written before the child")
        parent_map = parent.info().map_size
        assert parent_map <= 2 * TINY_MAP

        done = subprocess.run(
            [sys.executable, "-c", CHILD_WRITER, str(path), "12"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        child_map = int(done.stdout.strip())
        assert child_map >= 32 * parent_map

        # The parent kept its old, tiny map open: reading must adopt the new size.
        child_facts = parent.list_facts("child")
        assert len(child_facts) == 12_001
        assert child_facts[0].text == "last"
        assert parent.info().map_size >= child_map
        counts = {a.agent_id: a.live_facts for a in parent.agents()}
        assert counts == {"parent": 1, "child": 12_001}

        # and writing again works, including a write that needs yet more room
        again = parent.put("parent", "written after the child")
        more = parent.put_many(batch("parent", 0, 3000))
        assert parent.require(again.id) == again
        assert parent.require(mine.id) == mine
        assert len(parent.fact_ids("parent")) == 2 + len(more)
    finally:
        parent.close()

    with LmdbStore.open(path) as reopened:
        counts = {a.agent_id: a.live_facts for a in reopened.agents()}
        assert counts == {"parent": 3002, "child": 12_001}


def test_threads_writing_while_the_map_grows(tmp_path: Path) -> None:
    """Writers and readers in several threads of one process share one Environment."""
    store = LmdbStore.open(tmp_path / "threads", map_size=TINY_MAP)
    errors: list[BaseException] = []

    writing = threading.Event()

    def work(k: int) -> None:
        try:
            for i in range(40):
                store.put_many(batch(f"thread-{k}", i * 20, 20))
                assert len(store.list_facts(f"thread-{k}", limit=5)) == 5
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    def watch() -> None:
        # Reads the map's size and use while writers resize it (the status screen does this).
        try:
            while writing.is_set():
                info = store.info()
                assert info.map_used <= info.map_size
        except BaseException as exc:
            errors.append(exc)

    writing.set()
    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        writing.clear()
        watcher.join(timeout=30)
        assert not any(thread.is_alive() for thread in [*threads, watcher]), "a thread hung"
        assert errors == []
        assert {a.agent_id: a.live_facts for a in store.agents()} == {
            f"thread-{k}": 800 for k in range(6)
        }
        assert store.info().map_size > 1_000_000
    finally:
        store.close()


def test_graymatter_map_size_sets_the_initial_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAYMATTER_MAP_SIZE", str(3 * 1024 * 1024))
    with LmdbStore.open(tmp_path / "env-map") as store:
        assert store.info().map_size == 3 * 1024 * 1024
    monkeypatch.setenv("GRAYMATTER_MAP_SIZE", "1000")  # clamped to the 64 KiB minimum
    with LmdbStore.open(tmp_path / "env-map-small") as store:
        assert store.info().map_size == TINY_MAP
        store.put_many(batch("a", 0, 100))  # and it still grows
        assert store.info().map_size > TINY_MAP
    monkeypatch.setenv("GRAYMATTER_MAP_SIZE", "a lot")
    with pytest.raises(InvalidInput, match="GRAYMATTER_MAP_SIZE"):
        LmdbStore.open(tmp_path / "env-map-bad")


def test_a_transaction_that_fills_the_map_is_grown_and_run_again(tmp_path: Path) -> None:
    """import_all does not reserve space up front, so its one transaction hits
    MapFullError on a tiny map; the store must grow the map and run it again whole."""
    from graymatter_tui.core.model import Fact
    from graymatter_tui.storage.ids import new_id

    store = LmdbStore.open(tmp_path / "imp", map_size=TINY_MAP)
    try:
        stamp = "2026-11-30T12:00:00.000000Z"
        from datetime import UTC, datetime

        now = datetime(2026, 11, 30, 12, tzinfo=UTC)
        facts = [
            Fact(
                id=new_id(now),
                agent_id="imp",
                text=f"imported {i} {FILLER}",
                created_at=stamp,
                accessed_at=stamp,
            )
            for i in range(5000)
        ]
        before = store.info().map_size
        result = store.import_all(facts, [])
        assert result.facts_added == 5000
        assert store.info().map_size > before
        assert len(store.fact_ids("imp")) == 5000
        assert store.agents()[0].live_facts == 5000
    finally:
        store.close()
