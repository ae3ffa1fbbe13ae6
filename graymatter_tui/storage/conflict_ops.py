"""The pair check on the write path: a fact just written is compared with live facts of
its agent found through the keyword index, in the transaction that writes it, and a
`duplicate` or `possible_update` (`core.conflicts`) becomes a review item for a person.

Bounded so a write stays fast whatever the store's size: candidates come from the
postings of the written fact's rarest subject terms (its words with the key details
taken out: the details are what differ in an update), the newest `POSTINGS_PER_TERM` of
each held before the written fact, and the `MAX_CANDIDATES` sharing most of those terms
(two at least, when the fact has two) are compared: a fact sharing one word of four
with it is not about the same thing. Each written fact raises at most one item of each
kind, for the held fact most like it. A bulk write (an import, `put_many`) reads each
term's postings once for the whole batch (`_Windows`), not once per fact: an import of
100k facts sharing a small vocabulary walked 100M postings that way.

A pair is asked once: the first time it is raised, its key (the agent and the two texts)
goes into the store's meta, and the same two texts are never raised again for that
agent, whatever was decided.
"""

from __future__ import annotations

import hashlib
import heapq
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable

from graymatter_tui.core.conflicts import PairVerdict, compare_profiles, profile
from graymatter_tui.core.details import key_details
from graymatter_tui.core.model import PAIR_ACTIONS, Fact, ReviewProposal
from graymatter_tui.core.words import counted_pairs
from graymatter_tui.storage import review_ops
from graymatter_tui.storage.codec import decode_proposal
from graymatter_tui.storage.transaction import Transaction

SUBJECT_TERMS = 4
POSTINGS_PER_TERM = 256
MAX_CANDIDATES = 12
PAIR_KEY = "review_pair:"  # meta prefix: a pair raised once, never again
# Of the facts the embedder's pass finds alike (cosine 0.6 or more), how many of the
# closest each new fact is judged against: it gets at most one item of each kind, for
# the closest that earns one.
CLOSEST_PER_FACT = 32


def pair_key(agent: str, one: str, other: str) -> str:
    first, second = sorted((one, other))
    digest = hashlib.sha256("\0".join((agent, first, second)).encode()).hexdigest()
    return PAIR_KEY + digest[:40]


def check_written(tx: Transaction, facts: Iterable[Fact]) -> list[ReviewProposal]:
    """Review items for the facts just written in this transaction, oldest first; a fact
    is compared with the live facts held before it (those written with it and older than
    it included), so a pair inside one batch is raised once, from its newer side."""
    written = sorted((f for f in facts if f.is_live), key=lambda f: f.id)
    one = len(written) == 1  # one fact: an activity entry per item; a bulk write: per agent
    windows = None if one else _Windows(tx, written)
    raised: list[ReviewProposal] = []
    for fact in written:
        raised.extend(_check_one(tx, fact, one, windows))
    if not one:
        by_agent = Counter(p.agent_id for p in raised)
        for agent, count in by_agent.items():
            items = counted_pairs(count)
            tx.log("review", agent, text=f"held {items} for review", count=count)
    return raised


def _check_one(
    tx: Transaction, fact: Fact, log: bool, windows: _Windows | None
) -> list[ReviewProposal]:
    held = candidates(tx, fact, windows)
    if not held:
        return []  # most facts of a varied store: no profile to make
    best: dict[str, tuple[PairVerdict, Fact]] = {}
    written = profile(fact.text)
    for other in held:
        verdict = compare_profiles(written, profile(other.text))
        if verdict.kind not in PAIR_ACTIONS:
            continue
        chosen = best.get(verdict.kind)
        if chosen is not None and chosen[0].similarity >= verdict.similarity:
            continue
        if tx.meta_get(pair_key(fact.agent_id, fact.text, other.text)) is not None:
            continue
        best[verdict.kind] = (verdict, other)
    raised = []
    for kind in PAIR_ACTIONS:
        if kind in best:
            verdict, other = best[kind]
            item = review_ops.hold_pair(tx, kind, fact, other, verdict.reason(), log=log)
            tx.meta_put(pair_key(fact.agent_id, fact.text, other.text), item.id)
            raised.append(item)
    return raised


