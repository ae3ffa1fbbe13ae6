"""How long the TUI's event loop stalls while a person works, over a slow database.

    python benchmarks/tui_stall_bench.py [--backend postgres|lmdb] [--delay-ms 100]
                                         [--seconds 20] [--facts 2000] [--pg-url URL]

The app runs headless (`App.run_test`, 120x36) on a demo store plus `--facts` facts of
ops-agent. On PostgreSQL (the default) it reaches the server through a loopback proxy that
delays every chunk the app sends by `--delay-ms` (tests/support/delaying_proxy.py), so each
round trip takes that much longer, as over a slow network; without `--pg-url` a throwaway
cluster is started (tests/support/postgres.py). On LMDB there is no proxy.

A scripted person then, for `--seconds`: types a word into the Facts filter a key at a time
and clears it, and shows each tab (1…7) in turn, while another process's connection (not
through the proxy) writes a fact every `--write-every` seconds. A probe coroutine sleeps
5 ms in a loop on the app's event loop and records how late it wakes: a late wake is a
stall, time in which no key, frame or timer was handled. Printed: the longest stall, the
99th percentile, and how many wakes were 50 ms or 100 ms late, during the script and
during start-up (from `run_test` until the first frame); then how long a quit takes until
the app has ended (the terminal would be the shell's again) and until its background
embedder has finished its last write and pair check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# tests.support; appended, so a PYTHONPATH naming another checkout of the package wins
sys.path.append(str(Path(__file__).resolve().parent.parent))

OPS = "ops-agent"
WORD = "staging"


def fill(store: Any, facts: int) -> None:
    from graymatter_tui.exchange.demo import create_demo
    from graymatter_tui.storage import NewFact

    create_demo(store)
    if facts:
        store.put_many(
            NewFact(OPS, f"Bench note {n}: staging ledger port {n % 97} ref OPS-{n}")
            for n in range(facts)
        )


WRITER_CODE = (
    "import sys, time\n"
    "from graymatter_tui.backends.{module} import {store}\n"
    "with {store}.open(sys.argv[1]) as s:\n"
    "    n = 0\n"
    "    while True:\n"
    "        time.sleep(float(sys.argv[2]))\n"
    "        s.put('ops-agent', f'written elsewhere {{n}}'); n += 1\n"
)


@contextmanager
def other_writer(backend: str, where: str, every: float) -> Iterator[None]:
    """Another process writing a fact every `every` seconds to the store at `where`
    (a directory, or a PostgreSQL URL reached directly, not through the proxy): its own
    interpreter, so its work never holds the app's interpreter lock."""
    if every <= 0:
        yield
        return
    import subprocess

    module, store = ("lmdb", "LmdbStore") if backend == "lmdb" else ("postgres", "PgStore")
    code = WRITER_CODE.format(module=module, store=store)
    writer = subprocess.Popen([sys.executable, "-c", code, where, str(every)])
    try:
        yield
    finally:
        writer.kill()
        writer.wait()


def ops_facts(store: Any) -> int:
    """Live facts of ops-agent (the other process's writes are the difference)."""
    return int(store.read_index(lambda index: index.live_count(OPS)))


def person() -> Iterator[tuple[str, float]]:
    """(key, pause after it) for ever: type a word into the Facts filter and clear it,
    then show every tab in turn and come back to Facts."""
    while True:
        yield "1", 0.3
        yield "slash", 0.1
        for char in WORD:
            yield char, 0.12
        for _ in WORD:
            yield "backspace", 0.08
        yield "escape", 0.2
        for tab in "2345671":
            yield tab, 0.4


REACTION_SECONDS = 0.15  # a person's time between seeing a key's effect and the next key


async def script(pilot: Any, seconds: float, reaction: float = REACTION_SECONDS) -> int:
    """Press the person's keys until `seconds` have passed; the number of keys pressed
    (fewer when the app is slow to take each one).

    A key is pressed once the screen has handled the one before, `REACTION_SECONDS` and
    the person's pause have passed: about 54 keys in 20 s, the pace the script had with
    the app alone (no embedder). Textual's pilot would also wait, after each key, until
    the whole process looks idle by its CPU time (up to 1 s), which a process embedding
    in a thread of its own never does: with the model in the app's process that halved
    the pace (about 24 keys in 20 s), so the load depended on where the model ran. That
    wait is left out here; `--no-reaction` gives the script's own pauses alone (about
    90 keys in 20 s: a stress, not a person)."""
    import textual.app
    import textual.pilot

    async def no_idle_wait(*_: Any, **__: Any) -> None:
        await asyncio.sleep(0)

    saved = textual.app.wait_for_idle, textual.pilot.wait_for_idle
    textual.app.wait_for_idle = textual.pilot.wait_for_idle = no_idle_wait  # type: ignore[assignment]
    keys = 0
    deadline = time.monotonic() + seconds
    try:
        for key, pause in person():
            if time.monotonic() >= deadline:
                break
            await pilot.press(key)
            keys += 1
            await pilot.pause(pause + reaction)
    finally:
        textual.app.wait_for_idle, textual.pilot.wait_for_idle = saved
    return keys


