"""Store throughput against raw py-lmdb doing the same bytes, in one run.

    python benchmarks/store_bench.py [--facts 100000]

Raw baselines: the same Fact structs encoded with the same msgspec encoder and written
with plain `txn.put` (bulk), read back with a cursor and the same typed decoder (scan),
and one synchronous single-put transaction (remember). Goal: bulk and scan
within 3× of raw.

Import: `graymatter-tui import` of the store's own `memories.json` (exchange.import_file,
in-process, into a fresh store) against a bare baseline (raw py-lmdb
parsing the same file with msgspec and putting one record per fact into one table in
one transaction; goal 4×) and against raw py-lmdb putting the same rows the import
writes, computed before the clock starts (as they come, and sorted by key and appended:
the least any writer of those rows can spend). The import rows are given in wall time and
in CPU time of this process: on a shared, loaded machine the CPU ratios move less.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import lmdb
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HEADER, NOW, median, new_facts, percentile, row

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.tx import DF, POSTING, pack_vitals
from graymatter_tui.core import clock
from graymatter_tui.core.model import Fact
from graymatter_tui.core.tokens import term_counts
from graymatter_tui.exchange import transfer as exchange
from graymatter_tui.storage.ids import new_id

encode = msgspec.json.Encoder().encode
decode = msgspec.json.Decoder(Fact).decode


def as_facts(items: list) -> list[Fact]:  # type: ignore[type-arg]
    return [
        Fact(
            id=new_id(i.created_at),
            agent_id=i.agent_id,
            text=i.text,
            created_at=clock.format_time(i.created_at),
            accessed_at=clock.format_time(i.accessed_at),
            access_count=i.access_count,
        )
        for i in items
    ]


def index_rows(facts: list[Fact]) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """The recall index rows our store writes for these facts, computed ahead of time."""
    postings: list[tuple[bytes, bytes]] = []
    df: dict[bytes, int] = {}
    for f in facts:
        counts = term_counts(f.text)
        length = sum(counts.values())
        for term, count in counts.items():
            term_key = f.agent_id.encode() + b"\0" + term.encode()
            postings.append((term_key + b"\0" + f.id.encode(), POSTING.pack(count, length)))
            df[term_key] = df.get(term_key, 0) + 1
    return postings, [(k, DF.pack(v)) for k, v in df.items()]


def raw_bulk(
    path: str, facts: list[Fact], *, indexes: bool, ordered: bool = False
) -> tuple[float, lmdb.Environment]:
    """Raw puts of the fact rows; with `indexes`, also every other row our store writes for
    each fact (id index, state index, vitals, recall postings and term counts) — the same
    bytes, computed before the clock starts. `ordered`: every table's rows sorted (before
    the clock) and appended."""
    env = lmdb.open(path, map_size=4 << 30, max_dbs=8, lib_version=0)
    dbs = {
        name: env.open_db(name.encode())
        for name in ("facts", "ids", "state", "vitals", "postings", "terms")
    }
    postings, terms = index_rows(facts) if indexes else ([], [])
    rows = [(f, f.agent_id.encode(), f.id.encode(), encode(f), pack_vitals(f)) for f in facts]
    if ordered:
        return _raw_bulk_ordered(env, dbs, rows, sorted(postings), sorted(terms)), env
    started = time.perf_counter()
    with env.begin(write=True) as txn:
        for _f, agent, fid, value, vitals in rows:
            txn.put(agent + b"\0" + fid, value, db=dbs["facts"])
            if indexes:
                txn.put(agent + b"\0" + fid, vitals, db=dbs["vitals"])
                txn.put(fid, agent, db=dbs["ids"])
                txn.put(agent + b"\0L\0" + fid, b"", db=dbs["state"])
        if indexes:
            txn.cursor(db=dbs["postings"]).putmulti(postings)
            txn.cursor(db=dbs["terms"]).putmulti(terms)
    return time.perf_counter() - started, env


def _raw_bulk_ordered(
    env: lmdb.Environment,
    dbs: dict[str, lmdb._Database],
    rows: list[tuple[Fact, bytes, bytes, bytes, bytes]],
    postings: list[tuple[bytes, bytes]],
    terms: list[tuple[bytes, bytes]],
) -> float:
    facts = sorted((agent + b"\0" + fid, value) for _f, agent, fid, value, _v in rows)
    vitals = sorted((agent + b"\0" + fid, v) for _f, agent, fid, _value, v in rows)
    ids = sorted((fid, agent) for _f, agent, fid, _value, _v in rows)
    state = sorted((agent + b"\0L\0" + fid, b"") for _f, agent, fid, _value, _v in rows)
    started = time.perf_counter()
    with env.begin(write=True) as txn:
        for name, table in (
            ("facts", facts),
            ("vitals", vitals),
            ("ids", ids),
            ("state", state),
            ("postings", postings),
            ("terms", terms),
        ):
            txn.cursor(db=dbs[name]).putmulti(table, append=True)
    return time.perf_counter() - started


def raw_bare_import(path: str, data: bytes) -> tuple[float, float]:
    """Parse memories.json and put one record per fact into one table, one transaction."""
    env = lmdb.open(path, map_size=4 << 30, max_dbs=2, lib_version=0)
    db = env.open_db(b"facts")
    started, cpu = time.perf_counter(), time.process_time()
    items = msgspec.json.decode(data)
    with env.begin(write=True) as txn:
        for item in items:
            key = item["agent_id"].encode() + b"\0" + item["id"].encode()
            txn.put(key, encode(item), db=db)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    env.close()
    return elapsed, cpu


def our_import(path: Path, data: bytes) -> tuple[float, float]:
    """(wall, CPU) seconds of `graymatter-tui import` of `data` into a fresh store."""
    with LmdbStore.open(path, clock_fn=lambda: NOW) as store:
        started, cpu = time.perf_counter(), time.process_time()
        result = exchange.import_file(store, data)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert store.retries == 0
    assert result.conflicts == []
    return elapsed, cpu


def raw_scan(env: lmdb.Environment, agent: str) -> float:
    db = env.open_db(b"facts")
    prefix = agent.encode() + b"\0"
    started = time.perf_counter()
    with env.begin() as txn:
        cursor = txn.cursor(db=db)
        out = []
        if cursor.set_range(prefix):
            for key, value in cursor:
                if not key.startswith(prefix):
                    break
                out.append(decode(value))
    elapsed = time.perf_counter() - started
    assert out
    return elapsed


def raw_remember(env: lmdb.Environment, n: int) -> list[float]:
    db = env.open_db(b"facts")
    samples = []
    for i in range(n):
        stamp = clock.format_time(NOW)
        fact = Fact(
            id=new_id(NOW), agent_id="solo", text=f"fact {i}", created_at=stamp, accessed_at=stamp
        )
        started = time.perf_counter()
        with env.begin(write=True) as txn:
            txn.put(b"solo\0" + fact.id.encode(), encode(fact), db=db)
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--singles", type=int, default=300)
    args = parser.parse_args()
    items = new_facts("bench", args.facts)
    facts = as_facts(items)
    with (
        tempfile.TemporaryDirectory() as raw_dir,
        tempfile.TemporaryDirectory() as raw3_dir,
        tempfile.TemporaryDirectory() as raw4_dir,
        tempfile.TemporaryDirectory() as our_dir,
    ):
        raw_put, env = raw_bulk(raw_dir, facts, indexes=False)
        raw3_put, env3 = raw_bulk(raw3_dir, facts, indexes=True)
        env3.close()
        raw4_put, env4 = raw_bulk(raw4_dir, facts, indexes=True, ordered=True)
        env4.close()
        store = LmdbStore.open(Path(our_dir) / "store", clock_fn=lambda: NOW)
        started = time.perf_counter()
        store.put_many(items)
        our_put = time.perf_counter() - started

        raw_read = min(raw_scan(env, "bench") for _ in range(3))
        our_read = 1e9
        for _ in range(3):
            started = time.perf_counter()
            got = store.list_facts("bench", "live")
            our_read = min(our_read, time.perf_counter() - started)
        assert len(got) == args.facts

        raw_single = raw_remember(env, args.singles)
        our_single = []
        for i in range(args.singles):
            started = time.perf_counter()
            store.put("solo", f"fact {i}")
            our_single.append(time.perf_counter() - started)
        env.close()
        memories = exchange.export_json(store)
        store.close()
        # Taking turns, twice each; the faster of each pair is kept.
        bare_runs, our_runs = [], []
        for turn in range(2):
            bare_runs.append(raw_bare_import(str(Path(our_dir) / f"raw-bare-{turn}"), memories))
            our_runs.append(our_import(Path(our_dir) / f"imported-{turn}", memories))
        raw_bare, raw_bare_cpu = min(r[0] for r in bare_runs), min(r[1] for r in bare_runs)
        our_in, our_in_cpu = min(r[0] for r in our_runs), min(r[1] for r in our_runs)

    print(f"store_bench: {args.facts} facts, {args.singles} single writes, lmdb {lmdb.__version__}")
    print(HEADER)
    print(row(f"bulk put of {args.facts} facts (raw: same rows)", raw3_put, our_put))
    print(row(f"bulk put of {args.facts} facts (raw: fact rows only)", raw_put, our_put))
    n = args.facts
    print(row(f"import of {n} facts vs raw put per fact (bare), wall", raw_bare, our_in))
    print(row(f"import of {n} facts vs raw put per fact (bare), CPU", raw_bare_cpu, our_in_cpu))
    print(row(f"import of {n} facts (raw: same rows)", raw3_put, our_in))
    print(row(f"import of {n} facts (raw: same rows, in key order)", raw4_put, our_in))
    print(row(f"raw same rows in key order vs raw put per fact ({n})", raw_bare, raw4_put))
    print(row(f"scan + decode one agent ({args.facts})", raw_read, our_read))
    print(row("single remember p50", median(raw_single), median(our_single), "ms"))
    print(row("single remember p99", percentile(raw_single, 99), percentile(our_single, 99), "ms"))


if __name__ == "__main__":
    main()
