"""Reading the keyword signal on another thread while the vector signal answers (ADR 0072)
changes no answer, and a vector signal that fails still fails recall as it did, leaving no
read behind."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall import ranking
from graymatter_tui.recall.ranking import rank
from graymatter_tui.storage import KeywordIndex, NewFact
from tests.recall.helpers import AGENT
from tests.recall.test_hybrid_reachable import HashVectors, explained, made_texts

T = TypeVar("T")


@pytest.fixture
def filled(tmp_path: Path, clean_graymatter_env: None) -> Iterator[LmdbStore]:
    with LmdbStore.open(tmp_path / "gm") as store:
        store.put_many(NewFact(AGENT, text) for text in made_texts(5, 400))
        yield store


def test_side_by_side_and_one_after_the_other_answer_alike(
    filled: LmdbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    signal = HashVectors(filled, duplicate_cosines=True)
    queries = ["deploy staging", "caroline support group june", "disk alert port", "server"]
    beside = [explained(rank(filled, AGENT, q, k=8, vectors=signal)) for q in queries]
    monkeypatch.setattr(ranking, "BESIDE", False)
    serial = [explained(rank(filled, AGENT, q, k=8, vectors=signal)) for q in queries]
    assert beside == serial
    assert all(beside)  # every query found something: the comparison says something


class SlowVectors(HashVectors):
    """An honest signal that takes its time, as an embedding does: the keyword read has
    finished on the other thread before it answers."""

    def __init__(self, store: LmdbStore) -> None:
        super().__init__(store, duplicate_cosines=False)
        self.threads: set[str] = set()

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.05)
        return super().nearest(agent, query, limit)


class WatchedStore(LmdbStore):
    """A real store that notes the thread each keyword-index read runs on."""

    readers: list[str]

    def read_index(self, fn: Callable[[KeywordIndex], T]) -> T:
        self.readers.append(threading.current_thread().name)
        return super().read_index(fn)


def test_the_vector_signal_runs_on_the_callers_thread_and_the_keywords_beside_it(
    tmp_path: Path, clean_graymatter_env: None
) -> None:
    with WatchedStore.open(tmp_path / "watched") as store:
        assert isinstance(store, WatchedStore)
        store.readers = []
        store.put_many(NewFact(AGENT, text) for text in made_texts(6, 200))
        signal = SlowVectors(store)
        assert rank(store, AGENT, "deploy staging", k=5, vectors=signal)
    here = threading.current_thread().name
    assert signal.threads == {here}  # the signal's thread-local use stays the caller's
    beside = [name for name in store.readers if name != here]
    assert len(beside) == 1 and beside[0].startswith("recall-keywords"), store.readers


class FailingVectors:
    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        raise RuntimeError("the signal broke")


def test_a_failing_vector_signal_fails_recall_as_before(filled: LmdbStore) -> None:
    for _ in range(5):  # more than the pool's threads: none is left holding a read
        with pytest.raises(RuntimeError, match="the signal broke"):
            rank(filled, AGENT, "deploy staging", k=5, vectors=FailingVectors())
    assert rank(filled, AGENT, "deploy staging", k=5, vectors=HashVectors(filled, False))
