"""The pair check by meaning: once the embedder has given facts vectors, the REAL bundled
model's cosines find duplicates and possible updates the words could not, on both
backends, held for a person and never asked twice."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from itertools import product

import numpy as np
import pytest

from graymatter_tui.core.conflicts import SAME_MEANING
from graymatter_tui.embedding.local import LocalEmbedder
from graymatter_tui.embedding.worker import Worker
from tests.support.backends import AnyStore

pytestmark = pytest.mark.usefixtures("clean_graymatter_env", "own_model_cache")
AGENT = "agent-a"
OLDER = "The kids' school starts at 8:00 a.m."
NEWER = "School for the kids now begins at 8:20."


def _pairs(store: AnyStore) -> list[tuple[str, str, str]]:
    return [(p.action, p.target, p.text) for p in store.proposals(AGENT) if p.is_pair]


def test_a_reworded_update_the_words_miss_is_held_once_the_facts_have_vectors(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    older = any_store.put(AGENT, OLDER)
    newer = any_store.put(AGENT, NEWER)
    any_store.put(AGENT, "The billing API is written in Go.")
    assert _pairs(any_store) == []  # the write path's words see two subjects
    result = Worker(any_store, embedder).drain()
    assert (result.stored, result.held) == (3, 1)
    [item] = [p for p in any_store.proposals(AGENT) if p.is_pair]
    assert (item.action, item.held_id, item.fact_id) == ("possible_update", older.id, newer.id)
    assert item.found_by_meaning and "8:20" in item.why and "8:00" in item.why
    assert "found by meaning after" in item.found_how()
    # Re-embedding everything (a switch of model) asks nothing again, decided or not.
    any_store.reject_proposal(item.id, "both hold: two schools")
    any_store.start_embedding("another-model")
    assert Worker(any_store, embedder).drain().held == 0
    assert len(_pairs(any_store)) == 1


def test_what_the_words_already_raised_is_not_raised_again(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    any_store.put(AGENT, "Deploy freeze for gateway starts on 2027-03-18.")
    written = any_store.remember(AGENT, "Deploy freeze for gateway starts on 2027-03-20.")
    assert [p.action for p in written.held] == ["possible_update"]
    assert Worker(any_store, embedder).drain().held == 0
    assert len(_pairs(any_store)) == 1


def test_one_fact_alike_two_others_raises_one_item_each_and_no_loop(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    three = "The payments service runs 3 replicas in production."
    reworded = "In production the payments service is deployed with 3 replicas."
    five = "The payments service runs five replicas in production."
    any_store.put(AGENT, three)
    any_store.put(AGENT, reworded)
    by_words = any_store.remember(AGENT, five).held  # "five" against "3": the words see it
    assert [p.action for p in by_words] == ["possible_update"]
    result = Worker(any_store, embedder, batch=2).drain()  # two batches: both sides met
    assert result.held == 2
    assert sorted(_pairs(any_store)) == [
        ("duplicate", three, reworded),
        ("possible_update", reworded, five),
        ("possible_update", three, five),
    ]
    assert Worker(any_store, embedder).drain().held == 0


def test_compatible_and_unrelated_facts_raise_nothing(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    for text in (
        "The TLS certificate for api.fernhill.com expires on 2027-05-19.",
        "The TLS certificate for api.fernhill.com is issued by Let's Encrypt.",
        "The known workaround for ticket SUP-8062 is clearing the browser cache.",
        "The known workaround for ticket SUP-1475 is clearing the browser cache.",
        "The user's daughter Emma is seven.",
        "The staging cluster runs in eu-west-1.",
    ):
        any_store.put(AGENT, text)
    assert Worker(any_store, embedder).drain().held == 0
    assert _pairs(any_store) == []


def test_the_pass_can_be_turned_off_and_other_agents_are_never_compared(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    any_store.put(AGENT, OLDER)
    any_store.put("agent-b", NEWER)
    assert Worker(any_store, embedder).drain().held == 0  # another agent's fact
    any_store.put(AGENT, NEWER)
    assert Worker(any_store, embedder, check_pairs=False).drain().held == 0
    assert _pairs(any_store) == []


def test_close_to_finds_every_fact_at_the_floor_and_none_below(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    texts = [OLDER, NEWER, "The billing API is written in Go.", "🙂🙂"]
    facts = [any_store.put(AGENT, text) for text in texts]
    Worker(any_store, embedder, check_pairs=False).drain()
    model = embedder.model
    queries = embedder.embed([OLDER, "What language is billing written in?"])
    found = any_store.facts_close_to(AGENT, model, queries, SAME_MEANING)
    assert found is not None and len(found) == 2
    vectors = embedder.embed(texts[:3])
    for query, close in zip(queries, found, strict=True):
        cosines = vectors @ query
        expected = {f.id for f, c in zip(facts, cosines, strict=False) if c >= SAME_MEANING}
        assert set(close) == expected
        for fact, cosine in zip(facts, cosines, strict=False):
            if fact.id in close:
                assert close[fact.id] == pytest.approx(float(cosine), abs=1e-5)
    assert facts[0].id in found[0] and facts[1].id in found[0]  # itself and the update
    assert any_store.facts_close_to(AGENT, "another-model", queries, 0.0) is None
    wrong = np.zeros((1, 7), dtype=np.float32)
    assert any_store.facts_close_to(AGENT, model, wrong, 0.0) is None  # wrong dimension


def test_embed_reports_the_items_it_held(
    run_cli: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    run = run_cli
    run("remember", AGENT, OLDER)
    run("remember", AGENT, NEWER)
    done = run("embed", "--json", env={"GRAYMATTER_EMBED": "local"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["held_for_review"] == 1
    listed = run("review", "list")
    assert "possible_update" in listed.stdout and "8:20" in listed.stdout


# ---- holding many at once (the model's cosines given by hand) --------------------------
SCHOOL = "The kids' school in {} starts at 8:00 a.m."
SCHOOL_NOW = "School for the kids of {} now begins at 8:20."
# Made-up town names ("Balara", "Dimora"): for the words, each its own subject.
TOWNS = [c + v + d + w + "ra" for c, v, d, w in product("BDKLMPRT", "aeiou", "lmnrst", "ao")]


def _alike(store: AnyStore, towns: list[str]) -> list[tuple[str, dict[str, float]]]:
    """For each town an older fact and a reworded update the words miss, and the
    pass's finding that each newer one is close to its older one."""
    close = []
    for town in towns:
        older = store.put(AGENT, SCHOOL.format(town))
        newer = store.put(AGENT, SCHOOL_NOW.format(town))
        close.append((newer.id, {older.id: 0.95}))
    return close


