"""Bulk inserts on PostgreSQL: the same facts and activity as `store.fact_ops.put_many`,
with ids checked in one query and rows sent by COPY instead of a round trip per fact."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import msgspec

from graymatter_tui.backends.postgres.tx import PgTx
from graymatter_tui.core import clock
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import Fact
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.storage import fact_ops
from graymatter_tui.storage.ids import new_id
from graymatter_tui.storage.values import NewFact

if TYPE_CHECKING:
    from graymatter_tui.backends.lmdb.tx import Tx


def _ids_in_use(tx: PgTx, ids: list[str]) -> set[str]:
    rows = tx.conn.execute(
        "SELECT id FROM facts WHERE id = ANY(%s) "
        "UNION ALL SELECT cycle_id FROM journal WHERE cycle_id = ANY(%s)",
        (ids, ids),
    ).fetchall()
    return {row[0] for row in rows}


def put_many(
    tx: PgTx, pending: list[NewFact], terms: list[dict[str, int]], made_by: Analyzer
) -> list[Fact]:
    # Ids are minted without a look-up each, then checked in one query below.
    out = fact_ops.new_facts(pending, tx.now, tx.source, new_id)
    given = {item.fact_id for item in pending if item.fact_id}
    taken = _ids_in_use(tx, [f.id for f in out])
    known = [f.id for f in out if f.id in taken and f.id in given]
    if known or len({f.id for f in out}) != len(out):
        raise InvalidInput(f"fact id already in use: {(known or ['(duplicate)'])[0]}")
    for index, fact in enumerate(out):
        if fact.id in taken:  # a minted id held already (seeded ids): mint again
            fresh = tx.new_id(clock.parse_time(fact.created_at))
            out[index] = msgspec.structs.replace(fact, id=fresh)
    tx.insert_many(out, terms, made_by)
    fact_ops.log_added(cast("Tx", tx), "add", out)
    return out
