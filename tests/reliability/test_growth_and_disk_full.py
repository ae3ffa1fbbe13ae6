"""Map growth under a concurrent reader/writer, and a full disk (a file-size limit
injected with RLIMIT_FSIZE, so writes fail with EFBIG at the file layer)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from tests.reliability.conftest import start_worker

ROOT = Path(__file__).resolve().parents[2]


def test_growth_from_a_tiny_map_while_another_process_works(tmp_path: Path, soak: bool) -> None:
    target_mb = 520 if soak else 60
    path = tmp_path / "store"
    store = LmdbStore.open(path, map_size=64 * 1024)
    ack = tmp_path / "ack.jsonl"
    other = start_worker("writer", str(path), str(ack), "0", "1")
    chunk = "x" * 4000
    batches = 0
    try:
        while (path / "data.mdb").stat().st_size < target_mb * 1_000_000:
            store.put_many(
                NewFact(agent_id="bulk", text=f"{chunk} {batches} {i}") for i in range(500)
            )
            batches += 1
            store.list_facts("bulk", "live", limit=5)  # reading while the other writes
    finally:
        other.kill()
        other.wait(timeout=30)
    acknowledged = [json.loads(line)["id"] for line in ack.read_text().splitlines()]
    size = (path / "data.mdb").stat().st_size
    assert store.agents()[0].live_facts + store.agents()[1].live_facts >= batches * 500
    assert all(store.find(i) is not None for i in acknowledged)
    assert store.info().map_size >= size
    print(
        f"\ngrowth: map 64 KiB -> {store.info().map_size / 1e6:.0f} MB, file {size / 1e6:.0f} MB,"
        f" {batches * 500} bulk facts + {len(acknowledged)} concurrent writes, no errors"
    )
    store.close()


DISK_FULL_CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    sys.path.insert(0, {root!r})
    from graymatter_tui.core.errors import StoreError
    from graymatter_tui.storage import NewFact
    from graymatter_tui.backends.lmdb import LmdbStore
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of a signal
    store = LmdbStore.open({path!r})
    limit = {limit}
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    written = 0
    try:
        while True:
            store.put_many(NewFact(agent_id="full", text="y" * 3000) for _ in range(50))
            written += 50
    except StoreError as exc:
        print(written, "|", exc)
        sys.exit(0)
    """
)


def test_a_full_disk_gives_a_clear_error_and_keeps_committed_data(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LmdbStore.open(path) as store:
        kept = store.put("full", "written before the disk filled")
    limit = (path / "data.mdb").stat().st_size + 2_000_000
    child = subprocess.run(
        [sys.executable, "-c", DISK_FULL_CHILD.format(root=str(ROOT), path=str(path), limit=limit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr[-800:]
    written_text, message = child.stdout.strip().split("|", 1)
    written = int(written_text)
    assert "disk is full" in message or "grow" in message, message
    with LmdbStore.open(path) as store:
        assert store.require(kept.id).text == "written before the disk filled"
        live = store.agents()[0].live_facts
    assert live == written + 1  # every committed batch, nothing of the failed one
    print(f"\ndisk full: {written} facts committed before EFBIG; error: {message.strip()}")
