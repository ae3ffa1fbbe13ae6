"""Health rules over an agent's memory (`doctor --health`, the TUI's Health dialog).

Upstream GrayMatter's four rules (a supersede loop, dumping, weak critical facts,
duplicates) and five of ours (semantic duplicates, probes a cycle changed, contradictions
waiting in review, embedding coverage, summaries reverted). Deterministic: every rule reads
the store only (one snapshot), never the clock, so the same store gives the same report.
Each rule's thresholds are in `THRESHOLDS` and said in every finding. A finding names
its facts, newest first, at most `MAX_FACTS` of them, with how many more there are.

Built for a million facts: only ids, texts and weights are read (no fact is decoded
whole), a fact's time is the one its ULID carries, and the counting is done in arrays.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from graymatter_tui.core.details import detail_key, key_details
from graymatter_tui.core.disjoint_sets import DisjointSets
from graymatter_tui.core.errors import NotFound
from graymatter_tui.core.model import CycleRecord, ReviewProposal
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore

Status = Literal["ok", "info", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "info", "warn", "fail")

MAX_FACTS = 10  # facts a finding names (then "and N more")
TEXT_CHARS = 80  # of each named fact's text
PIN_LOOKUPS = 5000  # weak critical facts looked up one by one (more: the agent's pins)

# Every number a rule compares with; `doctor --health --json` gives them as `thresholds`.
THRESHOLDS: dict[str, dict[str, float | int | str]] = {
    "supersede-loop": {"warn_ratio": 0.40, "fail_ratio": 0.70, "min_facts": 10},
    "dumping": {"min_facts": 8, "window_seconds": 3600, "max_avg_chars": 50},
    "near-prune-critical": {
        "below_weight": 0.05,
        "words": "must/always/never/decision(s)/decided/policy/policies",
    },
    "duplicates": {"warn_ratio": 0.10, "fail_ratio": 0.25},
    "semantic-duplicates": {"min_cosine": 0.92, "newest_compared": 5000, "most_vectors": 200_000},
    "probes-changed": {"recent_cycles": 5},
    "contradictions-pending": {"actions": "duplicate, possible_update"},
    "embedding-coverage": {"warn_below": 0.50},
    "summaries-reverted": {"warn_ratio": 0.25, "warn_min": 2},
}
RULES = tuple(THRESHOLDS)

CRITICAL_WORDS = re.compile(r"\b(?:must|always|never|decisions?|decided|polic(?:y|ies))\b")
CONTRADICTION_ACTIONS = ("duplicate", "possible_update")
_PUNCTUATION = re.compile(r"[^\w\s]|_")
_ASCII_PUNCTUATION = str.maketrans("", "", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass(frozen=True)
class FactRef:
    """A fact a finding names: its id and the start of its text (untrusted)."""

    id: str
    text: str


@dataclass(frozen=True)
class Finding:
    rule: str
    status: Status
    detail: str
    threshold: str  # the rule's thresholds, as a person reads them
    facts: tuple[FactRef, ...] = ()
    more: int = 0  # facts it concerns beyond those named


@dataclass(frozen=True)
class AgentHealth:
    agent_id: str
    live_facts: int
    tombstones: int
    findings: tuple[Finding, ...]

    @property
    def verdict(self) -> Status:
        return worst(f.status for f in self.findings)


@dataclass(frozen=True)
class HealthReport:
    agents: tuple[AgentHealth, ...]
    embed_model: str | None = None  # the configured embedder's model, None when off

    @property
    def verdict(self) -> Status:
        return worst(a.verdict for a in self.agents)


def worst(statuses: Iterable[Status]) -> Status:
    return max(statuses, key=STATUSES.index, default="ok")


def normalised(text: str) -> str:
    """Text as the duplicate rule compares it: case folded, punctuation removed,
    whitespace collapsed (upstream's rule)."""
    folded = text.casefold()
    if folded.isascii():
        folded = folded.translate(_ASCII_PUNCTUATION)
    else:
        folded = _PUNCTUATION.sub("", unicodedata.normalize("NFKC", folded))
    return " ".join(folded.split())


_SEP = "\x00"
_ASCII_PUNCTUATION_BYTES = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ASCII_SPACES_BYTES = bytes.maketrans(b"\t\n\r\v\f\x1c\x1d\x1e\x1f", b" " * 9)
_OTHER_SPACES = re.compile(r"[^\S ]")  # whitespace but the plain space (never the separator)


def normalised_all(texts: Sequence[str]) -> list[str]:
    """`normalised` of each text, computed over many joined at once (a million texts in a
    few C-level passes instead of a million Python calls): the ASCII ones as bytes, the
    others together. If a text holds the separator, each is done on its own."""
    if not texts:
        return []
    joined = _SEP.join(texts)
    if joined.count(_SEP) != len(texts) - 1:
        return [normalised(t) for t in texts]
    if joined.isascii():
        return _ascii_all(joined)
    plain = [i for i, t in enumerate(texts) if t.isascii()]
    other = [i for i, t in enumerate(texts) if not t.isascii()]
    out = [""] * len(texts)
    if plain:
        for i, key in zip(plain, _ascii_all(_SEP.join(texts[i] for i in plain)), strict=True):
            out[i] = key
    for i, key in zip(other, _unicode_all([texts[i] for i in other]), strict=True):
        out[i] = key
    return out


def _ascii_all(joined: str) -> list[str]:
    data = joined.encode("ascii").lower().translate(_ASCII_SPACES_BYTES, _ASCII_PUNCTUATION_BYTES)
    while b"  " in data:
        data = data.replace(b"    ", b" ").replace(b"  ", b" ")
    data = data.replace(b" \x00", b"\x00").replace(b"\x00 ", b"\x00").strip(b" ")
    return data.decode("ascii").split(_SEP)


def _unicode_all(texts: list[str]) -> list[str]:
    folded = _PUNCTUATION.sub("", unicodedata.normalize("NFKC", _SEP.join(texts).casefold()))
    folded = _OTHER_SPACES.sub(" ", folded)
    if folded.count(_SEP) != len(texts) - 1:  # NFKC made or took one (it never should)
        return [normalised(t) for t in texts]
    while "  " in folded:
        folded = folded.replace("    ", " ").replace("  ", " ")
    return folded.replace(" " + _SEP, _SEP).replace(_SEP + " ", _SEP).strip(" ").split(_SEP)


def repeated(keys: Sequence[str]) -> set[str]:
    """The keys that occur more than once (hashes counted in an array, then the few
    candidates compared exactly)."""
    import numpy as np

    if len(keys) < 2:
        return set()
    hashes = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
    _values, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    candidates = np.flatnonzero(counts[inverse] > 1).tolist()
    seen: dict[str, int] = {}
    for index in candidates:
        seen[keys[index]] = seen.get(keys[index], 0) + 1
    return {key for key, n in seen.items() if n > 1}


def ulid_ms(ids: Sequence[str]) -> Any:
    """The creation millisecond each ULID carries (its first 10 characters), as an int64
    array; an id that is not a ULID gives -1."""
    import numpy as np

    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    table = np.full(256, -1, dtype=np.int64)
    for value, char in enumerate(alphabet):
        table[ord(char)] = value
        table[ord(char.lower())] = value
    if not ids:
        return np.zeros(0, dtype=np.int64)
    joined = "".join(ids)
    if joined.isascii() and len(joined) == 26 * len(ids):  # every id a ULID's length
        heads = np.frombuffer(joined.encode(), dtype=np.uint8).reshape(-1, 26)[:, :10]
    else:
        padded = "".join(i[:10].ljust(10, "!") if i.isascii() else "!" * 10 for i in ids)
        heads = np.frombuffer(padded.encode(), dtype=np.uint8).reshape(-1, 10)
    digits = table[heads]
    ms = np.zeros(len(ids), dtype=np.int64)
    for column in range(10):
        ms = ms * 32 + digits[:, column]
    ms[(digits < 0).any(axis=1)] = -1
    return ms


def _ref(fact_id: str, text: str) -> FactRef:
    cut = text if len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"
    return FactRef(fact_id, cut)


def _named(pairs: Sequence[tuple[str, str]], total: int | None = None) -> dict[str, Any]:
    """The `facts` and `more` of a finding concerning `pairs` (id, text), in order."""
    shown = tuple(_ref(i, t) for i, t in pairs[:MAX_FACTS])
    return {"facts": shown, "more": (len(pairs) if total is None else total) - len(shown)}


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "0%"


class _AgentData:
    """One agent's live ids and texts (newest first) and weights, read once; pins and
    the texts of named facts only when a rule asks."""

    def __init__(self, store: MemoryStore, agent: str) -> None:
        self.store, self.agent = store, agent
        self.ids, self.texts = store.texts(agent, "live")
        self.weights = store.weights(agent, "live")

    def pinned_among(self, ids: Sequence[str]) -> set[str]:
        """Which of `ids` are pinned: a few facts read whole, or the agent's pins."""
        if len(ids) <= PIN_LOOKUPS:
            return {f.id for f in self.store.find_many(ids) if f is not None and f.pinned}
        return {f.id for f in self.store.pinned_facts(self.agent)}

    def pairs(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        """(id, text) of `ids`; only the first MAX_FACTS are named, so only their texts
        are read."""
        found = self.store.find_many(ids[:MAX_FACTS])
        texts = {f.id: f.text for f in found if f is not None}
        return [(i, texts.get(i, "")) for i in ids]


# ---- upstream's four rules --------------------------------------------------------------
def supersede_loop(live: int, tombstones: int) -> Finding:
    t = THRESHOLDS["supersede-loop"]
    total = live + tombstones
    ratio = tombstones / total if total else 0.0
    threshold = (
        f"warn ≥ {t['warn_ratio']:.0%}, fail ≥ {t['fail_ratio']:.0%} of the facts "
        f"tombstones, from {t['min_facts']} facts"
    )
    detail = f"{tombstones} of {counted(total, 'fact')} are tombstones ({_pct(tombstones, total)})"
    status: Status = "ok"
    if total >= int(t["min_facts"]):
        if ratio >= float(t["fail_ratio"]):
            status = "fail"
        elif ratio >= float(t["warn_ratio"]):
            status = "warn"
    if status != "ok":
        detail += ": facts are revised or consolidated over and over (a supersede loop?)"
    return Finding("supersede-loop", status, detail, threshold)


def dumping(data: _AgentData) -> Finding:
    """Bursts: at least `min_facts` live facts written within `window_seconds` whose
    average length is under `max_avg_chars` characters. Bursts are taken oldest first,
    each as long as its window allows, and do not overlap; the largest is named."""
    import numpy as np

    t = THRESHOLDS["dumping"]
    least, window, avg = int(t["min_facts"]), int(t["window_seconds"]), int(t["max_avg_chars"])
    threshold = f"warn: ≥ {least} facts within {window // 60} min averaging < {avg} characters"
    ids = data.ids[::-1]  # oldest first
    ms = ulid_ms(ids)
    lengths = np.fromiter(map(len, reversed(data.texts)), dtype=np.int64, count=len(ids))
    order = np.arange(len(ids))
    if len(ids) > 1 and not bool(np.all(ms[1:] >= ms[:-1])):  # ids in time order: no sort
        order = np.argsort(ms, kind="stable")
        ms, lengths = ms[order], lengths[order]
    bursts: list[tuple[int, int]] = []
    if len(ids) >= least:
        ends = np.searchsorted(ms, ms + window * 1000, side="right")
        sums = np.concatenate(([0], np.cumsum(lengths)))
        starts = np.arange(len(ids))
        counts = ends - starts
        candidate = (counts >= least) & (sums[ends] - sums[starts] < avg * counts) & (ms >= 0)
        position = 0
        for start in np.flatnonzero(candidate).tolist():
            if start < position:
                continue
            bursts.append((start, int(ends[start])))
            position = int(ends[start])
    if not bursts:
        return Finding("dumping", "ok", "no burst of short facts", threshold)
    start, end = max(bursts, key=lambda b: (b[1] - b[0], -b[0]))
    members = [ids[int(i)] for i in order[start:end]][::-1]  # newest first
    in_bursts = sum(e - s for s, e in bursts)
    from datetime import UTC, datetime

    def at(ms_value: int) -> str:
        return datetime.fromtimestamp(ms_value / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    detail = (
        f"{counted(len(bursts), 'burst')} of short facts ({counted(in_bursts, 'fact')}); "
        f"the largest: {end - start} facts between {at(int(ms[start]))} and "
        f"{at(int(ms[end - 1]))} (dumped rather than distilled?)"
    )
    return Finding("dumping", "warn", detail, threshold, **_named(data.pairs(members)))


def near_prune_critical(data: _AgentData) -> Finding:
    t = THRESHOLDS["near-prune-critical"]
    below = float(t["below_weight"])
    threshold = f"warn: unpinned, weight < {below} (pruning at 0.01), saying {t['words']}"
    light = {i for i, w in data.weights.items() if w < below}
    said: list[tuple[str, str]] = []
    if light:  # newest first, as the ids are
        said = [
            (i, text)
            for i, text in zip(data.ids, data.texts, strict=True)
            if i in light and CRITICAL_WORDS.search(text.casefold())
        ]
    pinned = data.pinned_among([i for i, _ in said]) if said else set()
    weak = [(i, text) for i, text in said if i not in pinned]
    if not weak:
        return Finding("near-prune-critical", "ok", "no weak decision or policy", threshold)
    detail = (
        f"{counted(len(weak), 'decision or policy', 'decisions or policies')} close to "
        "pruning: consider pinning them"
    )
    return Finding("near-prune-critical", "warn", detail, threshold, **_named(weak))


def _groups_finding(
    rule: str, groups: list[list[str]], compared: int, data: _AgentData, threshold: str, what: str
) -> Finding:
    t = THRESHOLDS["duplicates"]
    members = sum(len(g) for g in groups)
    if not groups:
        return Finding(rule, "ok", f"no {what}", threshold)
    ratio = members / compared if compared else 0.0
    status: Status = "info"
    if ratio >= float(t["fail_ratio"]):
        status = "fail"
    elif ratio >= float(t["warn_ratio"]):
        status = "warn"
    # Largest groups first, then newest (ids are newest first within a group).
    groups = sorted(groups, key=lambda g: (-len(g), [-ord(c) for c in g[0]]))
    named = [fact_id for group in groups for fact_id in group]
    detail = (
        f"{counted(len(groups), 'group')} of {what}: {members} of "
        f"{counted(compared, 'live fact')} ({_pct(members, compared)})"
    )
    return Finding(rule, status, detail, threshold, **_named(data.pairs(named)))


def duplicates(data: _AgentData) -> Finding:
    t = THRESHOLDS["duplicates"]
    threshold = (
        f"info if any; warn ≥ {t['warn_ratio']:.0%}, fail ≥ {t['fail_ratio']:.0%} of live "
        "facts (case, punctuation, spacing ignored)"
    )
    keys = normalised_all(data.texts)
    twice = repeated(keys)
    by_text: dict[str, list[str]] = defaultdict(list)
    if twice:
        for fact_id, key in zip(data.ids, keys, strict=True):
            if key in twice:
                by_text[key].append(fact_id)
    groups = list(by_text.values())
    return _groups_finding("duplicates", groups, len(data.ids), data, threshold, "duplicates")


# ---- ours ----------------------------------------------------------------------------
def semantic_duplicates(store: MemoryStore, agent: str, data: _AgentData) -> Finding:
    """Pairs of live facts whose vectors (a fact's sentence vectors averaged) are at
    least `min_cosine` alike, among the agent's newest `newest_compared` facts holding a
    vector of the store's model, where one fact's key details (numbers, dates, ids,
    names: the coverage guard's) are all in the other; facts that are already exact
    duplicates are left to the rule above."""
    import numpy as np

    t = THRESHOLDS["semantic-duplicates"]
    cosine, newest = float(t["min_cosine"]), int(t["newest_compared"])
    d = THRESHOLDS["duplicates"]
    threshold = (
        f"cosine ≥ {cosine} and no detail apart, newest {newest:,} with a vector; info if any, "
        f"warn ≥ {d['warn_ratio']:.0%}, fail ≥ {d['fail_ratio']:.0%} of them"
    )
    model, _dimension = store.embed_model()
    most = int(t["most_vectors"])
    stored = 0 if model is None else store.embed_state(agent).vectors
    if stored > most:  # every block is read to find the newest: bounded in memory
        detail = f"not checked: {stored:,} facts have a vector (it reads at most {most:,})"
        return Finding("semantic-duplicates", "info", detail, threshold)
    blocks = None if model is None else store.vector_blocks_since(agent, model, -1)
    if blocks is None:
        return Finding(
            "semantic-duplicates",
            "ok",
            "not checked: no vectors stored (no embedder ran)",
            threshold,
        )
    rows: dict[str, list[Any]] = defaultdict(list)
    for block in sorted(blocks.changed):
        matrix, names = blocks.changed[block]
        for row, name in enumerate(names):
            if name:
                rows[name].append(matrix[row])
    compared = [(i, t) for i, t in zip(data.ids, data.texts, strict=True) if i in rows][:newest]
    live = [i for i, _ in compared]
    if len(live) < 2:
        return Finding(
            "semantic-duplicates",
            "ok",
            f"{counted(len(live), 'fact has', 'facts have')} a vector: nothing to compare",
            threshold,
        )
    vectors = np.stack([np.mean(rows[i], axis=0) for i in live]).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms == 0, 1, norms)
    keys = normalised_all([t for _, t in compared])
    sets = DisjointSets(len(live))
    texts = [t for _, t in compared]
    details: dict[int, set[str]] = {}

    def held(index: int) -> set[str]:
        if index not in details:
            details[index] = {detail_key(d) for d in key_details(texts[index])}
        return details[index]

    chunk = 1024
    for start in range(0, len(live), chunk):
        sims = vectors[start : start + chunk] @ vectors.T
        rows_i, cols = np.nonzero(sims >= cosine)
        for a, b in zip((rows_i + start).tolist(), cols.tolist(), strict=True):
            if a >= b or keys[a] == keys[b]:
                continue
            # Alike, but each holds a detail the other lacks (a number, a date, a name):
            # two facts, or an update of one (review's possible_update), not a duplicate.
            if not (held(a) <= held(b) or held(b) <= held(a)):
                continue
            sets.join(b, a)
    grouped = {root: [live[i] for i in members] for root, members in sets.groups().items()}
    groups = [g for g in grouped.values() if len(g) > 1]
    finding = _groups_finding(
        "semantic-duplicates", groups, len(live), data, threshold, "near-duplicates by meaning"
    )
    return finding


def _recent_applied(records: list[CycleRecord], limit: int) -> list[CycleRecord]:
    applied = [
        r for r in records if r.kind == "consolidate" and r.outcome == "applied" and r.probes
    ]
    return applied[:limit]


def probes_changed(store: MemoryStore, records: list[CycleRecord]) -> Finding:
    """Probes whose answers one of the agent's recent applied (not reverted) cycles
    changed, or lost a fact from (as the journal recorded it at review)."""
    t = THRESHOLDS["probes-changed"]
    recent = int(t["recent_cycles"])
    threshold = (
        f"last {recent} applied cycles with probes: warn if a probe lost a fact, info if "
        "an answer changed"
    )
    cycles = [r for r in _recent_applied(records, recent) if not r.reverted_by]
    lost: list[str] = []
    changed_probes: set[str] = set()
    lost_probes: set[str] = set()
    touched: list[str] = []
    for record in cycles:
        for probe in record.probes:
            if probe.lost:
                lost_probes.add(probe.probe_id)
                lost += [i for i in probe.lost if i not in lost]
            elif probe.changed:
                changed_probes.add(probe.probe_id)
                moved = [*probe.displaced, *probe.replaced, *(m.id for m in probe.moved)]
                touched += [i for i in moved if i not in touched]
    if not lost_probes and not changed_probes:
        said = "no recent cycle changed a probe's answer" if cycles else "no recent cycle"
        return Finding("probes-changed", "ok", said + " with probes", threshold)
    ids = lost + [i for i in touched if i not in lost]
    texts = {}
    for fact in store.find_many(ids[:MAX_FACTS]):
        if fact is not None:
            texts[fact.id] = fact.text
    pairs = [(i, texts.get(i, "(pruned since)")) for i in ids]
    parts = []
    if lost_probes:
        parts.append(
            f"{counted(len(lost_probes), 'probe')} lost {counted(len(lost), 'fact')} it found"
        )
    if changed_probes - lost_probes:
        parts.append(f"{counted(len(changed_probes - lost_probes), 'probe')} answered differently")
    detail = f"in the last {counted(len(cycles), 'applied cycle')}: " + "; ".join(parts)
    status: Status = "warn" if lost_probes else "info"
    return Finding("probes-changed", status, detail, threshold, **_named(pairs))


def contradictions_pending(store: MemoryStore, agent: str) -> Finding:
    return contradiction_finding(store.proposals(agent, status="pending"))


def contradiction_finding(pending: Sequence[ReviewProposal]) -> Finding:
    """Held changes waiting for a person whose kind says the store may contradict itself
    (`duplicate`, `possible_update`), compared by name: a kind this version does not
    know yet counts as soon as a store holds it."""
    threshold = "warn if any held change of kind duplicate or possible_update waits"
    waiting = [p for p in pending if p.pending and str(p.action) in CONTRADICTION_ACTIONS]
    if not waiting:
        return Finding(
            "contradictions-pending", "ok", "no contradiction waits in review", threshold
        )
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for proposal in waiting:
        for match in proposal.matches:
            if match.id not in seen:
                seen.add(match.id)
                pairs.append((match.id, match.text))
    shown = ", ".join(p.id for p in waiting[:3]) + (", …" if len(waiting) > 3 else "")
    detail = (
        f"{counted(len(waiting), 'possible contradiction')} waiting in review ({shown}): "
        "`graymatter-tui review list` or the Review tab"
    )
    return Finding("contradictions-pending", "warn", detail, threshold, **_named(pairs))


def embedding_coverage(
    store: MemoryStore, agent: str, live: int, configured: str | None
) -> Finding:
    warn_below = float(THRESHOLDS["embedding-coverage"]["warn_below"])
    threshold = f"warn below {warn_below:.0%} of live facts with a vector of the configured model"
    if configured is None:
        return Finding(
            "embedding-coverage", "ok", "embeddings are off (GRAYMATTER_EMBED=none)", threshold
        )
    state = store.embed_state(agent)
    covered = state.vectors if state.model == configured else 0
    if live == 0:
        return Finding("embedding-coverage", "ok", "no live facts", threshold)
    missing = live - covered
    share = _pct(covered, live)
    detail = f"{covered} of {counted(live, 'live fact')} have a vector of {configured} ({share})"
    if state.model is not None and state.model != configured:
        detail += f"; the store's vectors are of {state.model}"
    if missing == 0:
        return Finding("embedding-coverage", "ok", detail, threshold)
    detail += "; `graymatter-tui embed` embeds the rest"
    if state.model == configured:
        waiting = [(i, text) for _agent, i, text in store.embed_waiting(MAX_FACTS, agent)]
    else:
        ids, texts = store.texts(agent, "live", limit=MAX_FACTS)
        waiting = list(zip(ids, texts, strict=True))
    status: Status = "warn" if covered / live < warn_below else "info"
    shown = tuple(_ref(i, t) for i, t in waiting[:MAX_FACTS])
    return Finding(
        "embedding-coverage", status, detail, threshold, facts=shown, more=missing - len(shown)
    )


def summaries_reverted(store: MemoryStore, records: list[CycleRecord]) -> Finding:
    t = THRESHOLDS["summaries-reverted"]
    ratio_at, least = float(t["warn_ratio"]), int(t["warn_min"])
    threshold = f"info if any; warn if ≥ {least} and ≥ {ratio_at:.0%} of applied consolidations"
    applied = [r for r in records if r.kind == "consolidate" and r.outcome == "applied"]
    reverted = [r for r in applied if r.reverted_by]
    if not reverted:
        return Finding(
            "summaries-reverted",
            "ok",
            f"none of {counted(len(applied), 'applied consolidation')} reverted",
            threshold,
        )
    share = len(reverted) / len(applied)
    status: Status = "warn" if len(reverted) >= least and share >= ratio_at else "info"
    detail = (
        f"{len(reverted)} of {counted(len(applied), 'applied consolidation')} reverted "
        f"({_pct(len(reverted), len(applied))}): the summariser's work was undone"
    )
    ids = [r.summary_id for r in reverted if r.summary_id]
    found = {f.id: f.text for f in store.find_many(ids[:MAX_FACTS]) if f is not None}
    pairs = [(i, found.get(i, "(pruned since)")) for i in ids]
    return Finding("summaries-reverted", status, detail, threshold, **_named(pairs))


# ---- the report ---------------------------------------------------------------------
def agent_health(store: MemoryStore, agent: str, configured: str | None) -> AgentHealth:
    summaries = {a.agent_id: a for a in store.agents()}
    summary = summaries.get(agent)
    live = summary.live_facts if summary else 0
    tombs = summary.tombstones if summary else 0
    data = _AgentData(store, agent)
    records = store.records(agent)
    findings = (
        supersede_loop(live, tombs),
        dumping(data),
        near_prune_critical(data),
        duplicates(data),
        semantic_duplicates(store, agent, data),
        probes_changed(store, records),
        contradictions_pending(store, agent),
        embedding_coverage(store, agent, live, configured),
        summaries_reverted(store, records),
    )
    return AgentHealth(agent, live, tombs, findings)


def check_health(
    store: MemoryStore, agent: str | None = None, *, embed_model: str | None = None
) -> HealthReport:
    """Every rule for `agent`, or for every agent (by name), read in one snapshot.
    `embed_model`: the configured embedder's model (None when embeddings are off).
    NotFound for an agent the store does not hold."""

    def run(view: MemoryStore) -> HealthReport:
        known = sorted(a.agent_id for a in view.agents())
        if agent is not None and agent not in known:
            more = f" and {len(known) - 5} more" if len(known) > 5 else ""
            held = f"its agents: {', '.join(known[:5])}{more}" if known else "it holds no agent"
            raise NotFound(f"no agent {agent!r} in this store ({held})")
        names = known if agent is None else [agent]
        return HealthReport(
            tuple(agent_health(view, name, embed_model) for name in names), embed_model
        )

    if store.absent:  # nothing to read, and no snapshot to read it in
        return run(store)
    return store.in_one_snapshot(run)


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    return {
        "rule": finding.rule,
        "status": finding.status,
        "detail": finding.detail,
        "threshold": finding.threshold,
        "facts": [{"id": f.id, "text": f.text} for f in finding.facts],
        "more": finding.more,
    }


def report_to_dict(report: HealthReport) -> dict[str, Any]:
    """`doctor --health --json`'s body (the CLI adds `data_dir` and `ok`)."""
    return {
        "verdict": report.verdict,
        "thresholds": THRESHOLDS,
        "agents": [
            {
                "agent_id": a.agent_id,
                "live_facts": a.live_facts,
                "tombstones": a.tombstones,
                "verdict": a.verdict,
                "findings": [finding_to_dict(f) for f in a.findings],
            }
            for a in report.agents
        ],
    }
