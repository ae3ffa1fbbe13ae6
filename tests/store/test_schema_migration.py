"""Schema 2 adds the checkpoint and alias tables, schema 3 the activity feed and the
review queue, schema 4 re-indexes recall with stems (tests/store/test_stemming_migration.py),
schema 5 the embedding vectors, their queue and the probe queries, schema 6 when each fact
stopped being live (tests/store/test_lifespan_migration.py).
A store of an older schema (every committed release fixture: 0.1.0 and
0.2.0 are schema 1, 0.3.0 is schema 2, 0.4.0 is schema 4) is upgraded in one write
transaction the first time it is opened writable; a read-only open changes nothing and sees
none of what is new.

LMDB only: LMDB's tables (PostgreSQL's SQL schema: tests/pg/).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.schema import SCHEMA_VERSION
from graymatter_tui.core.errors import GraymatterError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RELEASES = sorted(p for p in FIXTURES.glob("store-*") if (p / "store" / "data.mdb").exists())
ROOT = Path(__file__).resolve().parents[2]


def _copy(release: Path, tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(release / "store", target)
    return target


def _meta(path: Path) -> dict[bytes, bytes]:
    env = lmdb.open(str(path), max_dbs=32, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            meta = env.open_db(b"meta", txn=txn, create=False)
            return {bytes(k): bytes(v) for k, v in txn.cursor(db=meta)}
    finally:
        env.close()


def _digest(path: Path) -> str:
    return hashlib.sha256((path / "data.mdb").read_bytes()).hexdigest()


def _schema_of(release: Path) -> int:
    return int(_meta(release / "store")[b"schema_version"])


# A release written at the current schema has nothing to upgrade; it is opened by
# tests/test_released_stores.py like every other release.
OLDER = [p for p in RELEASES if _schema_of(p) < SCHEMA_VERSION]


def test_the_newest_release_fixture_is_at_most_the_current_schema() -> None:
    assert OLDER, "no release fixture older than the current schema"
    assert all(_schema_of(p) <= SCHEMA_VERSION for p in RELEASES)


@pytest.mark.parametrize("release", OLDER, ids=lambda p: p.name)
def test_a_released_store_is_upgraded_on_its_first_writable_open(
    release: Path, tmp_path: Path
) -> None:
    path = _copy(release, tmp_path)
    old = int(_meta(path)[b"schema_version"])
    assert old < SCHEMA_VERSION
    with LmdbStore.open(path, read_only=True) as store:
        aliases_before = store.aliases("ops-agent")
        feed_before = store.activity()
    with LmdbStore.open(path) as store:
        facts = store.list_facts(None, "all")
        assert facts  # nothing lost on the way
        assert store.activity() == feed_before  # a feed starts with schema 3's upgrade
        saved = store.save_checkpoint("ops-agent", '{"step": 3}')
        store.add_alias("ops-agent", "db", ["database"])
        added = store.put("ops-agent", "Written after the upgrade.")
    meta = _meta(path)
    assert meta[b"schema_version"] == str(SCHEMA_VERSION).encode()
    assert b"graymatter-tui" in meta[f"migrated_from_{old}".encode()]
    with LmdbStore.open(path, read_only=True) as store:
        assert store.latest_checkpoint("ops-agent") == saved
        assert store.aliases("ops-agent") == {**aliases_before, "db": ["database"]}
        assert len(store.list_facts(None, "all")) == len(facts) + 1
        feed = store.activity()
        assert feed[3:] == feed_before
        assert [(e.action, e.agent_id) for e in feed[:3]] == [
            ("add", "ops-agent"),
            ("alias", "ops-agent"),
            ("checkpoint", "ops-agent"),
        ]
        assert feed[0].fact_id == added.id and store.require(added.id).source == "api"


def test_the_0_3_0_store_keeps_what_agents_wrote_over_mcp(tmp_path: Path) -> None:
    path = _copy(FIXTURES / "store-0.3.0", tmp_path)
    with LmdbStore.open(path) as store:
        checkpoint = store.latest_checkpoint("ops-agent")
        assert checkpoint is not None and checkpoint.state == '{"step": 3, "todo": ["x"]}'
        assert store.aliases("ops-agent") == {"pd": ["PagerDuty"]}  # terms are folded
        written = [f for f in store.list_facts("ops-agent") if "over MCP" in f.text]
        assert len(written) == 1 and written[0].source is None  # before sources were kept


def test_the_0_4_0_store_keeps_its_feed_and_its_pending_review(tmp_path: Path) -> None:
    path = _copy(FIXTURES / "store-0.4.0", tmp_path)
    with LmdbStore.open(path, read_only=True) as store:
        before = store.activity()
    with LmdbStore.open(path) as store:
        assert store.activity() == before and before[0].action == "review"
        pending = store.proposals(status="pending")
        assert [p.text for p in pending] == ["Held for review: refunds take 5 days."]
        assert pending[0].source == "mcp:fixture-maker"
        assert store.find_proposal(pending[0].id) == pending[0]


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_a_read_only_open_of_an_old_store_changes_nothing(release: Path, tmp_path: Path) -> None:
    path = _copy(release, tmp_path)
    before = _digest(path)
    old = int(_meta(path)[b"schema_version"])
    with LmdbStore.open(path, read_only=True) as store:
        assert store.info().schema_version == old
        if old < 3:
            assert store.activity() == [] and store.last_activity() == 0
        if old < 2:
            assert store.latest_checkpoint("ops-agent") is None
            assert store.aliases("ops-agent") == {}
        with pytest.raises(GraymatterError):
            store.save_checkpoint("ops-agent", None)
    assert _digest(path) == before


_OPEN = """
import sys
from graymatter_tui.backends.lmdb import LmdbStore
with LmdbStore.open(sys.argv[1]) as store:
    store.save_checkpoint(sys.argv[2], None)
print("ok")
"""


def test_two_processes_upgrading_at_once_both_succeed(tmp_path: Path) -> None:
    path = _copy(RELEASES[0], tmp_path)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN, str(path), f"agent-{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            text=True,
        )
        for n in range(4)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and out.strip() == "ok", err
    with LmdbStore.open(path, read_only=True) as store:
        assert store.info().schema_version == SCHEMA_VERSION
        assert all(store.latest_checkpoint(f"agent-{n}") is not None for n in range(4))
