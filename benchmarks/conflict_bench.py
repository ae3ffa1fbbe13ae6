"""Precision and recall of the near-duplicate / possible-update verdict on labelled pairs.

python benchmarks/conflict_bench.py [--pairs benchmarks/conflict_pairs.tsv] [--misses]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from graymatter_tui.core.conflicts import compare

KINDS = ("possible_update", "duplicate", "related", "unrelated")


def load(path: Path) -> list[tuple[str, str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [(r["kind"], r["new"], r["old"]) for r in csv.DictReader(handle, delimiter="\t")]


def score(pairs: list[tuple[str, str, str]]) -> dict[str, tuple[float, float, int]]:
    got = [(kind, compare(new, old).kind) for kind, new, old in pairs]
    table = {}
    for kind in KINDS:
        tp = sum(1 for want, have in got if want == kind and have == kind)
        said = sum(1 for _, have in got if have == kind)
        real = sum(1 for want, _ in got if want == kind)
        table[kind] = (tp / said if said else 1.0, tp / real if real else 1.0, real)
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    default = Path(__file__).with_name("conflict_pairs.tsv")
    parser.add_argument("--pairs", type=Path, default=default)
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args()
    pairs = load(args.pairs)
    print(f"{'kind':<16} {'precision':>9} {'recall':>7} {'pairs':>6}")
    for kind, (p, r, n) in score(pairs).items():
        print(f"{kind:<16} {p:>9.2f} {r:>7.2f} {n:>6}")
    if args.misses:
        for kind, new, old in pairs:
            verdict = compare(new, old)
            if verdict.kind != kind:
                print(f"want {kind} got {verdict.kind} ({verdict.similarity:.2f}): {new} | {old}")


if __name__ == "__main__":
    main()
