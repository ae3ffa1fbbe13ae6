"""TUI responsiveness: our line-by-line fact list against the stock DataTable, one run.

    python benchmarks/tui_bench.py [--sizes 100000,1000000]

For each size a store is built once, then each measurement runs in a fresh subprocess
(so peak RSS is the app's own): first paint of the Facts screen and how many rows it
had loaded by then (the newest 5,000; the rest arrive from a worker), the time until the
whole list is loaded and `end` reaches the oldest fact, page-down, a filter keystroke
(after the text index is built: its own work, the pilot's end-to-end, until a frame shows
matches and until it shows all of them), and peak RSS split into the Python heap and the
pages of the store's memory map. The same store holds tombstones of another agent
(`--tombstones-max`); their tab is timed from start-up and from its key to a first frame,
and until the whole list is scrollable to its end. `--keep-stores DIR` builds each store
once and reuses it. `--memory` measures, at the largest size, the resident size through a
scripted session instead (see `measure_memory`). The DataTable baseline adds every row to
a stock DataTable and waits for its first paint (for it, first paint is also the moment
the whole list is scrollable).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TOMB_AGENT = "bench-tombs"


def build(path: Path, size: int, tombstones: int) -> None:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.clock import format_time
    from graymatter_tui.core.model import RETIRED, Fact
    from graymatter_tui.storage import NewFact
    from graymatter_tui.storage.ids import new_id

    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    chunk = 100_000
    for start in range(0, size, chunk):
        store.put_many(
            NewFact(
                agent_id="bench",
                text=f"Fact number {i}: deploy staging ledger port {i % 9973} ref OPS-{i % 10000}",
                created_at=NOW - timedelta(seconds=size - i),
            )
            for i in range(start, min(start + chunk, size))
        )
    # Retired facts of another agent, imported with their receipts (retiring them one by
    # one would take a write transaction each).
    for start in range(0, tombstones, chunk):
        tombs = []
        for i in range(start, min(start + chunk, tombstones)):
            moment = NOW - timedelta(seconds=tombstones - i)
            stamp = format_time(moment)
            tombs.append(
                Fact(
                    id=new_id(moment),
                    agent_id=TOMB_AGENT,
                    text=f"Retired number {i}: old staging ledger port {i % 9973}",
                    created_at=stamp,
                    accessed_at=stamp,
                    weight=0.5,
                    superseded_by=RETIRED,
                )
            )
        store.import_all(tombs, [])
    store.close()


def build_memory(path: Path, size: int) -> None:
    """One agent, `size` facts; one in ten mentions `deploy` (the filter of `--memory`)."""
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.storage import NewFact

    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    chunk = 100_000
    for start in range(0, size, chunk):
        store.put_many(
            NewFact(
                agent_id="bench",
                text=f"Fact number {i}: {'deploy' if i % 10 == 0 else 'rollout'} staging "
                f"ledger port {i % 9973} ref OPS-{i % 10000}",
                created_at=NOW - timedelta(seconds=size - i),
            )
            for i in range(start, min(start + chunk, size))
        )
    store.close()


def _status_mb(field: str, pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class RssWatch:
    """The largest anonymous and file-backed resident sizes seen (sampled every 10 ms from
    /proc/self/status): ru_maxrss alone cannot tell the Python heap from the pages of the
    store's memory map that reading touched (those the kernel may drop at any time)."""

    def __init__(self) -> None:
        self.anon_kb = 0
        self.file_kb = 0
        self._phase_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.sample()

    def sample(self) -> None:
        try:
            lines = Path("/proc/self/status").read_text().splitlines()
        except OSError:  # not Linux: the split stays 0
            return
        anon = file = 0
        for line in lines:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1])
                self.anon_kb = max(self.anon_kb, anon)
            elif line.startswith("RssFile:"):
                file = int(line.split()[1])
                self.file_kb = max(self.file_kb, file)
        self._phase_kb = max(self._phase_kb, anon + file)

    def phase(self) -> float:
        """The largest resident size (anonymous + file) seen since the last call."""
        self.sample()
        peak = self._phase_kb / 1024
        self._phase_kb = 0
        return peak

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self.sample()
        return {
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_anon_mb": self.anon_kb / 1024,
            "peak_file_mb": self.file_kb / 1024,
        }


