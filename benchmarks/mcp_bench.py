"""MCP latency: `memory_add` and `memory_search` through the SDK's own client over stdio,
beside the same tool calls made in-process (what the protocol costs) and the store
operation alone (what the tool layer costs), in one run.

    python benchmarks/mcp_bench.py [--sizes 1000,10000,100000] [--calls 300]

Each size gets a fresh store of one agent filled in bulk (the recall benchmark's Zipf
vocabulary with rare identifiers), then `--calls` adds and `--calls` searches of 1-4
terms. Reports p50/p99 in ms per path and the ratio of each to the store operation.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile
from recall_bench import AGENT, CHUNK, build_items, build_queries

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.mcp.memory_tools import Session
from graymatter_tui.mcp.server import call
from graymatter_tui.recall.ranking import recall
from graymatter_tui.recall.vector_signal import NO_VECTORS

ROOT = Path(__file__).resolve().parent.parent


def fill(path: Path, n: int, rng: random.Random) -> list[str]:
    items, words, zipf, rare = build_items(n, rng)
    with LmdbStore.open(path) as store:
        for start in range(0, n, CHUNK):
            store.put_many(items[start : start + CHUNK])
    return build_queries(10_000, rng, words, zipf, rare)


def sample(fn: Callable[[int], object], count: int) -> list[float]:
    out = []
    for i in range(count):
        started = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - started)
    return out


async def asample(fn: Callable[[int], Awaitable[object]], count: int) -> list[float]:
    out = []
    for i in range(count):
        started = time.perf_counter()
        await fn(i)
        out.append(time.perf_counter() - started)
    return out


async def over_stdio(path: Path, calls: int, queries: list[str]) -> tuple[list[float], list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graymatter_tui", "mcp", "--dir", str(path)], env=env
    )
    info = types.Implementation(name="mcp-bench", version="1")
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()

        async def add(i: int) -> None:
            result = await session.call_tool(
                "memory_add", {"agent_id": AGENT, "text": f"stdio fact {i} ref{i:08x}"}
            )
            assert not result.is_error

        async def search(i: int) -> None:
            result = await session.call_tool(
                "memory_search", {"agent_id": AGENT, "query": queries[i]}
            )
            assert not result.is_error

        return await asample(add, calls), await asample(search, calls)


def in_process(path: Path, calls: int, queries: list[str]) -> tuple[list[float], list[float]]:
    with LmdbStore.open(path) as store:
        session = Session(store)

        def add(i: int) -> None:
            assert not call(
                session, "memory_add", {"agent_id": AGENT, "text": f"tool fact {i} ref{i:08x}"}
            ).is_error

        def search(i: int) -> None:
            assert not call(
                session, "memory_search", {"agent_id": AGENT, "query": queries[calls + i]}
            ).is_error

        return sample(add, calls), sample(search, calls)


def store_only(path: Path, calls: int, queries: list[str]) -> tuple[list[float], list[float]]:
    with LmdbStore.open(path) as store:
        adds = sample(lambda i: store.put(AGENT, f"store fact {i} ref{i:08x}"), calls)
        searches = sample(
            lambda i: recall(store, AGENT, queries[2 * calls + i], vectors=NO_VECTORS), calls
        )
    return adds, searches


def ms(samples: list[float], p: float) -> str:
    return f"{percentile(samples, p) * 1000:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    options = parser.parse_args()
    print(
        "| facts | operation | path | p50 ms | p99 ms | p50 ÷ store |\n"
        "|---:|---|---|---:|---:|---:|"
    )
    for size in (int(s) for s in options.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "store"
            queries = fill(path, size, random.Random(options.seed))
            base_add, base_search = store_only(path, options.calls, queries)
            tool_add, tool_search = in_process(path, options.calls, queries)
            wire_add, wire_search = anyio.run(over_stdio, path, options.calls, queries)
            for name, base, paths in (
                (
                    "memory_add",
                    base_add,
                    (("store", base_add), ("in-process tool", tool_add), ("MCP stdio", wire_add)),
                ),
                (
                    "memory_search",
                    base_search,
                    (
                        ("store", base_search),
                        ("in-process tool", tool_search),
                        ("MCP stdio", wire_search),
                    ),
                ),
            ):
                for label, samples in paths:
                    ratio = percentile(samples, 50) / percentile(base, 50)
                    cells = f"{ms(samples, 50)} | {ms(samples, 99)} | {ratio:5.2f}×"
                    print(f"| {size:,} | {name} | {label} | {cells} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
