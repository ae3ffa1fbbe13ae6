"""A realistic demo store: three agents, a few hundred facts of varied age and use.

Deterministic for a given clock: the same GRAYMATTER_NOW gives the same facts and IDs,
so screenshots of the demo are reproducible. Weights are set as decay would leave them,
some facts are pinned, and clusters of near-duplicates give consolidation something to do.

The review queue holds what the demo means it to: its clusters' duplicates and a few
possible updates written on purpose (a threshold lowered, a freeze moved). A random fill
of a template that would be another update of a fact already made (a second replica
count for one service) is drawn again, so a person opening the demo finds a queue they
can work through, not a hundred items of the generator's noise.
"""

from __future__ import annotations

import functools
import math
import random
from datetime import datetime, timedelta
from itertools import chain

from ulid import ULID

from graymatter_tui.core import provenance
from graymatter_tui.core.conflicts import TextProfile, compare_profiles, profile
from graymatter_tui.storage import MemoryStore, NewFact

AGENTS = ("support-bot", "research-agent", "ops-agent")
HALF_LIFE_HOURS = 720.0

_CUSTOMERS = ["Acme Corp", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Wayne Foods"]
_PEOPLE = ["Maria Lopez", "Dev Patel", "Chen Wei", "Amara Okafor", "Lars Nilsson", "Yuki Tanaka"]
_SERVICES = ["billing-api", "auth-service", "search-indexer", "notifications", "ledger", "gateway"]

_SUPPORT = [
    "{customer} reported ticket SUP-{n4} about duplicate invoices in {month}.",
    "{person} at {customer} prefers email over phone; reach them at {email}.",
    "Refunds over ${n3} need approval from a team lead before processing.",
    "{customer} is on the Enterprise plan with a renewal date of 2027-0{d1}-1{d1}.",
    "Password reset emails to {customer} were delayed by the spam filter on ticket SUP-{n4}.",
    "{person} asked for the SSO setup guide at https://docs.example.com/sso.",
    "Customers in the EU must have data exported within 30 days of a request.",
    "The known workaround for ticket SUP-{n4} is clearing the browser cache.",
]
_RESEARCH = [
    "Paper by {person} (2024) reports a {n2}% gain on retrieval benchmarks with hybrid search.",
    "Dataset RES-{n4} has {n3} labelled examples; licence is CC-BY-4.0.",
    "Experiment EXP-{n3} used learning rate 3e-4 and batch size {n2}.",
    "{person} suggested comparing BM25 against dense retrieval on the support corpus.",
    "The baseline model scores {n2}.{d1} F1 on the held-out split.",
    "Reading list item: https://arxiv.org/abs/2401.{n4} on memory consolidation.",
    "Reciprocal rank fusion with k = 60 beat either signal alone in run EXP-{n3}.",
    "Annotation guidelines v{d1} were agreed with {person} on {month} {day}.",
]
_OPS = [
    "{service} runs {d1} replicas in production behind the gateway.",
    "On-call for {service} this week is {person} ({email}).",
    "Incident INC-{n4}: {service} latency spiked to {n3} ms after a config push.",
    "Backups of the ledger database run nightly at 0{d1}:30 UTC.",
    "{service} depends on Postgres 16 on port 5432 in staging.",
    "Runbook for {service}: https://runbooks.example.com/{service}.",
    "Disk alerts fire at {n2}% usage on the build servers.",
    "Deploy freeze for {service} starts on {month} {day}.",
    "{service} was upgraded to version {d1}.{n2}.0 on {month} {day}.",
    "{service} keeps its logs for {n2} days in the log store.",
    "Alerts for {service} go to the #{service}-alerts channel.",
]
_TEMPLATES = {"support-bot": _SUPPORT, "research-agent": _RESEARCH, "ops-agent": _OPS}

# Clusters of near-duplicates: weak, old, and saying the same thing, so a cycle merges them.
_DUPLICATES = {
    "support-bot": [
        [
            "Acme Corp wants invoices sent to billing@acme.example.",
            "Acme Corp wants invoices sent to billing@acme.example. They asked twice.",
            "Invoices for Acme Corp go to billing@acme.example.",
        ],
        [
            "Globex support hours are 9:00-17:00 CET.",
            "Globex support hours are 9:00-17:00 CET on weekdays.",
        ],
    ],
    "research-agent": [
        [
            "The evaluation uses recall@8 as the main metric.",
            "The evaluation uses recall@8 as the main metric. Precision is secondary.",
            "Main evaluation metric: recall@8.",
        ],
    ],
    "ops-agent": [
        [
            "The staging database listens on port 5432.",
            "The staging database listens on port 5432. Use the VPN to reach it.",
            "Staging DB port is 5432.",
        ],
        [
            "Deploys happen on Tuesdays and Thursdays.",
            "Deploys happen on Tuesdays and Thursdays. Never on Fridays.",
        ],
    ],
}
# Possible updates the demo holds on purpose: (what was known, what replaced it).
_UPDATES = {
    "support-bot": [
        (
            "Refunds over $500 need approval from a team lead before processing.",
            "Refunds over $250 need approval from a team lead before processing.",
        ),
        (
            "Acme Corp is on the Enterprise plan with a renewal date of 2027-03-13.",
            "Acme Corp is on the Enterprise plan with a renewal date of 2027-06-13.",
        ),
    ],
    "research-agent": [
        (
            "The baseline model scores 71.2 F1 on the held-out split.",
            "The baseline model scores 74.8 F1 on the held-out split.",
        ),
        (
            "Experiment EXP-214 used learning rate 3e-4 and batch size 32.",
            "Experiment EXP-214 used learning rate 3e-4 and batch size 64.",
        ),
    ],
    "ops-agent": [
        (
            "Disk alerts fire at 80% usage on the build servers.",
            "Disk alerts fire at 90% usage on the build servers.",
        ),
        (
            "Deploy freeze for search-indexer starts on July 2.",
            "Deploy freeze for search-indexer starts on January 13.",
        ),
        (
            "auth-service runs 7 replicas in production behind the gateway.",
            "auth-service runs 5 replicas in production behind the gateway.",
        ),
    ],
}
_PINNED = {
    "support-bot": ["Never share a customer's data with another customer."],
    "research-agent": ["All results must be reproducible from a fixed seed."],
    "ops-agent": ["Production deploys need two approvals; never skip them."],
}

FACTS_PER_AGENT = 100


def _fill(template: str, rng: random.Random) -> str:
    person = rng.choice(_PEOPLE)
    return template.format(
        customer=rng.choice(_CUSTOMERS),
        person=person,
        service=rng.choice(_SERVICES),
        email=person.split()[0].lower() + "@example.com",
        month=rng.choice(["January", "March", "May", "July", "September", "November"]),
        n4=rng.randint(1000, 9999),
        n3=rng.randint(100, 999),
        n2=rng.randint(10, 99),
        d1=rng.randint(1, 9),
        day=rng.randint(1, 28),
    )


def _paired(new: TextProfile, old: TextProfile) -> bool:
    """Whether the write path's pair check would hold the two, either way round."""
    held = ("duplicate", "possible_update")
    return compare_profiles(new, old).kind in held or compare_profiles(old, new).kind in held


@functools.cache
def _filled(agent: str, seed: int) -> tuple[str, ...]:
    """The agent's template fills: distinct, and none a duplicate or possible update of
    another fact of the agent (cached: the check costs a few hundred ms, and the tests
    make many demo stores)."""
    rng = random.Random(f"{seed}:{agent}")
    fixed = [*_PINNED[agent], *chain(*_DUPLICATES[agent]), *chain(*_UPDATES[agent])]
    held = [profile(text) for text in fixed]
    per_template: dict[str, list[TextProfile]] = {}
    texts: list[str] = []
    seen = set(fixed)
    for _ in range(50 * FACTS_PER_AGENT):
        if len(fixed) + len(texts) >= FACTS_PER_AGENT:
            return tuple(texts)
        template = rng.choice(_TEMPLATES[agent])
        text = _fill(template, rng)
        if text in seen:
            continue
        seen.add(text)
        # Only a fill of the same template, or a fact written on purpose, is on its
        # subject: comparing with those alone keeps the check cheap.
        made = per_template.setdefault(template, [])
        candidate = profile(text)
        if any(_paired(candidate, other) for other in (*held, *made)):
            continue
        made.append(candidate)
        texts.append(text)
    raise RuntimeError(f"the demo's templates for {agent} cannot make {FACTS_PER_AGENT} facts")


def _decayed(now: datetime, accessed: datetime) -> float:
    hours = max((now - accessed).total_seconds() / 3600.0, 0.0)
    return math.exp(-math.log(2) * hours / HALF_LIFE_HOURS)


def demo_facts(now: datetime, seed: int = 42) -> list[NewFact]:
    rng = random.Random(seed)
    items: list[NewFact] = []

    def add(agent: str, text: str, age_days: float, *, pinned: bool = False, hits: int = 0) -> None:
        created = now - timedelta(days=age_days)
        accessed = created + timedelta(days=rng.uniform(0, age_days * 0.5)) if hits else created
        ms = int(created.timestamp() * 1000)
        fact_id = str(ULID.from_bytes(ms.to_bytes(6, "big") + rng.randbytes(10)))
        items.append(
            NewFact(
                agent_id=agent,
                text=text,
                created_at=created,
                accessed_at=accessed,
                access_count=hits,
                weight=1.0 if pinned else _decayed(now, accessed),
                pinned=pinned,
                fact_id=fact_id,
            )
        )

    for agent in AGENTS:
        for text in _PINNED[agent]:
            add(agent, text, rng.uniform(60, 120), pinned=True, hits=rng.randint(5, 40))
        for cluster in _DUPLICATES[agent]:
            for text in cluster:
                add(agent, text, rng.uniform(70, 110), hits=rng.randint(0, 2))
        for old, new in _UPDATES[agent]:
            add(agent, old, rng.uniform(30, 60), hits=rng.randint(1, 8))
            add(agent, new, rng.uniform(1, 20), hits=rng.randint(0, 3))
        for text in _filled(agent, seed):
            hits = int(rng.expovariate(0.3)) if rng.random() < 0.6 else 0
            add(agent, text, rng.triangular(0.1, 150, 10), hits=hits)
    items.sort(key=lambda item: item.fact_id or "")
    return items


def create_demo(store: MemoryStore, *, into_existing: bool = False) -> int:
    """Fill `store` with demo facts unless demo agents already exist. Returns facts added.

    Only a new or empty store, or one the demo created, is filled: the demo's fake facts
    must never mix into someone's real memory by accident. `into_existing` mixes them in
    on purpose (and leaves the store unmarked: it is not a demo store)."""
    existing = {a.agent_id for a in store.agents()}
    if existing & set(AGENTS):
        return 0
    if not into_existing and not store.is_demo():
        store.claim_for_demo()  # refuses a store holding anything else
    with provenance.writing_as(provenance.DEMO):
        return len(store.put_many(demo_facts(store.now()), check_pairs=True))
