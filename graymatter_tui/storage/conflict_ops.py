"""The pair check on the write path: a fact just written is compared with live facts of
its agent found through the keyword index, in the transaction that writes it, and a
`duplicate` or `possible_update` (`core.conflicts`) becomes a review item for a person.

Bounded so a write stays fast whatever the store's size: candidates come from the
postings of the written fact's rarest subject terms (its words with the key details
taken out: the details are what differ in an update), the newest `POSTINGS_PER_TERM` of
each, and the `MAX_CANDIDATES` sharing most of those terms are compared. Each written
fact raises at most one item of each kind, for the held fact most like it.

A pair is asked once: the first time it is raised, its key (the agent and the two texts)
goes into the store's meta, and the same two texts are never raised again for that
agent, whatever was decided.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from graymatter_tui.core.conflicts import PairVerdict, compare_profiles, profile
from graymatter_tui.core.details import key_details
from graymatter_tui.core.model import PAIR_ACTIONS, Fact, ReviewProposal
from graymatter_tui.core.words import counted
from graymatter_tui.storage import review_ops
from graymatter_tui.storage.codec import decode_proposal
from graymatter_tui.storage.transaction import Transaction

SUBJECT_TERMS = 4
POSTINGS_PER_TERM = 256
MAX_CANDIDATES = 12
PAIR_KEY = "review_pair:"  # meta prefix: a pair raised once, never again


def pair_key(agent: str, one: str, other: str) -> str:
    first, second = sorted((one, other))
    digest = hashlib.sha256("\0".join((agent, first, second)).encode()).hexdigest()
    return PAIR_KEY + digest[:40]


def check_written(tx: Transaction, facts: Iterable[Fact]) -> list[ReviewProposal]:
    """Review items for the facts just written in this transaction, oldest first; a fact
    is compared with the live facts held before it (those written with it and older than
    it included), so a pair inside one batch is raised once, from its newer side."""
    written = sorted((f for f in facts if f.is_live), key=lambda f: f.id)
    batch = {f.id for f in written}
    one = len(written) == 1  # one fact: an activity entry per item; a bulk write: per agent
    raised: list[ReviewProposal] = []
    for fact in written:
        raised.extend(_check_one(tx, fact, batch, one))
    if not one:
        by_agent = Counter(p.agent_id for p in raised)
        for agent, count in by_agent.items():
            items = counted(count, "duplicate or possible update", "duplicates or possible updates")
            tx.log("review", agent, text=f"held {items} for review", count=count)
    return raised


def _check_one(tx: Transaction, fact: Fact, batch: set[str], log: bool) -> list[ReviewProposal]:
    best: dict[str, tuple[PairVerdict, Fact]] = {}
    written = profile(fact.text)
    for other in candidates(tx, fact, batch):
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


def candidates(tx: Transaction, fact: Fact, batch: set[str]) -> list[Fact]:
    """Live facts of the agent sharing most of the written fact's rarest subject terms."""
    agent = fact.agent_id
    subject = fact.text
    for detail in key_details(fact.text):
        subject = subject.replace(detail, " ")
    terms = sorted(set(tx.analyzer.terms(subject)), key=lambda t: tx.document_frequency(agent, t))
    shared: Counter[str] = Counter()
    for term in terms[:SUBJECT_TERMS]:
        for fact_id, _, _ in tx.iter_postings(agent, term, newest=POSTINGS_PER_TERM):
            if fact_id != fact.id and not (fact_id in batch and fact_id > fact.id):
                shared[fact_id] += 1
    ranked = sorted(shared, key=lambda i: (shared[i], i), reverse=True)[:MAX_CANDIDATES]
    return [f for f in tx.find_many(ranked) if f is not None and f.is_live]


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
