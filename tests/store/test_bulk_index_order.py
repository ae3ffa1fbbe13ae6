"""A bulk write lays down exactly the rows that writing its facts one at a time does.

Bulk inserts (`put_many`, imports) write their rows in key order and append the rows
that sort after a table's last key (LMDB's append mode, which trusts the order it is
given); the recall index's postings and term counts of a batch are built in memory.
Whatever the order or the mode, every table must end up holding the same rows as when
each fact is imported on its own: a fresh store, a store that already holds some of the
facts (rows before and after its last keys), and several agents.

LMDB only: the rows compared are the LMDB tables'.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import lmdb
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.exchange import transfer as exchange
from graymatter_tui.storage import NewFact

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

TABLES = ("facts", "vitals", "ids", "state", "postings", "terms", "agents")
WORDS = ["deploy", "deploying", "staging", "the", "and", "runbook", "Straße", "ｄｅｐｌｏｙ"]
NAMES = ["OPS-1234", "build_2024", "v2.3.1", "#17", "e.g.", "x-ray", "ops@example.com"]


def _texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        words = rng.choices(WORDS, k=rng.randint(0, 9)) + rng.choices(NAMES, k=rng.randint(0, 2))
        rng.shuffle(words)
        out.append(" ".join(words) + f" note {i % 37}")
    return out


def _source_file(tmp_path: Path) -> list[dict[str, object]]:
    """memories.json items of three agents, tombstones included."""
    rng = random.Random(5)
    with LmdbStore.open(tmp_path / "source") as source:
        for agent in ("alpha", "beta", "gamma-agent"):
            source.put_many(NewFact(agent, text) for text in _texts(rng, 300))
        for fact in rng.sample(source.list_facts("beta", "live"), 20):
            source.revise(fact.id, fact.text + " revised")
        items: list[dict[str, object]] = json.loads(exchange.export_json(source))
    assert any(item.get("superseded_by") for item in items)
    return items


def _rows(path: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    env = lmdb.open(str(path), max_dbs=32, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            return {
                name: [
                    (bytes(k), bytes(v))
                    for k, v in txn.cursor(db=env.open_db(name.encode(), txn=txn)).iternext()
                ]
                for name in TABLES
            }
    finally:
        env.close()


def _import(path: Path, items: list[dict[str, object]]) -> None:
    with LmdbStore.open(path) as store:
        exchange.import_file(store, json.dumps(items).encode())


def _one_at_a_time(path: Path, items: list[dict[str, object]]) -> None:
    # A replacement before the tombstones that point at it (the import checks receipts).
    ordered = sorted(items, key=lambda item: bool(item.get("superseded_by")))
    with LmdbStore.open(path) as store:
        for item in ordered:
            exchange.import_file(store, json.dumps([item]).encode())


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    return _source_file(tmp_path_factory.mktemp("source"))


@pytest.fixture(scope="module")
def expected(
    tmp_path_factory: pytest.TempPathFactory, items: list[dict[str, object]]
) -> dict[str, list[tuple[bytes, bytes]]]:
    tmp = tmp_path_factory.mktemp("one-at-a-time")
    _one_at_a_time(tmp / "singly", items)
    rows = _rows(tmp / "singly")
    assert len(rows["postings"]) > 4000 and len(rows["terms"]) > 50
    return rows


def test_an_import_into_a_fresh_store_writes_the_rows_of_facts_written_singly(
    tmp_path: Path, items: list[dict[str, object]], expected: dict[str, list[tuple[bytes, bytes]]]
) -> None:
    _import(tmp_path / "bulk", items)
    got = _rows(tmp_path / "bulk")
    for name in TABLES:
        assert got[name] == expected[name], name


@pytest.mark.parametrize("held", ["oldest half", "newest half", "every other", "one agent"])
def test_an_import_into_a_store_holding_some_of_the_facts_writes_the_same_rows(
    tmp_path: Path,
    items: list[dict[str, object]],
    expected: dict[str, list[tuple[bytes, bytes]]],
    held: str,
) -> None:
    # Some of the file is in the store already, so the rest sorts before, between and
    # after its rows; the second import adds only what is missing.
    by_id = sorted(items, key=lambda item: str(item["id"]))
    first = {
        "oldest half": by_id[: len(by_id) // 2],
        "newest half": by_id[len(by_id) // 2 :],
        "every other": by_id[::2],
        "one agent": [i for i in by_id if i["agent_id"] == "beta"],
    }[held]
    replacements = {str(i["superseded_by"]) for i in first if i.get("superseded_by")}
    first += [i for i in by_id if i["id"] in replacements and i not in first]
    path = tmp_path / "store"
    _import(path, first)
    _import(path, items)
    got = _rows(path)
    for name in TABLES:
        assert got[name] == expected[name], name


def test_put_many_writes_the_rows_of_single_puts(tmp_path: Path) -> None:
    rng = random.Random(9)
    items = [NewFact(rng.choice(["a", "b"]), text) for text in _texts(rng, 600)]
    with LmdbStore.open(tmp_path / "bulk") as bulk:
        bulk.put_many(items[:200])
        bulk.put_many(items[200:])
        facts = bulk.list_facts("a", "all") + bulk.list_facts("b", "all")
    got = _rows(tmp_path / "bulk")
    # The same facts, ids included, written one import at a time.
    _one_at_a_time(tmp_path / "singly", json.loads(_export(tmp_path / "bulk")))
    want = _rows(tmp_path / "singly")
    assert len(facts) == 600
    for name in ("postings", "terms", "ids", "state", "vitals", "agents"):
        assert got[name] == want[name], name


def _export(path: Path) -> bytes:
    with LmdbStore.open(path) as store:
        return exchange.export_json(store)