async def measure_tombstones(path: Path) -> dict[str, float]:
    """The Tombstones tab of an agent holding only tombstones: from start-up (and from
    the key that opens the tab) to its first frame, then until `end` reaches the oldest."""
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.config import Settings
    from graymatter_tui.tui.app import GraymatterApp
    from graymatter_tui.tui.widgets.virtual_list import VirtualList

    watch = RssWatch()
    started = time.perf_counter()
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    app = GraymatterApp(store=store, settings=Settings.from_env(data_dir=path), agent=TOMB_AGENT)
    app.animation_level = "none"
    out: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pressed = time.perf_counter()
        await pilot.press("2")
        deadline = time.monotonic() + 300
        while not app.query("#tomb-list") and time.monotonic() < deadline:
            await pilot.pause(0.01)
        tombs = app.query_one("#tomb-list", VirtualList)
        while not len(tombs.source) and time.monotonic() < deadline:
            await pilot.pause(0.01)
        app.screen._compositor.render_update(full=True)  # force a full frame
        out["first_paint_s"] = time.perf_counter() - started
        out["tab_paint_s"] = time.perf_counter() - pressed
        out["first_rows"] = float(len(tombs.source))
        total = store.agents()
        expected = next(a.tombstones for a in total if a.agent_id == TOMB_AGENT)
        while len(tombs.source) < expected and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.press("end")
        await pilot.pause()
        assert tombs.cursor == len(tombs.source) - 1 == expected - 1
        out["whole_list_s"] = time.perf_counter() - started
        out["whole_rows"] = float(len(tombs.source))
        # What a reload (after any write) holds the UI thread for, timed directly: what to
        # read is said and what was read is drawn there; the read runs in a worker.
        pane = app.query_one("#tombstones-pane")
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            job = pane.read()  # type: ignore[attr-defined]
            held = time.perf_counter() - started
            draw = job()
            started = time.perf_counter()
            draw()
            samples.append((held + time.perf_counter() - started) * 1000)
            await pilot.pause()
        out["reload_work_ms"] = sorted(samples)[len(samples) // 2]
    store.close()
    out.update(watch.stop())
    return out


async def measure_ours(path: Path) -> dict[str, float]:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.config import Settings
    from graymatter_tui.tui.app import GraymatterApp
    from graymatter_tui.tui.widgets.virtual_list import VirtualList

    watch = RssWatch()
    started = time.perf_counter()
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    app = GraymatterApp(store=store, settings=Settings.from_env(data_dir=path), agent="bench")
    out: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        facts = app.query_one("#fact-list", VirtualList)
        deadline = time.monotonic() + 300
        while not len(facts.source) and time.monotonic() < deadline:  # read in a worker
            await pilot.pause(0.01)
        assert len(facts.source) > 0
        app.screen._compositor.render_update(full=True)  # force a full frame
        out["first_paint_s"] = time.perf_counter() - started
        out["first_rows"] = float(len(facts.source))
        # The newest page paints first; the full id list arrives from a worker. The list is
        # scrollable to its end once `end` lands on the oldest fact.
        pane = app.query_one("#facts-pane")
        deadline = time.monotonic() + 300
        while not pane._complete and time.monotonic() < deadline:  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        await pilot.press("end")
        await pilot.pause()
        assert facts.cursor == len(facts.source) - 1
        out["whole_list_s"] = time.perf_counter() - started
        out["whole_rows"] = float(len(facts.source))
        await pilot.press("home")
        await pilot.pause()
        height = facts.size.height

        def draw() -> None:  # the widget's own work for one frame: every visible line
            for y in range(height):
                facts.render_line(y)

        started = time.perf_counter()
        facts.action_page_down()
        draw()
        out["page_down_work_ms"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        await pilot.press("pagedown")
        await pilot.pause()
        out["page_down_ms"] = (time.perf_counter() - started) * 1000
        await pilot.press("slash", "s")  # builds the text index (once, in a worker)
        deadline = time.monotonic() + 120
        while pane._texts is None and time.monotonic() < deadline:  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        from textual.widgets import Static

        info = app.query_one("#facts-info", Static)

        def shown() -> str:
            return str(info.content)

        samples, work, results, complete, first_work = [], [], [], [], []
        text = "s"
        for key in "taging 12":
            started = time.perf_counter()
            await pilot.press("space" if key == " " else key)
            await pilot.pause()
            samples.append((time.perf_counter() - started) * 1000)
            # Until a frame shows matches for this query (a worker's search may show the
            # first ones before it ends), then until it shows all of them.
            while shown().startswith("searching") and time.monotonic() < deadline:
                await pilot.pause(0.002)
            app.screen._compositor.render_update(full=True)
            results.append((time.perf_counter() - started) * 1000)
            while "+ of" in shown() and time.monotonic() < deadline:
                await pilot.pause(0.002)
            complete.append((time.perf_counter() - started) * 1000)
            # The same keystroke's own work, measured synchronously: filter + redraw.
            text += key
            searches_in_blocks = hasattr(pane, "_search")
            if searches_in_blocks:
                # The pane keeps its last complete search; drop it, so this is the search.
                pane._last_match = None  # type: ignore[attr-defined]
                started = time.perf_counter()
                first = pane._texts.search(text, limit=1000)  # type: ignore[attr-defined]
                pane._show(None, first, partial=True)  # type: ignore[attr-defined]
                draw()
                first_work.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            pane.query_text = text  # type: ignore[attr-defined]
            pane._show()  # type: ignore[attr-defined]
            draw()
            work.append((time.perf_counter() - started) * 1000)
        out["filter_results_ms_median"] = sorted(results)[len(results) // 2]
        out["filter_results_ms_max"] = max(results)
        out["filter_complete_ms_median"] = sorted(complete)[len(complete) // 2]
        out["filter_keystroke_ms_median"] = sorted(samples)[len(samples) // 2]
        out["filter_keystroke_ms_max"] = max(samples)
        if first_work:  # the worker's first page of matches, shown: what a key waits for
            out["first_matches_work_ms_median"] = sorted(first_work)[len(first_work) // 2]
            out["first_matches_work_ms_max"] = max(first_work)
        out["filter_work_ms_median"] = sorted(work)[len(work) // 2]
        out["filter_work_ms_max"] = max(work)
        out["filtered_rows"] = float(len(facts.source))
    store.close()
    out.update(watch.stop())
    return out


async def measure_memory(path: Path) -> dict[str, float]:
    """Resident size (RssAnon + RssFile, sampled every 10 ms) of the app over a store of
    1M facts through: start-up and the background load of every id (then idle); typing
    the filter `deploy` (about 1 in 10 facts) until all its matches are shown; `esc`,
    `end`, `home`, a switch to the Tombstones tab and back; clearing the filter. The
    figure after each step is the peak during it; `*_now_mb` is the size once it is done
    (after a garbage collection, as the app's idle loop would reach)."""
    import gc

    from textual.widgets import Input, Static

    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.config import Settings
    from graymatter_tui.tui.app import GraymatterApp
    from graymatter_tui.tui.widgets.virtual_list import VirtualList

    watch = RssWatch()
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    app = GraymatterApp(store=store, settings=Settings.from_env(data_dir=path), agent="bench")
    out: dict[str, float] = {}

    def settle(step: str) -> None:
        """The step's peak, then its size once done: all of it, and the heap alone (the
        rest is the store's mapped pages, which the kernel takes back when it needs)."""
        out[f"{step}_peak_mb"] = watch.phase()
        gc.collect()
        out[f"{step}_anon_mb"] = _status_mb("RssAnon")
        out[f"{step}_blocks"] = float(sys.getallocatedblocks())  # Python objects still held
        out[f"{step}_now_mb"] = out[f"{step}_anon_mb"] + _status_mb("RssFile")

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pane = app.query_one("#facts-pane")
        facts = app.query_one("#fact-list", VirtualList)
        deadline = time.monotonic() + 600
        while not pane._complete and time.monotonic() < deadline:  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        settle("idle")
        info = app.query_one("#facts-info", Static)

        def settled() -> bool:
            shown = str(info.content)
            return (
                not (shown.startswith(("searching", "indexing")) or "+ of" in shown)
                and getattr(pane, "_texts", True) is not None
            )

        await pilot.press("slash", *"deploy")
        while not settled() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        out["filter_matches"] = float(len(facts.source))
        settle("filter")
        for key in ("escape", "end", "home", "2", "1"):
            await pilot.press(key)
            await pilot.pause(0.3)
        settle("browse")
        filter_input = app.query_one("#filter", Input)
        filter_input.focus()
        await pilot.pause()
        filter_input.value = ""
        await pilot.pause(0.5)
        await pilot.press("escape")
        await pilot.pause(1.5)  # past the pane's return of freed memory
        out["cleared_rows"] = float(len(facts.source))
        settle("cleared")
    # The local model runs in a process of its own (ADR 0083): its peak and its size now.
    from graymatter_tui.embedding.model_process import running_pids

    for pid in running_pids():
        out["model_vmhwm_mb"] = out.get("model_vmhwm_mb", 0.0) + _status_mb("VmHWM", pid)
        out["model_rss_mb"] = out.get("model_rss_mb", 0.0) + _status_mb("VmRSS", pid)
    app.finish_background()  # as the CLI does: no model run outlives the store
    store.close()
    out.update(watch.stop())
    out["peak_vmhwm_mb"] = _status_mb("VmHWM")
    return out


async def measure_floor() -> dict[str, float]:
    """Textual's own start-up floor: an app with one Static, same harness."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class EmptyApp(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("hello")

    started = time.perf_counter()
    app = EmptyApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen._compositor.render_update(full=True)
        first = time.perf_counter() - started
    return {"first_paint_s": first}


async def measure_datatable(size: int) -> dict[str, float]:
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    class TableApp(App[None]):
        def compose(self) -> ComposeResult:
            yield DataTable()

        def on_mount(self) -> None:
            table = self.query_one(DataTable)
            table.add_columns("pin", "weight", "age", "hits", "text")
            table.add_rows(
                ("", "1.00", "1d", "0", f"Fact number {i}: deploy staging ledger port {i % 9973}")
                for i in range(size)
            )

    started = time.perf_counter()
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen._compositor.render_update(full=True)
        first = time.perf_counter() - started
        rows = app.query_one(DataTable).row_count
    return {
        "first_paint_s": first,
        "first_rows": float(rows),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(*args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def store_for(size: int, tombstones: int, keep: Path | None, tmp: Path) -> tuple[Path, float]:
    """The store to measure and the seconds it took to build (0 when reused from `keep`)."""
    path = (keep or tmp) / f"store-{size}-{tombstones}"
    if (path / "data.mdb").exists():
        return path, 0.0
    started = time.perf_counter()
    run_child("build", f"{path}:{size}:{tombstones}")
    return path, time.perf_counter() - started


def report_memory(size: int, keep: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = (keep or Path(tmp)) / f"memory-store-{size}"
        if not (path / "data.mdb").exists():
            run_child("build-memory", f"{path}:{size}")
        got = run_child("memory", str(path))
    print(f"tui_bench --memory: {size:,} facts, 120x40; resident size = RssAnon + RssFile (MB)")
    print("| step | peak during it | after it (gc'd) | of which heap (RssAnon) | blocks held |")
    print("|---|---:|---:|---:|---:|")
    for step, name in (
        ("idle", "start-up and background load of every id"),
        ("filter", f"type `deploy` until all {got['filter_matches']:,.0f} matches show"),
        ("browse", "esc, end, home, tab 2, tab 1"),
        ("cleared", f"filter cleared ({got['cleared_rows']:,.0f} rows)"),
    ):
        peak, now, heap = (got[f"{step}_{part}_mb"] for part in ("peak", "now", "anon"))
        blocks = got[f"{step}_blocks"]
        print(f"| {name} | {peak:.0f} | {now:.0f} | {heap:.0f} | {blocks:,.0f} |")
    print(
        f"VmHWM {got['peak_vmhwm_mb']:.0f} MB; largest anon {got['peak_anon_mb']:.0f} MB, "
        f"file {got['peak_file_mb']:.0f} MB"
    )
    if "model_vmhwm_mb" in got:
        print(
            f"the model's process: VmHWM {got['model_vmhwm_mb']:.0f} MB, VmRSS at the end "
            f"{got['model_rss_mb']:.0f} MB (both peaks together at most "
            f"{got['peak_vmhwm_mb'] + got['model_vmhwm_mb']:.0f} MB)"
        )
    else:
        print("the model's process: none ran")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--datatable-max", type=int, default=100_000)
    parser.add_argument(
        "--tombstones-max",
        type=int,
        default=100_000,
        help="the store also holds min(size, this) tombstones of another agent (0: none)",
    )
    parser.add_argument(
        "--keep-stores",
        type=Path,
        help="build each store once in this directory and reuse it on later runs",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="only the resident-size session at the largest of --sizes (its own store)",
    )
    parser.add_argument("mode", nargs="?", default="report")
    parser.add_argument("target", nargs="?")
    args = parser.parse_args()
    if args.mode == "build":
        path, size, tombstones = args.target.split(":")
        build(Path(path), int(size), int(tombstones))
        print("{}")
        return
    if args.mode == "ours":
        print(json.dumps(asyncio.run(measure_ours(Path(args.target)))))
        return
    if args.mode == "build-memory":
        path, size = args.target.split(":")
        build_memory(Path(path), int(size))
        print("{}")
        return
    if args.mode == "memory":
        print(json.dumps(asyncio.run(measure_memory(Path(args.target)))))
        return
    if args.mode == "tombs":
        print(json.dumps(asyncio.run(measure_tombstones(Path(args.target)))))
        return
    if args.mode == "floor":
        print(json.dumps(asyncio.run(measure_floor())))
        return
    if args.mode == "table":
        print(json.dumps(asyncio.run(measure_datatable(int(args.target)))))
        return
    if args.memory:
        report_memory(max(int(s) for s in args.sizes.split(",")), args.keep_stores)
        return
    print("tui_bench: Facts and Tombstones screens, 120x40 headless terminal")
    print("work = our handler and every visible line redrawn, timed directly;")
    print("end-to-end = key press until Textual's pilot reports the frame done (adds scheduling)")
    print("peak RSS = the process's high-water mark; anon / file = the largest anonymous")
    print("(Python heap) and file-backed (pages of the store's memory map) parts seen")
    print(
        "| facts | widget | first paint (rows loaded) | whole list scrollable to its end "
        "| page-down work / end-to-end | filter key work (median / max) "
        "| filter key end-to-end (median) | key to matches shown (median / max) "
        "| key to all matches (median) | peak RSS (anon / file) |"
    )
    print("|------:|--------|---:|---:|---:|---:|---:|---:|---:|---:|")
    floor = run_child("floor")
    print(
        f"| – | empty Textual app (start-up floor) | {floor['first_paint_s']:.3f} s | | | | | | | |"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            tombstones = min(size, args.tombstones_max)
            path, built = store_for(size, tombstones, args.keep_stores, Path(tmp))
            ours = run_child("ours", str(path))
            print(
                f"| {size} | line API list | {ours['first_paint_s']:.3f} s "
                f"({ours['first_rows']:,.0f}) | {ours['whole_list_s']:.3f} s "
                f"({ours['whole_rows']:,.0f}) | "
                f"{ours['page_down_work_ms']:.1f} / {ours['page_down_ms']:.0f} ms | "
                f"{ours['filter_work_ms_median']:.1f} / {ours['filter_work_ms_max']:.1f} ms | "
                f"{ours['filter_keystroke_ms_median']:.0f} ms | "
                f"{ours['filter_results_ms_median']:.0f} / "
                f"{ours['filter_results_ms_max']:.0f} ms | "
                f"{ours['filter_complete_ms_median']:.0f} ms | {ours['peak_rss_mb']:.0f} MB "
                f"({ours['peak_anon_mb']:.0f} / {ours['peak_file_mb']:.0f}) |"
            )
            if "first_matches_work_ms_median" in ours:
                print(
                    f"| {size} | (first 1,000 matches found and drawn: "
                    f"{ours['first_matches_work_ms_median']:.1f} / "
                    f"{ours['first_matches_work_ms_max']:.1f} ms of work) | | | | | | | | |"
                )
            if tombstones:
                tombs = run_child("tombs", str(path))
                print(
                    f"| {tombstones} tombstones | line API list | "
                    f"{tombs['first_paint_s']:.3f} s ({tombs['first_rows']:,.0f}); "
                    f"key 2 → frame {tombs['tab_paint_s']:.3f} s | "
                    f"{tombs['whole_list_s']:.3f} s ({tombs['whole_rows']:,.0f}) | "
                    f"reload work {tombs['reload_work_ms']:.0f} ms | | | | | "
                    f"{tombs['peak_rss_mb']:.0f} MB |"
                )
            if size <= args.datatable_max:
                table = run_child("table", str(size))
                print(
                    f"| {size} | stock DataTable | {table['first_paint_s']:.3f} s "
                    f"({table['first_rows']:,.0f}) | {table['first_paint_s']:.3f} s "
                    f"({table['first_rows']:,.0f}) | – | – | – | – | – "
                    f"| {table['peak_rss_mb']:.0f} MB |"
                )
            if built:
                print(f"(store of {size} facts built in {built:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
