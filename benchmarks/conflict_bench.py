"""Precision and recall of the near-duplicate / possible-update verdict on labelled pairs.

python benchmarks/conflict_bench.py [--pairs FILE ...] [--meaning] [--misses]

By words alone (what the write path decides, before any vector exists), and with
`--meaning` also given the bundled local model's cosine of each pair (what the embedder's
pass decides, `core.conflicts.compare_profiles(..., cosine)`). The pair sets:
conflict_pairs.tsv (written while the verdict was tuned), conflict_pairs_blind.tsv
(written by someone who had not read the verdict, then used to tune the meaning rules),
conflict_pairs_heldout.tsv (written blind too, read once the rules were fixed, then used
to tune) and conflict_pairs_third.tsv (written blind, read once: the figure to quote).
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


Cosines = dict[tuple[str, str], float]


def cosines(pairs: list[tuple[str, str, str]]) -> Cosines:
    """The local model's cosine of each pair (its first window's vector per text)."""
    from graymatter_tui.embedding.local import from_settings
    from graymatter_tui.embedding.settings import EmbedSettings

    embedder = from_settings(EmbedSettings.from_env())
    texts = sorted({t for _, new, old in pairs for t in (new, old)})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    return {(n, o): float(vectors[n] @ vectors[o]) for _, n, o in pairs}


def score(
    pairs: list[tuple[str, str, str]], cosine: Cosines | None = None
) -> dict[str, tuple[float, float, int]]:
    got = [
        (kind, compare(new, old, None if cosine is None else cosine[(new, old)]).kind)
        for kind, new, old in pairs
    ]
    table = {}
    for kind in KINDS:
        tp = sum(1 for want, have in got if want == kind and have == kind)
        said = sum(1 for _, have in got if have == kind)
        real = sum(1 for want, _ in got if want == kind)
        table[kind] = (tp / said if said else 1.0, tp / real if real else 1.0, real)
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    default = [Path(__file__).with_name("conflict_pairs.tsv")]
    parser.add_argument("--pairs", type=Path, nargs="+", default=default)
    parser.add_argument("--meaning", action="store_true", help="also with the model's cosine")
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args()
    for path in args.pairs:
        pairs = load(path)
        modes: list[tuple[str, Cosines | None]] = [("words", None)]
        if args.meaning:
            modes.append(("meaning", cosines(pairs)))
        for mode, cosine in modes:
            print(f"\n{path.name}, {mode} ({len(pairs)} pairs)")
            print(f"{'kind':<16} {'precision':>9} {'recall':>7} {'pairs':>6}")
            for kind, (p, r, n) in score(pairs, cosine).items():
                print(f"{kind:<16} {p:>9.2f} {r:>7.2f} {n:>6}")
            if args.misses:
                for kind, new, old in pairs:
                    c = None if cosine is None else cosine[(new, old)]
                    verdict = compare(new, old, c)
                    if verdict.kind != kind:
                        shown = "" if c is None else f", cosine {c:.2f}"
                        print(f"want {kind} got {verdict.kind}{shown}: {new} | {old}")


if __name__ == "__main__":
    main()