def reaction_of(args: argparse.Namespace) -> float:
    return 0.0 if args.no_reaction else REACTION_SECONDS


async def drive(
    store: Any, settings: Any, seconds: float, reaction: float = REACTION_SECONDS
) -> dict[str, Any]:
    from graymatter_tui.tui.app import GraymatterApp
    from tests.support.loop_lag import LagProbe, summary

    app = GraymatterApp(store=store, settings=settings, agent=OPS)
    app.animation_level = "none"
    probe = LagProbe()
    started = time.perf_counter()
    async with app.run_test(size=(120, 36)) as pilot:
        probe.start()
        await pilot.pause()
        startup = probe.take()
        first_frame = time.perf_counter() - started
        keys = await script(pilot, seconds, reaction)
        scripted = probe.take()
        probe.stop()
        quit_began = time.perf_counter()
        await app.action_quit()  # what `q` runs
    quit_s = time.perf_counter() - quit_began  # until the terminal would be the shell's
    app.finish_background()  # before the store closes, as the CLI does
    return {
        "first_frame_s": first_frame,
        "quit_s": quit_s,
        "quit_and_embedder_s": time.perf_counter() - quit_began,
        "keys": keys,
        # facts the background embedder gave vectors while the script ran and after
        "embedded": app.embedder.stored if app.embedder is not None else 0,
        "script": summary(scripted),
        "startup": summary(startup),
    }


@contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    from tests.support.postgres import throwaway_cluster

    with throwaway_cluster() as cluster:
        yield cluster.url(cluster.new_database("gm_stall"))


def note(what: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def run_postgres(args: argparse.Namespace) -> dict[str, Any]:
    from graymatter_tui.backends.postgres import PgStore
    from graymatter_tui.core.config import Settings
    from tests.support.delaying_proxy import DelayingProxy

    with ExitStack() as stack:
        url = stack.enter_context(postgres_url(args.pg_url))
        note("cluster ready")
        direct = stack.enter_context(PgStore.open(url))
        fill(direct, args.facts)
        note("store filled")
        target = urlsplit(url)
        upstream = (target.hostname or "127.0.0.1", target.port or 5432)
        proxy = DelayingProxy(upstream, args.delay_ms / 1000)
        stack.callback(proxy.close)
        slow_url = proxy.url_for(url)
        store = stack.enter_context(PgStore.open(slow_url))
        note("opened through the proxy")
        settings = Settings.from_env(store=slow_url).with_overrides(summariser="local")
        before = ops_facts(direct)
        with other_writer("postgres", url, args.write_every):
            result = asyncio.run(drive(store, settings, args.seconds, reaction_of(args)))
        note("app done")
        result["writes"] = ops_facts(direct) - before
        result["proxied_connections"] = proxy.connections
        return result


def run_lmdb(args: argparse.Namespace) -> dict[str, Any]:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.config import Settings

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        path = Path(tmp) / "store"
        store = stack.enter_context(LmdbStore.open(path))
        fill(store, args.facts)
        settings = Settings.from_env(data_dir=path).with_overrides(summariser="local")
        before = ops_facts(store)
        with other_writer("lmdb", str(path), args.write_every):
            result = asyncio.run(drive(store, settings, args.seconds, reaction_of(args)))
        result["writes"] = ops_facts(store) - before
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("postgres", "lmdb"), default="postgres")
    parser.add_argument("--delay-ms", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument(
        "--no-reaction",
        action="store_true",
        help="keys at the script's own pauses, with no person's reaction time (a stress)",
    )
    parser.add_argument("--write-every", type=float, default=2.0)
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON line only")
    args = parser.parse_args()
    result = run_postgres(args) if args.backend == "postgres" else run_lmdb(args)
    result["backend"] = args.backend
    result["delay_ms"] = args.delay_ms if args.backend == "postgres" else 0.0
    if args.json:
        print(json.dumps(result))
        return
    delay = f", +{args.delay_ms:.0f} ms per round trip" if args.backend == "postgres" else ""
    print(f"tui_stall_bench: {args.backend}{delay}, {args.seconds:.0f} s scripted, 120x36")
    print(
        f"first frame {result['first_frame_s']:.2f} s; {result['keys']} keys pressed; "
        f"{result['writes']} facts written by another process meanwhile"
    )
    print(
        f"quit: app ended in {result['quit_s']:.2f} s, its embedder "
        f"{result['quit_and_embedder_s']:.2f} s after the quit"
    )
    print("| phase | wakes | longest stall | p99 | ≥ 50 ms | ≥ 100 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for phase in ("startup", "script"):
        s = result[phase]
        print(
            f"| {phase} | {s['wakes']} | {s['max_ms']:.0f} ms | {s['p99_ms']:.0f} ms "
            f"| {s['over_50ms']} | {s['over_100ms']} |"
        )


if __name__ == "__main__":
    main()
