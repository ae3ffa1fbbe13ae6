"""Where the local summariser's meaning threshold sits: the bundled model's cosine of
labelled pairs (benchmarks/conflict_pairs.tsv: duplicates against possible updates,
related and unrelated pairs; benchmarks/paraphrases.json: each target against its
distractor, which shares its words but not its meaning; a few opposites written here),
and which pairs the summariser would join (`paraphrases`: the cosine at least the
threshold, key details compatible, no "not" on one side only, no one-word swap).

python benchmarks/meaning_merge_bench.py [--threshold 0.85]
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from graymatter_tui.consolidation.summarisers.local import (
    MEANING_SIMILARITY,
    _similar,
    _words,
    compatible,
    paraphrases,
)
from graymatter_tui.embedding import local
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings

HERE = Path(__file__).parent
# Written for this bench: one word for its opposite, an order swapped, a "not" added.
OPPOSITES = [
    ("Autoscaling is enabled for the API.", "Autoscaling is disabled for the API."),
    ("Autoscaling is enabled for the API.", "Autoscaling is not enabled for the API."),
    ("The cache is warm before the release.", "The cache is cold before the release."),
    ("The team prefers Slack over email.", "The team prefers email over Slack."),
    ("We deploy on Fridays.", "We never deploy on Fridays."),
    ("Refunds are approved by a team lead.", "Refunds are rejected by a team lead."),
    ("The feature flag is on in staging.", "The feature flag is off in staging."),
    ("Write access is allowed for the bot.", "Write access is denied for the bot."),
]


def labelled() -> list[tuple[str, str, str]]:
    """(kind, a, b): the conflict pairs, then each paraphrase target with its distractor."""
    with (HERE / "conflict_pairs.tsv").open(encoding="utf-8") as handle:
        pairs = [(r["kind"], r["new"], r["old"]) for r in csv.DictReader(handle, delimiter="\t")]
    data = json.loads((HERE / "paraphrases.json").read_text(encoding="utf-8"))
    text = {f["id"]: f["text"] for f in data["facts"]}
    for query in data["queries"]:
        if query.get("distractor"):
            pairs.append(("distractor", text[query["target"]], text[query["distractor"]]))
    pairs += [("opposite", x, y) for x, y in OPPOSITES]
    return pairs


def by_words(a: str, b: str) -> bool:
    """The word path joins the pair already (its merge keeps both texts' sentences)."""
    return compatible(a, b) and _similar(_words(a), _words(b))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threshold", type=float, default=MEANING_SIMILARITY)
    args = parser.parse_args()
    pairs = labelled()
    embedder = local.from_settings(EmbedSettings(embedder=EmbedderName.LOCAL))
    a = embedder.embed([p[1] for p in pairs])
    b = embedder.embed([p[2] for p in pairs])
    cosines = np.sum(a * b, axis=1).tolist()
    rows = list(zip(cosines, pairs, strict=True))

    def meaning(c: float, p: tuple[str, str, str]) -> bool:
        return not by_words(p[1], p[2]) and paraphrases(p[1], p[2], c, args.threshold)

    print(f"model {embedder.model}, threshold {args.threshold}")
    print(
        f"{'kind':<16} {'pairs':>5} {'min':>6} {'median':>6} {'max':>6} "
        f"{'>=thr':>6} {'words':>6} {'meaning':>7}"
    )
    for kind in ("duplicate", "possible_update", "related", "unrelated", "distractor", "opposite"):
        mine = [(c, p) for c, p in rows if p[0] == kind]
        values = np.array([c for c, _ in mine])
        above = sum(1 for c, _ in mine if c >= args.threshold)
        words = sum(1 for _, p in mine if by_words(p[1], p[2]))
        joined = sum(1 for c, p in mine if meaning(c, p))
        print(
            f"{kind:<16} {len(mine):>5} {values.min():>6.3f} {np.median(values):>6.3f} "
            f"{values.max():>6.3f} {above:>6} {words:>6} {joined:>7}"
        )
    through = [c for c, p in rows if p[0] != "duplicate" and meaning(1.0, p)]
    print(f"highest cosine of a non-duplicate pair the words let through: {max(through):.3f}")
    print("pairs whose path (words, meaning or none) goes against their label:")
    for c, p in sorted(rows, reverse=True):
        kind, x, y = p
        path = "words" if by_words(x, y) else "meaning" if meaning(c, p) else "none"
        if (kind == "duplicate") != (path != "none"):
            print(f"  {kind:<15} {c:.3f} {path:<7} {x!r} / {y!r}")


if __name__ == "__main__":
    main()
