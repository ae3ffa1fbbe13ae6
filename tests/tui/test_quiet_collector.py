"""Full collections wait for a quiet event loop (tui/heap.py `QuietCollector`, ADR 0077):
none starts while the loop is busy, one runs as soon as it is quiet, one runs anyway once
overdue, and the thresholds found are given back."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from graymatter_tui.tui.heap import QuietCollector


class Node:
    me: Node


def garbage_in_the_old_generation() -> weakref.ref[Node]:
    """A reference cycle that only a full pass frees: reachable through two young
    collections (which move it to the oldest generation), then dropped."""
    node = Node()
    node.me = node
    gc.collect(1)
    gc.collect(1)
    ref = weakref.ref(node)
    del node
    return ref


@contextmanager
def busy_loop(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Callbacks of 25 ms, one after another: every timer on the loop wakes late."""
    running = True

    def hog() -> None:
        time.sleep(0.025)
        if running:
            loop.call_soon(hog)

    loop.call_soon(hog)
    try:
        yield
    finally:
        running = False


async def settle(collector: QuietCollector, passes: int, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while collector.passes < passes and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def test_a_full_pass_waits_while_the_loop_is_busy_and_runs_once_it_is_quiet() -> None:
    collector = QuietCollector(period=0.01, due=2, overdue=10_000)
    collector.start()
    try:
        assert gc.get_threshold()[2] == QuietCollector.NEVER
        ref = garbage_in_the_old_generation()
        with busy_loop(asyncio.get_running_loop()):
            await asyncio.sleep(0.4)
            assert collector.passes == 0
            assert ref() is not None  # no automatic full pass either
        await settle(collector, 1)
        assert collector.passes >= 1
        assert collector.overdue_passes == 0
        assert ref() is None
    finally:
        collector.stop()


async def test_an_overdue_pass_runs_even_on_a_busy_loop() -> None:
    collector = QuietCollector(period=0.01, due=2, overdue=4)
    collector.start()
    try:
        with busy_loop(asyncio.get_running_loop()):
            ref = garbage_in_the_old_generation()
            gc.collect(1)
            gc.collect(1)  # four young collections since the last full pass
            await settle(collector, 1)
            assert collector.overdue_passes >= 1
            assert ref() is None
    finally:
        collector.stop()


async def test_stop_gives_back_the_thresholds_it_found() -> None:
    found = gc.get_threshold()
    gc.set_threshold(500, 7, 9)
    try:
        collector = QuietCollector()
        collector.hold()
        assert gc.get_threshold() == (500, 7, QuietCollector.NEVER)
        collector.start()
        assert collector.running
        collector.stop()
        assert gc.get_threshold() == (500, 7, 9)
        assert not collector.running
        collector.stop()  # a second stop changes nothing
        assert gc.get_threshold() == (500, 7, 9)
    finally:
        gc.set_threshold(*found)