Judged = tuple[str, PairVerdict, Fact, Fact]  # (kind, verdict, new fact, held fact)


def judge_close(
    tx: Transaction, agent: str, close: list[tuple[str, dict[str, float]]]
) -> list[Judged]:
    """The pairs the embedding model finds alike that deserve a review item: each (fact
    id, {live fact id: cosine}) the embedder's pass found once the fact had a vector,
    judged by meaning (`compare_profiles` given the cosine) against its
    `CLOSEST_PER_FACT` closest. Of each pair the newer fact is the new one; a pair already
    asked (by the write path's check, or an earlier pass) is left out, and each fact
    gets at most one item of each kind, for the closest. Only reads: a read snapshot
    judges, so no writer waits on the profiles (`raise_judged` writes)."""
    closest = [(fact_id, _closest(near)) for fact_id, near in close]
    wanted = sorted({i for fact_id, near in closest for i in (fact_id, *(o for o, _ in near))})
    facts = {f.id: f for f in tx.find_many(wanted) if f is not None and f.is_live}
    found: list[tuple[PairVerdict, Fact, Fact, str]] = []
    for fact_id, near in closest:
        fact = facts.get(fact_id)
        if fact is None or fact.agent_id != agent:
            continue
        for other_id, cosine in near:
            other = facts.get(other_id)
            if other is None or other.id == fact.id or other.agent_id != agent:
                continue
            new, held = (fact, other) if fact.id > other.id else (other, fact)
            verdict = compare_profiles(profile(new.text), profile(held.text), cosine)
            if verdict.kind in PAIR_ACTIONS:
                found.append((verdict, new, held, pair_key(agent, new.text, held.text)))
    # Whether each pair was asked before, read together: one round trip on a server.
    asked = tx.meta_many(sorted({key for *_, key in found}))
    best: dict[tuple[str, str], tuple[PairVerdict, Fact, Fact]] = {}
    for verdict, new, held, key in found:
        if asked[key] is not None:
            continue
        chosen = best.get((new.id, verdict.kind))
        if chosen is not None and (chosen[0].similarity, chosen[2].id) >= (
            verdict.similarity,
            held.id,
        ):
            continue
        best[(new.id, verdict.kind)] = (verdict, new, held)
    return [(kind, *pair) for (_, kind), pair in sorted(best.items())]


def raise_judged(tx: Transaction, agent: str, judged: list[Judged]) -> list[ReviewProposal]:
    """Hold the pairs `judge_close` chose, in this write: a pair whose facts are no longer
    both live with the texts judged (written meanwhile), or already asked, is left out."""
    wanted = sorted({f.id for _, _, new, held in judged for f in (new, held)})
    now = {f.id: f for f in tx.find_many(wanted) if f is not None and f.is_live}
    keys = [pair_key(agent, new.text, held.text) for _, _, new, held in judged]
    asked = tx.meta_many(sorted(set(keys)))
    holding: dict[str, tuple[str, Fact, Fact, str]] = {}
    for key, (kind, verdict, judged_new, judged_held) in zip(keys, judged, strict=True):
        new, held = now.get(judged_new.id), now.get(judged_held.id)
        if new is None or held is None:
            continue
        if (new.text, held.text) != (judged_new.text, judged_held.text):
            continue
        if asked[key] is not None or key in holding:
            continue  # asked meanwhile, or the same two texts met from the other side
        holding[key] = (kind, new, held, verdict.reason())
    pairs = list(holding.values())
    # One item is logged as the write path logs one; several get one entry, below.
    one = len(pairs) == 1
    raised = [review_ops.hold_pair(tx, *pairs[0])] if one else review_ops.hold_pairs(tx, pairs)
    tx.meta_put_many([(key, item.id) for key, item in zip(holding, raised, strict=True)])
    if len(raised) > 1:
        items = counted_pairs(len(raised))
        text = f"held {items} found by meaning for review"
        tx.log("review", agent, text=text, count=len(raised))
    return raised