def test_many_pairs_held_at_once_are_each_an_item_under_one_activity_entry(
    any_store: AnyStore,
) -> None:
    close = _alike(any_store, TOWNS[:4])
    assert _pairs(any_store) == []  # the words see two subjects in each pair
    before = any_store.last_activity()
    held = any_store.hold_close_pairs(AGENT, close)
    assert [p.action for p in held] == ["possible_update"] * 4
    assert len({p.id for p in held}) == 4
    assert sorted(p.fact_id for p in held) == sorted(fact_id for fact_id, _ in close)
    assert any_store.pending_count() == 4
    [entry] = any_store.activity(after=before)
    assert entry.text == "held 4 duplicates or possible updates found by meaning for review"
    assert any_store.hold_close_pairs(AGENT, close) == []  # each asked once
    assert any_store.pending_count() == 4


def test_a_pass_that_holds_one_pair_says_which_in_the_activity_feed(
    any_store: AnyStore,
) -> None:
    first, second = _alike(any_store, TOWNS[:2])
    [asked] = any_store.hold_close_pairs(AGENT, [first])
    before = any_store.last_activity()
    [held] = any_store.hold_close_pairs(AGENT, [first, second])
    assert held.fact_id == second[0] and held.id != asked.id
    [entry] = any_store.activity(after=before)
    assert entry.fact_id == second[0] and held.id in entry.text
    assert any_store.pending_count() == 2
