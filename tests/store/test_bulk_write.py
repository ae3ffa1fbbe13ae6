"""Bulk writes (put_many, import) size the map once and never run their transaction twice.

A bulk write reserves room for its rows before it starts (`Store.reserve` with
`bulk_size`); if the estimate were short, the transaction would fill the map, grow it and
redo all its work. These tests count the retries (`Store.retries`) on stores that start
with a map far too small, for several shapes of data, and hold the estimate against the
map space the rows really took.

LMDB only: the map and its growth are LMDB's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.reservation import bulk_size
from graymatter_tui.core.tokens import term_counts
from graymatter_tui.exchange import transfer as exchange
from graymatter_tui.storage import NewFact

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

SMALL_MAP = 256 * 1024
VOCAB = [f"word{i}" for i in range(3000)]


def _short_many_terms(n: int) -> list[NewFact]:
    rng = random.Random(1)
    return [NewFact("a", " ".join(rng.choices(VOCAB, k=12)) + f" #{i}") for i in range(n)]


def _long_texts(n: int) -> list[NewFact]:
    rng = random.Random(2)
    return [NewFact("a", f"note {i} " + "lorem ipsum " * rng.randint(50, 400)) for i in range(n)]


def _many_agents(n: int) -> list[NewFact]:
    return [NewFact(f"agent-{i % 97}-" + "x" * 40, f"fact {i} about ünïcödé") for i in range(n)]


def _unicode(n: int) -> list[NewFact]:
    rng = random.Random(3)
    words = ["ｄｅｐｌｏｙ", "straße", "日本語のテキスト", "ελληνικά", "emoji🙂"]
    return [NewFact("a", " ".join(rng.choices(words, k=8)) + f" {i}") for i in range(n)]


SHAPES: dict[str, Callable[[int], list[NewFact]]] = {
    "short texts, many terms": _short_many_terms,
    "long texts": _long_texts,
    "many agents": _many_agents,
    "unicode": _unicode,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_put_many_runs_once_and_the_estimate_covers_the_rows(tmp_path: Path, shape: str) -> None:
    items = SHAPES[shape](4000)
    with LmdbStore.open(tmp_path / "s", map_size=SMALL_MAP) as store:
        before = store.info().map_used
        store.put_many(items)
        assert store.retries == 0
        used = store.info().map_used - before
    estimate = sum(bulk_size(i.agent_id, i.text, term_counts(i.text)) for i in items)
    assert used <= estimate <= 4 * used, (used, estimate)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_import_runs_once(tmp_path: Path, shape: str) -> None:
    # Facts from `put_many` name no source, so the import also holds their pairs (for
    # the long texts, one a fact: each is an update of the one before): its map counts them.
    with LmdbStore.open(tmp_path / "source") as source:
        source.put_many(SHAPES[shape](2000))
        data = exchange.export_json(source)
    with LmdbStore.open(tmp_path / "target", map_size=SMALL_MAP) as target:
        result = exchange.import_file(target, data)
        assert result.facts_added == 2000
        assert target.retries == 0


def test_put_many_into_a_full_store_runs_once(tmp_path: Path) -> None:
    """Inserting among existing facts copies the pages it changes: that room is counted."""
    with LmdbStore.open(tmp_path / "s", map_size=SMALL_MAP) as store:
        for shape in sorted(SHAPES):
            store.put_many(SHAPES[shape](3000))
        retries = store.retries
        store.put_many(_short_many_terms(3000))
        store.put_many(NewFact(f"agent-{i % 97}-" + "x" * 40, f"more {i}") for i in range(3000))
        assert store.retries == retries