def _closest(near: dict[str, float]) -> list[tuple[str, float]]:
    """The `CLOSEST_PER_FACT` nearest of a fact's alike facts, closest first (ties by id).
    In a store of facts written from one template each new fact may have thousands above
    the floor, each a text to profile in Python."""
    if len(near) <= CLOSEST_PER_FACT:
        return list(near.items())
    return heapq.nsmallest(CLOSEST_PER_FACT, near.items(), key=lambda pair: (-pair[1], pair[0]))


def candidates(tx: Transaction, fact: Fact, windows: _Windows | None = None) -> list[Fact]:
    """Live facts of the agent held before `fact` sharing most of its rarest subject
    terms (ties: the newer first)."""
    agent = fact.agent_id
    subject = fact.text
    for detail in key_details(fact.text):
        subject = subject.replace(detail, " ")
    terms = sorted(set(tx.analyzer.terms(subject)), key=lambda t: tx.document_frequency(agent, t))
    shared: Counter[str] = Counter()
    rarest = terms[:SUBJECT_TERMS]
    for term in rarest:
        if windows is not None:
            shared.update(windows.held_before(agent, term, fact.id))
        else:
            shared.update(
                i
                for i, _, _ in tx.iter_postings(agent, term, newest=POSTINGS_PER_TERM)
                if i != fact.id
            )
    ranked = _most_shared(shared, MAX_CANDIDATES, least=min(len(rarest), 2))
    found = tx.find_many(ranked) if windows is None else windows.facts(ranked)
    return [f for f in found if f is not None and f.is_live]


def _most_shared(shared: Counter[str], limit: int, least: int) -> list[str]:
    """The `limit` ids sharing most terms (`least` at least), the newer first among
    equals. Counts are at most SUBJECT_TERMS: the lowest count the answer needs is found
    from how many ids have each, and only the ids at or over it are sorted (a bulk
    write's facts each meet about a thousand ids, most sharing one or two terms)."""
    floor = max(least, 1)
    ids_with = Counter(shared.values())
    cut, enough = floor, 0
    for count in sorted(ids_with, reverse=True):
        if count < floor:
            break
        cut, enough = count, enough + ids_with[count]
        if enough >= limit:
            break
    ranked = sorted([(n, i) for i, n in shared.items() if n >= cut], reverse=True)
    return [i for _, i in ranked[:limit]]


class _Windows:
    """For the facts of one bulk write: each term's postings read once and split into
    the facts the store held before the write (its newest `POSTINGS_PER_TERM`, for every
    fact of the batch) and those of the batch (in key order, which is age order: the
    newest `POSTINGS_PER_TERM` older than a fact are cut for it). Nothing the pair check
    does changes a posting, so the lists stay true."""

    KEPT_FACTS = 8192  # neighbours in age recur from one fact to the next

    def __init__(self, tx: Transaction, written: list[Fact]) -> None:
        self._tx = tx
        self._written = {f.id: f.id for f in written}  # one string per id, however read
        self._lists: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        self._facts: dict[str, Fact | None] = {}

    def held_before(self, agent: str, term: str, fact_id: str) -> list[str]:
        lists = self._lists.get((agent, term))
        if lists is None:
            written, held = self._written, []
            batch = []
            for i, _, _ in self._tx.iter_postings(agent, term):
                same = written.get(i)
                if same is None:
                    held.append(i)
                else:
                    batch.append(same)
            lists = self._lists[(agent, term)] = (held[-POSTINGS_PER_TERM:], batch)
        held, batch = lists
        end = bisect_left(batch, fact_id)
        return held + batch[max(end - POSTINGS_PER_TERM, 0) : end]

    def facts(self, ids: list[str]) -> list[Fact | None]:
        if len(self._facts) > self.KEPT_FACTS:
            self._facts.clear()
        missing = [i for i in ids if i not in self._facts]
        if missing:
            self._facts.update(zip(missing, self._tx.find_many(missing), strict=True))
        return [self._facts[i] for i in ids]


def remember_pairs(tx: Transaction) -> int:
    """Mark every pair the store's proposals raised as asked (a store loaded from another,
    whose meta does not travel); returns how many were marked."""
    marked = 0
    for raw in tx.iter_proposals(newest_first=False):
        proposal = decode_proposal(raw)
        if proposal.is_pair:
            tx.meta_put(pair_key(proposal.agent_id, proposal.text, proposal.target), proposal.id)
            marked += 1
    return marked
