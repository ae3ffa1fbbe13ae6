"""The store's public surface: `Store` implements `MemoryStore` method for method, names
say whether a lookup may come back empty, only `Tx` touches LMDB's tables, and the
`status --json` keys come from one typed struct.

LMDB only: `Store` and `Tx` (PgTx's surface: tests/conformance/test_tx_surface.py).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import graymatter_tui
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.core.errors import NotFound
from graymatter_tui.storage import KeywordIndex, MemoryStore, VectorBlockSource
from graymatter_tui.views.overview import StatusPayload, status_payload

UNKNOWN_ID = "01JC0000000000000000000001"
PACKAGE = Path(graymatter_tui.__file__).parent


def _members(protocol: type) -> list[str]:
    return [
        name
        for name in vars(protocol)
        if not name.startswith("_")
        and (callable(vars(protocol)[name]) or isinstance(vars(protocol)[name], property))
    ]


@pytest.mark.parametrize("name", _members(MemoryStore))
def test_store_has_every_protocol_member_with_its_signature(name: str) -> None:
    wanted = getattr(MemoryStore, name)
    present = getattr(LmdbStore, name, None)
    assert present is not None, f"Store lacks {name}"
    if isinstance(wanted, property):
        assert isinstance(present, property)
        return
    assert inspect.signature(present) == inspect.signature(wanted)


@pytest.mark.parametrize("name", _members(VectorBlockSource))
def test_store_is_a_vector_block_source(name: str) -> None:
    wanted = getattr(VectorBlockSource, name)
    assert inspect.signature(getattr(LmdbStore, name)) == inspect.signature(wanted)


@pytest.mark.parametrize("name", _members(KeywordIndex))
def test_a_transaction_is_a_keyword_index(name: str) -> None:
    assert inspect.signature(getattr(Tx, name)) == inspect.signature(getattr(KeywordIndex, name))


def test_find_returns_none_and_require_raises(gm: LmdbStore) -> None:
    assert gm.find(UNKNOWN_ID) is None
    assert gm.find_record(UNKNOWN_ID) is None
    assert gm.find_many([UNKNOWN_ID]) == [None]
    with pytest.raises(NotFound):
        gm.require(UNKNOWN_ID)
    with pytest.raises(NotFound):
        gm.require_record(UNKNOWN_ID)
    fact = gm.put("a", "kept")
    assert gm.find(fact.id) == gm.require(fact.id) == fact


def test_status_payload_keys_are_the_typed_struct_in_order(gm: LmdbStore) -> None:
    gm.put("a", "one fact")
    payload = status_payload(gm)
    assert list(payload) == list(StatusPayload.__annotations__)
    assert list(payload["agents"][0]) == [
        "agent_id",
        "live_facts",
        "tombstones",
        "pinned",
        "avg_weight",
    ]


def test_only_tx_touches_lmdb_transactions_and_tables() -> None:
    """`Tx` is the single reader and writer of every table."""
    pattern = re.compile(r"\btx\.(txn|dbs)\b|\.txn\.(put|delete|get|cursor|stat)\b")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "tx.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]
    assert offenders == []
