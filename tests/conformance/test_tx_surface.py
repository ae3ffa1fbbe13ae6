"""PgStore runs the LMDB backend's operation functions over a `PgTx` (ADR 0042): every
`tx.<name>` those functions use must exist on PgTx with the same parameters."""

from __future__ import annotations

import ast
import inspect
from datetime import UTC, datetime
from types import ModuleType

import pytest

from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.backends.postgres.bulk_ops import put_many
from graymatter_tui.backends.postgres.tx import PgTx
from graymatter_tui.storage import fact_ops, reindex_ops

SHARED: tuple[ModuleType, ...] = (fact_ops, reindex_ops)


def _used_on_tx(module: ModuleType) -> set[str]:
    tree = ast.parse(inspect.getsource(module))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "tx"
    }


def _parameters(fn: object) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize("module", SHARED, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_pg_tx_has_every_member_the_shared_operations_use(module: ModuleType) -> None:
    used = _used_on_tx(module)
    assert used, "the scan found nothing: it would prove nothing"
    instance = PgTx(None, datetime.now(UTC), write=True)
    # Members of the class (methods, properties) or set by __init__ (now, source, ...).
    missing = sorted(
        name for name in used if not hasattr(PgTx, name) and name not in vars(instance)
    )
    assert missing == []


def test_shared_members_take_the_same_parameters() -> None:
    shared = {
        name
        for name, member in vars(PgTx).items()
        if callable(member) and not name.startswith("_") and hasattr(Tx, name)
    }
    assert {"find", "write_fact", "log", "new_id", "iter_postings"} <= shared
    for name in sorted(shared):
        # PgTx may take more (optional) parameters than this Tx, never fewer or others.
        theirs = _parameters(getattr(Tx, name))
        assert _parameters(getattr(PgTx, name))[: len(theirs)] == theirs, name


def test_bulk_put_takes_what_the_shared_one_takes() -> None:
    assert [n for n, _ in _parameters(put_many)] == [n for n, _ in _parameters(fact_ops.put_many)]
