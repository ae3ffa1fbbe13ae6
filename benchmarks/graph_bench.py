"""The Graph tab and the graph's store reads at 100k facts, one run.

    python benchmarks/graph_bench.py [--facts 100000] [--keep-store DIR] [--no-cycle] [--embed]

A store of one agent is built once (`--keep-store DIR` reuses it): every fact names two
people of 200, an identifier of 10,000 (OPS-1234) and, one in ten, an email; then a
cycle's extraction runs (`extract_graph`, timed), unless `--no-cycle`, where the reads
extract the newest 2,000 facts themselves and count the rest as pending.

Timed directly: the three store reads (`entities`; `facts_mentioning` and `neighbours` of
a rare identifier and of the most mentioned person). Then the real app at 120×40
headless, started on the Facts tab: ten `down` keys there, from `8` until the Graph tab
has drawn its entities (and from start-up), a filter keystroke (the pane's work for one
key plus every visible line, and from the key reaching the app until the filtered list
is composed), and `enter` on an entity until its facts and neighbours are drawn. Keys are
timed with `_common.key_to_frame`, not pilot's `press`, which waits for the whole process
to idle. A probe on the event loop reports its longest stall over the whole session. The
background embedder is off (GRAYMATTER_EMBED=none) unless `--embed`: with it, the local
model embeds the 100k facts in batches meanwhile, each batch a write the tab hears (it
reads again at most every 2 s); the keys are timed once its first batch is stored.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import key_to_frame
from tests.support.loop_lag import LagProbe, summary

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
AGENT = "bench"
FIRST = ["Maria", "Dev", "Chen", "Amara", "Lars", "Yuki", "Omar", "Ines", "Tomas", "Priya"]
LAST = [
    "Lopez", "Patel", "Wei", "Okafor", "Nilsson", "Tanaka", "Haddad", "Silva", "Novak",
    "Rao", "Berg", "Costa", "Dubois", "Fischer", "Garcia", "Horvat", "Ito", "Jensen",
    "Kowalski", "Larsen",
]  # fmt: skip
NAMES = [f"{first} {last}" for first in FIRST for last in LAST]  # 200 people


def text(i: int, rng: random.Random) -> str:
    a, b = rng.sample(NAMES, 2)
    mail = f" (mail {a.split()[0].lower()}@example.com)" if i % 10 == 0 else ""
    return f"Fact {i}: {a} handed OPS-{rng.randint(1000, 10999)} to {b} after the deploy{mail}."


def build(path: Path, size: int, cycle: bool) -> float:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.entities import extract_entities
    from graymatter_tui.storage import NewFact

    rng = random.Random(7)
    with LmdbStore.open(path, clock_fn=lambda: NOW) as store:
        chunk = 50_000
        for start in range(0, size, chunk):
            store.put_many(
                NewFact(
                    agent_id=AGENT,
                    text=text(i, rng),
                    created_at=NOW - timedelta(seconds=size - i),
                )
                for i in range(start, min(start + chunk, size))
            )
        if not cycle:
            return 0.0
        started = time.perf_counter()
        store.extract_graph(AGENT, extract_entities)
        return time.perf_counter() - started


def timed(fn: object, runs: int = 3) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def measure_reads(path: Path) -> dict[str, float]:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.entities import extract_entities

    out: dict[str, float] = {}
    with LmdbStore.open(path, clock_fn=lambda: NOW) as store:
        index = store.entities(AGENT, extract_entities)
        out["entities"] = float(len(index.entities))
        out["pending"] = float(index.pending)
        out["entities_s"] = timed(lambda: store.entities(AGENT, extract_entities))
        rare = next(e for e in reversed(index.entities) if e.type == "ident")
        top = index.entities[0]
        for name, entity in (("rare", rare), ("top", top)):
            out[f"{name}_facts"] = float(entity.facts)
            out[f"facts_mentioning_{name}_s"] = timed(
                lambda e=entity: store.facts_mentioning(AGENT, e.id, extract_entities)
            )
            out[f"neighbours_{name}_s"] = timed(
                lambda e=entity: store.neighbours(AGENT, e.id, extract_entities)
            )
    return out


async def measure_tui(path: Path) -> dict[str, float]:
    from textual.widgets import Input

    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.config import Settings
    from graymatter_tui.tui.app import GraymatterApp
    from graymatter_tui.tui.screens.graph import GraphPane
    from graymatter_tui.tui.widgets.virtual_list import VirtualList

    out: dict[str, float] = {}
    started = time.perf_counter()
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    app = GraymatterApp(store=store, settings=Settings.from_env(data_dir=path), agent=AGENT)
    app.animation_level = "none"
    probe = LagProbe()
    async with app.run_test(size=(120, 40)) as pilot:
        probe.start()
        facts = app.query_one("#fact-list", VirtualList)
        deadline = time.monotonic() + 300
        while not len(facts.source) and time.monotonic() < deadline:
            await pilot.pause(0.01)
        out["facts_first_paint_s"] = time.perf_counter() - started
        if app.embedder is not None:
            # The embedder starts after the first paint: the keys below are timed while it
            # works (its first batch stored, the model loaded).
            while not app.embedder.stored and time.monotonic() < deadline:
                await pilot.pause(0.05)
            out["embedder_first_batch_s"] = time.perf_counter() - started
        facts.focus()
        moved = []
        for _ in range(10):
            at = facts.cursor
            moved.append(1000 * await key_to_frame(app, "down", lambda a=at: facts.cursor == a + 1))
        out["facts_down_key_to_frame_ms_median"] = statistics.median(moved)
        out["facts_down_key_to_frame_ms_max"] = max(moved)

        def drawn() -> bool:
            panes = app.query("#graph-pane").results(GraphPane)
            return any(pane._index is not None for pane in panes)

        out["graph_first_paint_from_key_s"] = await key_to_frame(app, "8", drawn, limit=300)
        pane = app.query_one("#graph-pane", GraphPane)
        out["graph_first_paint_from_start_s"] = time.perf_counter() - started
        listing = pane.entity_list
        height = listing.size.height

        def draw() -> None:
            for y in range(height):
                listing.render_line(y)

        filter_box = app.query_one("#graph-filter", Input)
        await key_to_frame(app, "slash", lambda: filter_box.has_focus)
        typed, work, keyed = "", [], []
        for char in "maria lo":
            typed += char
            keyed.append(
                1000
                * await key_to_frame(
                    app, "space" if char == " " else char, lambda t=typed: pane.query_text == t
                )
            )
            # The pane's own work for that key, timed alone: filter and draw every line.
            began = time.perf_counter()
            pane._show_entities()
            draw()
            work.append((time.perf_counter() - began) * 1000)
        out["filter_work_ms_median"] = statistics.median(work)
        out["filter_work_ms_max"] = max(work)
        out["filter_key_to_frame_ms_median"] = statistics.median(keyed)
        out["filter_key_to_frame_ms_max"] = max(keyed)
        out["filtered_rows"] = float(len(listing.source))
        await key_to_frame(app, "enter", lambda: listing.has_focus)  # back to the list

        def shown() -> bool:
            title = str(pane.query_one("#entity-title").content)  # type: ignore[attr-defined]
            return (
                pane.entity is not None
                and bool(len(pane.fact_list.source))
                and ("Reading" not in title)
            )

        out["enter_to_facts_s"] = await key_to_frame(app, "enter", shown)
        out["entity_facts"] = float(len(pane.fact_list.source))
        # The pane's whole re-read (what a write another process makes costs it), timed
        # in this thread: entities, and the shown entity's facts and neighbours.
        if app.embedder is not None:
            out["embedded_meanwhile"] = float(app.embedder.stored)
            out["embedder_busy_at_the_end"] = float(app.embedder.busy)
        lag = summary(probe.take())  # before the re-read below, which blocks the loop
        probe.stop()
        job = pane.read()
        began = time.perf_counter()
        job()
        out["reread_s"] = time.perf_counter() - began
        out["loop_longest_stall_ms"] = lag["max_ms"]
        out["loop_stall_p99_ms"] = lag["p99_ms"]
        out["loop_wakes_over_100ms"] = float(lag["over_100ms"])
        app.exit()
    app.finish_background()  # before the store closes, as the CLI does
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--keep-store", type=Path)
    parser.add_argument("--no-cycle", action="store_true")
    parser.add_argument("--embed", action="store_true")
    args = parser.parse_args()
    if not args.embed:
        os.environ["GRAYMATTER_EMBED"] = "none"
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep_store or Path(tmp)
        path = root / f"graph-{args.facts}{'-nocycle' if args.no_cycle else ''}"
        if not path.exists():
            began = time.perf_counter()
            extract = build(path, args.facts, not args.no_cycle)
            print(f"built {args.facts} facts in {time.perf_counter() - began:.1f} s", flush=True)
            if extract:
                print(f"extract_graph (a cycle's extract stage): {extract:.2f} s", flush=True)
        figures = measure_reads(path)
        figures.update(asyncio.run(measure_tui(path)))
        for name, value in figures.items():
            print(f"{name:34} {value:12.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
