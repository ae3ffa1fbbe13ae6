"""Helpers shared by the benchmarks: timing, fact generation and table printing."""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from graymatter_tui.storage import NewFact

# onnxruntime's telemetry off, as the product has it (ADR 0080), for the benchmarks that
# import onnxruntime themselves and the processes they start.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WORDS = [
    "deploy",
    "staging",
    "database",
    "port",
    "ledger",
    "invoice",
    "customer",
    "ticket",
    "refund",
    "gateway",
    "latency",
    "backup",
    "replica",
    "runbook",
    "incident",
    "alert",
    "metric",
    "recall",
    "summary",
    "agent",
    "memory",
    "vector",
]


def fact_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{' '.join(rng.choices(WORDS, k=12)).capitalize()} (ref OPS-{rng.randint(1000, 9999)}) "
        f"#{i}"
        for i in range(n)
    ]


def new_facts(agent: str, n: int, *, seed: int = 7, dupes: float = 0.0) -> list[NewFact]:
    rng = random.Random(seed)
    texts = fact_texts(n, seed)
    twins = set()
    if dupes:
        for i in range(0, n - 1, max(int(1 / dupes), 2)):
            texts[i + 1] = texts[i] + " Confirmed."
            twins.add(i + 1)
    out = []
    age = timedelta(0)
    for index, text in enumerate(texts):
        if index not in twins:  # a near-duplicate shares its twin's age, so both decay alike
            age = timedelta(hours=rng.uniform(0, 24 * 90))
        out.append(
            NewFact(
                agent_id=agent,
                text=text,
                created_at=NOW - age,
                accessed_at=NOW - age / 2,
                access_count=rng.randint(0, 5),
            )
        )
    return out


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def best_of(n: int, fn: Callable[[], object]) -> float:
    return min(timed(fn) for _ in range(n))


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    index = min(round(p / 100 * (len(ordered) - 1)), len(ordered) - 1)
    return ordered[index]


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def row(name: str, raw: float, ours: float, unit: str = "s") -> str:
    scale = 1000 if unit == "ms" else 1
    ratio = ours / raw if raw else float("inf")
    return (
        f"| {name:<50} | {raw * scale:>10.3f} {unit} | {ours * scale:>10.3f} {unit} "
        f"| {ratio:>5.2f}× |"
    )


HEADER = (
    f"| {'operation':<50} | {'raw py-lmdb':>13} | {'graymatter':>13} | ratio  |\n"
    f"|{'-' * 52}|{'-' * 15}|{'-' * 15}|--------|"
)


@contextmanager
def postgres_url(given: str | None, database: str = "bench") -> Iterator[str]:
    """`given`, or the URL of a fresh database on a throwaway cluster (the tests' own:
    tests/support/postgres.py), stopped and deleted at the end."""
    if given:
        yield given
        return
    from tests.support.postgres import throwaway_cluster

    with throwaway_cluster() as cluster:
        yield cluster.url(cluster.new_database(database))


async def key_to_frame(app: Any, key: str, done: Callable[[], bool], limit: float = 60) -> float:
    """Seconds from a key reaching the app (as the terminal driver hands it over) until
    `done()` holds and a full frame is composed. Pilot's `press` is not used: it waits
    for the whole process to go idle (up to a second per wait, by process CPU time), so
    with any thread busy, a model embedding for one, it would time its own waiting."""
    from textual import events

    began = time.perf_counter()
    char = " " if key == "space" else key if len(key) == 1 else None
    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)
    deadline = began + limit
    while not done():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{key!r}: not taken in {limit:.0f} s")
        await asyncio.sleep(0.001)
    app.screen._compositor.render_update(full=True)
    return time.perf_counter() - began
