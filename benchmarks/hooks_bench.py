"""Hooks: the wall time of a cold hook process, as Claude Code starts one, beside `python -c
pass` measured in the same run (interleaved, so the machine's load weighs on both alike).

    python benchmarks/hooks_bench.py [--sizes 1000,100000] [--runs 30] [--keep DIR]

For each size, one agent holds that many facts (one in 500 pinned, at most 200) and the
shared namespace 200 more. Each run starts the installed `graymatter-tui-hook` with the
event on stdin and waits for it to exit: UserPromptSubmit with a prompt about words the
memory holds (a new session each time, so every block is injected), SessionStart, and
SessionEnd (a checkpoint written). Also: the import of the hook's modules alone, and the
bytes each injected block holds. Upstream's budget: prompt hook 150 ms, session end 500 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.recall_bench import CHUNK, build_items
from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact

AGENT = "bench"
HOOK = Path(sys.executable).parent / "graymatter-tui-hook"


def build(path: Path, n: int) -> list[str]:
    """A store of `n` facts of AGENT and 200 shared ones; prompts about them."""
    rng = random.Random(11)
    items, words, _zipf, rare = build_items(n, rng)
    every = max(n // 200, 500) if n >= 1000 else 100
    items = [replace(it, agent_id=AGENT, pinned=i % every == 0) for i, it in enumerate(items)]
    with LmdbStore.open(path) as store:
        for offset in range(0, n, CHUNK):
            store.put_many(items[offset : offset + CHUNK])
        store.put_many(
            NewFact("__shared__", f"Team convention {i}: {rng.choice(words)} {rng.choice(words)}.")
            for i in range(200)
        )
    prompts = []
    for _ in range(64):
        picked = [rng.choice(words[200:]) for _ in range(3)] + [rng.choice(rare)]
        prompts.append(
            f"why does the {picked[0]} step fail after {picked[1]}? see {picked[3]}, "
            f"and check whether {picked[2]} is involved."
        )
    return prompts


CPU: dict[str, list[float]] = {}


ENV: dict[str, str] = dict(os.environ)


def timed(argv: list[str], payload: bytes | None, key: str = "") -> tuple[float, bytes]:
    """Wall time of one cold process (and its CPU time, user + system, kept under `key`:
    a figure the machine's other load inflates far less than the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=payload or b"", capture_output=True, check=True, env=ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if key:
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        CPU.setdefault(key, []).append(used)
    return wall, done.stdout


def context_bytes(stdout: bytes) -> int:
    if not stdout.strip():
        return 0
    return len(json.loads(stdout)["hookSpecificOutput"]["additionalContext"].encode())


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure(store: Path, prompts: list[str], runs: int) -> dict[str, list[float]]:
    hook = [str(HOOK), "--dir", str(store), "--agent", AGENT]
    times: dict[str, list[float]] = {
        k: [] for k in ("pass", "import", "prompt", "start", "end", "prompt_bytes", "start_bytes")
    }
    imports = "import graymatter_tui.hooks.entry, graymatter_tui.hooks.events"
    for run in range(runs + 2):
        base = {"session_id": f"bench-{run}", "cwd": str(store), "transcript_path": "/t.jsonl"}
        prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompts[run % 64]}
        start = {**base, "hook_event_name": "SessionStart", "source": "startup"}
        end = {**base, "hook_event_name": "SessionEnd", "reason": "other"}
        if run == 2:  # the first runs warm the page cache (and start the helper)
            CPU.clear()
            deadline = time.monotonic() + 30
            while ENV.get("GRAYMATTER_HOOK_HELPER") != "off" and time.monotonic() < deadline:
                if (store / "hooks" / "helper.sock").exists():
                    break
                time.sleep(0.1)
        row = {
            "pass": timed([sys.executable, "-c", "pass"], None, "pass")[0],
            "import": timed([sys.executable, "-c", imports], None, "import")[0],
        }
        row["start"], out = timed(hook, json.dumps(start).encode(), "start")
        row["start_bytes"] = context_bytes(out)
        row["prompt"], out = timed(hook, json.dumps(prompt).encode(), "prompt")
        row["prompt_bytes"] = context_bytes(out)
        row["end"], _ = timed(hook, json.dumps(end).encode(), "end")
        if run >= 2:
            for key, value in row.items():
                times[key].append(value)
    return times


def report(n: int, mode: str, t: dict[str, list[float]]) -> None:
    base = statistics.median(t["pass"])
    how = "with the helper" if mode == "helper" else "helper off"
    rows = [
        ("`python -c pass`", "pass"),
        ("import the hook's modules", "import"),
        (f"SessionStart hook ({how})", "start"),
        (f"UserPromptSubmit hook ({how})", "prompt"),
        (f"SessionEnd hook, checkpoint ({how})", "end"),
    ]
    if mode == "off":
        rows = rows[2:]
    for label, key in rows:
        p50, p99 = statistics.median(t[key]), pct(t[key], 99)
        cpu = statistics.median(CPU[key]) * 1000
        print(
            f"| {n:,} | {label} | {p50 * 1000:.0f} | {p99 * 1000:.0f} | "
            f"{(p50 - base) * 1000:+.0f} | {cpu:.0f} |"
        )


def stop_helper(store: Path) -> None:
    pid_file = store / "hooks" / "helper.pid"
    if pid_file.exists():
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--keep", type=Path, default=None, help="Build (or reuse) stores here.")
    args = parser.parse_args()
    if not HOOK.is_file():
        sys.exit(f"no {HOOK}: pip install -e . first")
    root = args.keep or Path(tempfile.mkdtemp(prefix="hooks-bench-"))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Python {sys.version.split()[0]}, {args.runs} runs per figure, stores in {root}")
    print(f"load average at start: {load} ({os.cpu_count()} CPUs)")
    print()
    print("| facts | what | wall p50 ms | wall p99 ms | wall p50 − `pass` | CPU p50 ms |")
    print("|---:|---|---:|---:|---:|---:|")
    sizes_bytes = []
    for n in [int(x) for x in args.sizes.split(",")]:
        store = root / f"store-{n}"
        marker = store / "prompts.json"
        if marker.exists():
            prompts = json.loads(marker.read_text())
        else:
            prompts = build(store, n)
            marker.write_text(json.dumps(prompts))
        for mode in ("helper", "off"):
            stop_helper(store)
            ENV["GRAYMATTER_HOOK_HELPER"] = mode if mode == "off" else "on"
            CPU.clear()
            t = measure(store, prompts, args.runs)
            report(n, mode, t)
            if mode == "helper":
                sizes_bytes.append((n, t["start_bytes"], t["prompt_bytes"]))
        stop_helper(store)
    print()
    print("| facts | SessionStart block, bytes (p50 / max) | prompt block, bytes (p50 / max) |")
    print("|---:|---:|---:|")
    for n, start, prompt in sizes_bytes:
        print(
            f"| {n:,} | {statistics.median(start):.0f} / {max(start):.0f} | "
            f"{statistics.median(prompt):.0f} / {max(prompt):.0f} |"
        )


if __name__ == "__main__":
    main()
