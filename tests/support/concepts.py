"""A small fixed concept table: the "model" behind the scripted embedding server.

A text's vector is the normalised sum of one-hot vectors, one per concept any of its
words belongs to (words are lower-cased and stripped of punctuation; no stemming, so the
table lists the forms it wants to match). Two texts are similar exactly when they share
concepts, so a test of paraphrase recall checks what the table says and nothing more:
"which billing vendor do we use?" meets "Payments go through Polar" because the table puts
billing/payments in one concept, not because a model guessed. A text with no concept word
gets the zero vector's stand-in: a unit vector on a dimension no concept uses."""

from __future__ import annotations

import functools
import math
import re

# concept name -> the words that mean it. Extend by adding words or concepts at the end
# (a concept's dimension is its position, so existing vectors stay what they were).
CONCEPTS: dict[str, frozenset[str]] = {
    "money": frozenset("payment payments billing invoice invoices charge charges pay paid".split()),
    "vendor": frozenset("provider providers vendor vendors supplier suppliers".split()),
    "deploy": frozenset(
        "deploy deploys deployment release releases ship ships rollout shipping".split()
    ),
    "outage": frozenset("outage outages incident incidents downtime failure failures".split()),
    "secret": frozenset("password passwords secret secrets credential credentials key".split()),
    "schedule": frozenset("friday fridays weekend weekends monday schedule calendar".split()),
    # The retrieval gate's paraphrases (benchmarks/retrieval_quality/gate.py): each fact
    # and its question use different words of one concept and share no stemmed word.
    "medic": frozenset("physician physicians doctor doctors medic".split()),
    "car": frozenset("automobile automobiles car cars vehicle vehicles".split()),
    "lawyer": frozenset("attorney attorneys lawyer lawyers counsel".split()),
    "wage": frozenset("wage wages salary salaries compensation".split()),
    "canteen": frozenset("cafeteria canteen canteens refectory".split()),
    "boat": frozenset("vessel vessels boat boats yacht".split()),
    "picture": frozenset("photograph photographs photo photos picture pictures".split()),
    "begin": frozenset("commences commence begins begin start starts kickoff".split()),
    "broken": frozenset("defective faulty broken malfunctioning".split()),
    "buy": frozenset("procurement procure buy buying purchase".split()),
    "trip": frozenset("journey journeys trip trips travel voyage".split()),
    "quick": frozenset("rapid quick quickly fast speedy".split()),
    # The rest of the gate's words, so its exact and inflected questions mean to the table
    # what they mean to a reader (a text with no concept word would be the stand-in,
    # equal to every other such text: a model that cannot tell "vault code" from
    # "warehouse staff" would make the gate measure the table, not recall).
    "vault": frozenset("vault vaults safe strongroom".split()),
    "code": frozenset("code codes cipher passcode".split()),
    "project": frozenset("project projects initiative".split()),
    "warehouse": frozenset("warehouse warehouses depot storehouse".split()),
    "ticket": frozenset("ticket tickets escalation escalations".split()),
    "customer": frozenset("customer customers client clients".split()),
    "account": frozenset("account accounts reference references".split()),
}
_WORD = re.compile(r"[a-z0-9]+")


def concept_dimension(count: int = len(CONCEPTS)) -> int:
    """The smallest dimension that holds every concept plus the no-concept axis."""
    return count + 1


def concept_vector(text: str, dimension: int = 768) -> list[float]:
    """`text`'s vector in `dimension` components (padded with zeros; must be at least
    `concept_dimension()`)."""
    if dimension < concept_dimension():
        raise ValueError(f"dimension {dimension} cannot hold {len(CONCEPTS)} concepts")
    return list(_concept_vector(text, dimension))


@functools.lru_cache(maxsize=65536)  # the gate asks for the same few hundred texts often
def _concept_vector(text: str, dimension: int) -> tuple[float, ...]:
    words = set(_WORD.findall(text.lower()))
    vector = [0.0] * dimension
    for position, members in enumerate(CONCEPTS.values()):
        if words & members:
            vector[position] = 1.0
    if not any(vector):
        vector[len(CONCEPTS)] = 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return tuple(x / norm for x in vector)
