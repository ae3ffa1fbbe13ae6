"""Review: pure code turning an untrusted summariser answer into an apply plan.

Fence stripping, every way a proposal can be malformed, clamping `consumes` to the batch
(with a distinct reason for each kind of ignored id, looked up in a real store), the
Anthropic plain-text path, and a hypothesis property over arbitrary answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.review import (
    InvalidProposal,
    Review,
    parse_proposal,
    plan,
    strip_code_fence,
)
from graymatter_tui.consolidation.review import review as review_answer
from graymatter_tui.core.model import BatchItem, Fact, Proposal
from tests.engine.helpers import AGENT, NOW

UNKNOWN_ID = "01JZZZZZZZZZZZZZZZZZZZZZZZ"
KIB64 = 64 * 1024


@dataclass
class World:
    """A real store holding the facts a proposal may name."""

    store: LmdbStore
    batch: list[BatchItem]
    outside: Fact  # live fact of the agent, not in the batch
    pinned: Fact
    tombstone: Fact
    foreign: Fact  # another agent's live fact

    @property
    def ids(self) -> list[str]:
        return [item.id for item in self.batch]

    def review(self, raw: str, *, guard_mode: str = "off") -> Review:
        return review_answer(
            raw,
            self.batch,
            structured=True,
            agent=AGENT,
            guard_mode=guard_mode,
            lookup=self.store.find,
        )

    def propose(self, consumes: list[str], summary: str = "merged summary") -> Review:
        return self.review(json.dumps({"summary": summary, "consumes": consumes}))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    path: Path = tmp_path_factory.mktemp("review") / "s"
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    try:
        facts = [store.put(AGENT, f"batch fact number {word}") for word in ("one", "two", "six")]
        facts.append(store.put(AGENT, "ticket SUP-1234 was escalated to Maria Lopez"))
        outside = store.put(AGENT, "a live fact that was not shown")
        pinned = store.put(AGENT, "a pinned fact", pinned=True)
        tombstone = store.retire(store.put(AGENT, "a retired fact").id)
        foreign = store.put("agent-b", "another agent's fact")
        batch = [BatchItem(id=f.id, text=f.text, weight=0.5) for f in facts]
        yield World(store, batch, outside, pinned, tombstone, foreign)
    finally:
        store.close()


# ---------------------------------------------------------------- fence stripping


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('```JSON\n{"a": 1}\n```', '{"a": 1}'),
        ('```\n{"a": 1}\n```', '{"a": 1}'),
        ('```json {"a": 1} ```', '{"a": 1}'),
        ('```json\n```json\n{"a": 1}\n```\n```', '{"a": 1}'),
        ('```\n```\n{"a": 1}\n```\n```', '{"a": 1}'),
        ('  \n\t```json\n{"a": 1}\n```  \n\n', '{"a": 1}'),
        ('   {"a": 1}   \n', '{"a": 1}'),
        ('{"a": 1}', '{"a": 1}'),
        ('```json\n{"a": 1}', '{"a": 1}'),  # the closing fence was cut off
        ('{"a": 1}\n```', '{"a": 1}'),
        ("```", ""),
        ("```json\n```", ""),
        ("", ""),
        ("   \n ", ""),
    ],
)
def test_strip_code_fence(raw: str, expected: str) -> None:
    assert strip_code_fence(raw) == expected


def test_fences_inside_the_summary_are_kept() -> None:
    raw = '```json\n{"summary": "run ```make``` first", "consumes": ["X"]}\n```'
    assert parse_proposal(raw).summary == "run ```make``` first"


def test_fenced_proposal_parses() -> None:
    raw = '\n```json\n{"summary": " kept ", "consumes": ["A", "B"], "contradictions": ["c"]}\n```\n'
    proposal = parse_proposal(raw)
    assert proposal == Proposal(summary="kept", consumes=["A", "B"], contradictions=["c"])


# ---------------------------------------------------------------- malformed answers


def _reason(raw: str) -> str:
    with pytest.raises(InvalidProposal) as caught:
        parse_proposal(raw)
    message = str(caught.value)
    assert message  # every rejection says why
    return message


@pytest.mark.parametrize(
    "raw",
    [
        "Here is a summary of the facts: they are about the garden.",
        '{"summary": "x", "consumes": ["a"]',
        '{"summary": "x", "consumes": ["a"]} and more',
        "{'summary': 'x', 'consumes': ['a']}",
        '{"summary": "x", "consumes": ["a"],}',
        "NaN",
        "```json\n{summary: x}\n```",
    ],
)
def test_malformed_json_is_invalid(raw: str) -> None:
    assert "not valid JSON" in _reason(raw)


@pytest.mark.parametrize("raw", ["", "   ", "```json\n```", "``` ```"])
def test_empty_response_is_invalid(raw: str) -> None:
    assert "empty" in _reason(raw)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("[1, 2]", "list"),
        ('"a string"', "str"),
        ("42", "int"),
        ("4.5", "float"),
        ("null", "None"),
        ("true", "bool"),
    ],
)
def test_non_object_json_is_invalid(raw: str, kind: str) -> None:
    reason = _reason(raw)
    assert "not an object" in reason
    assert kind in reason


@pytest.mark.parametrize(
    ("proposal", "field"),
    [
        ({"consumes": ["a"]}, "summary"),
        ({"summary": None, "consumes": ["a"]}, "summary"),
        ({"summary": 3, "consumes": ["a"]}, "summary"),
        ({"summary": ["x"], "consumes": ["a"]}, "summary"),
        ({"summary": {"text": "x"}, "consumes": ["a"]}, "summary"),
        ({"summary": "x"}, "consumes"),
        ({"summary": "x", "consumes": None}, "consumes"),
        ({"summary": "x", "consumes": "01JC0000000000000000000001"}, "consumes"),
        ({"summary": "x", "consumes": {"a": 1}}, "consumes"),
        ({"summary": "x", "consumes": [1, 2]}, "consumes"),
        ({"summary": "x", "consumes": ["a", None]}, "consumes"),
        ({"summary": "x", "consumes": ["a", ["b"]]}, "consumes"),
        ({"summary": "x", "consumes": ["a"], "contradictions": "none"}, "contradictions"),
        ({"summary": "x", "consumes": ["a"], "contradictions": [1]}, "contradictions"),
        ({"summary": "x", "consumes": ["a"], "contradictions": {"a": "b"}}, "contradictions"),
        ({"summary": "x", "consumes": ["a"], "contradictions": True}, "contradictions"),
    ],
)
def test_wrong_types_are_invalid(proposal: dict[str, Any], field: str) -> None:
    assert field in _reason(json.dumps(proposal))


@pytest.mark.parametrize("summary", ["", " ", "\n\t  \n", "\u3000"])
def test_empty_summary_is_invalid(summary: str) -> None:
    assert "summary is empty" in _reason(json.dumps({"summary": summary, "consumes": ["a"]}))


def test_empty_consumes_is_invalid() -> None:
    assert "'consumes' is empty" in _reason(json.dumps({"summary": "x", "consumes": []}))


def test_missing_or_null_contradictions_mean_none() -> None:
    for extra in ({}, {"contradictions": None}, {"contradictions": []}):
        proposal = parse_proposal(json.dumps({"summary": "s", "consumes": ["a"], **extra}))
        assert proposal.contradictions == []


def test_summary_is_stripped_and_unknown_keys_ignored() -> None:
    raw = json.dumps({"summary": "  s  \n", "consumes": ["a"], "confidence": 0.3})
    assert parse_proposal(raw) == Proposal(summary="s", consumes=["a"])


@pytest.mark.parametrize(
    "summary",
    ["x" * (KIB64 + 1), "é" * (KIB64 // 2 + 1), "字" * (KIB64 // 3 + 1)],
    ids=["ascii", "two-byte", "three-byte"],
)
def test_summary_over_64_kib_is_discarded(world: World, summary: str) -> None:
    review = world.propose(world.ids, summary=summary)
    assert review.proposal is None
    assert not review.plan.applicable
    assert review.plan.consume == []
    assert "64 KiB" in review.plan.discard_reason


def test_summary_of_exactly_64_kib_is_accepted(world: World) -> None:
    review = world.propose(world.ids[:1], summary="y" * KIB64)
    assert review.plan.applicable
    assert review.plan.consume == world.ids[:1]


@pytest.mark.parametrize(
    "raw",
    ["prose", "[]", json.dumps({"summary": "", "consumes": ["x"]}), json.dumps({"summary": "s"})],
)
def test_invalid_answers_become_a_discarded_plan(world: World, raw: str) -> None:
    review = world.review(raw)
    assert review.proposal is None
    assert review.plan.consume == []
    assert review.plan.discard_reason
    assert not review.plan.applicable


# ---------------------------------------------------------------- clamping


def test_each_ignored_id_has_its_reason(world: World) -> None:
    b = world.ids
    review = world.propose(
        [
            b[0],
            UNKNOWN_ID,
            world.pinned.id,
            world.tombstone.id,
            world.foreign.id,
            world.outside.id,
            b[1],
            b[0],
            b[2],
        ]
    )
    plan_ = review.plan
    assert plan_.consume == [b[0], b[1], b[2]]
    assert plan_.applicable
    reasons = [(i.id, i.reason) for i in plan_.ignored]
    assert [fid for fid, _ in reasons] == [
        UNKNOWN_ID,
        world.pinned.id,
        world.tombstone.id,
        world.foreign.id,
        world.outside.id,
        b[0],
    ]
    texts = [reason for _, reason in reasons]
    assert texts[0].startswith("unknown id")
    assert texts[1].startswith("pinned")
    assert texts[2] == "already a tombstone"
    assert texts[3] == "belongs to another agent"
    assert texts[4].startswith("not in the batch")
    assert texts[5] == "duplicate"
    assert len(set(texts)) == len(texts)  # six distinct reasons


def test_consume_keeps_the_proposal_order(world: World) -> None:
    b = world.ids
    review = world.propose([b[2], b[0], b[1]])
    assert review.plan.consume == [b[2], b[0], b[1]]
    assert review.plan.ignored == []


def test_duplicates_consume_once(world: World) -> None:
    b = world.ids
    review = world.propose([b[1], b[1], b[1], b[0], b[1]])
    assert review.plan.consume == [b[1], b[0]]
    assert [i.reason for i in review.plan.ignored] == ["duplicate"] * 3


def test_case_variant_of_a_batch_id_is_not_that_fact(world: World) -> None:
    review = world.propose([world.ids[0].lower()])
    assert review.plan.consume == []
    assert review.plan.ignored[0].reason.startswith("unknown id")


def test_overlong_id_is_reported_truncated(world: World) -> None:
    long_id = "Z" * 500
    review = world.propose([long_id, world.ids[0]])
    assert review.plan.consume == [world.ids[0]]
    assert review.plan.ignored[0].id == long_id[:64]
    assert review.plan.ignored[0].reason.startswith("unknown id")


def test_nothing_left_after_clamping_is_discarded(world: World) -> None:
    review = world.propose([UNKNOWN_ID, world.pinned.id, world.tombstone.id, world.foreign.id])
    assert review.proposal is not None
    assert review.plan.consume == []
    assert review.plan.discard_reason.startswith("nothing to consume")
    assert not review.plan.applicable
    assert len(review.plan.ignored) == 4


def test_guard_keeping_every_fact_discards(world: World) -> None:
    sup = world.ids[3]  # "ticket SUP-1234 was escalated to Maria Lopez"
    review = world.review(
        json.dumps({"summary": "a ticket was escalated", "consumes": [sup]}), guard_mode="keys"
    )
    assert review.plan.consume == []
    assert "coverage guard" in review.plan.discard_reason
    assert not review.plan.applicable
    [verdict] = review.plan.verdicts
    assert verdict.id == sup
    assert not verdict.consumed
    assert set(verdict.missing) == {"SUP-1234", "Maria Lopez"}


def test_guard_keeps_only_the_facts_that_lost_details(world: World) -> None:
    b = world.ids
    review = world.review(
        json.dumps({"summary": "batch facts number one and two", "consumes": [b[0], b[3], b[1]]}),
        guard_mode="keys",
    )
    assert review.plan.consume == [b[0], b[1]]
    assert review.plan.applicable
    assert [(v.id, v.consumed) for v in review.plan.verdicts] == [
        (b[0], True),
        (b[3], False),
        (b[1], True),
    ]


def test_plan_is_pure(world: World) -> None:
    proposal = Proposal(summary="s", consumes=[world.ids[0], UNKNOWN_ID])
    before = world.store.generation()
    first = plan(proposal, world.batch, agent=AGENT, guard_mode="keys", lookup=world.store.find)
    second = plan(proposal, world.batch, agent=AGENT, guard_mode="keys", lookup=world.store.find)
    assert first == second
    assert world.store.generation() == before


# ---------------------------------------------------------------- the plain-text path


def test_review_text_consumes_the_whole_batch(world: World) -> None:
    summary = "  Batch facts one, two and six; ticket SUP-1234 went to Maria Lopez.  \n"
    review = review_answer(
        summary,
        world.batch,
        structured=False,
        agent=AGENT,
        guard_mode="off",
        lookup=world.store.find,
    )
    assert review.proposal is not None
    assert review.proposal.consumes == world.ids
    assert review.plan.consume == world.ids
    assert review.plan.summary == summary.strip()
    assert review.plan.applicable


def test_review_text_applies_the_guard(world: World) -> None:
    review = review_answer(
        "batch facts one two six",
        world.batch,
        structured=False,
        agent=AGENT,
        guard_mode="keys",
        lookup=world.store.find,
    )
    assert review.plan.consume == world.ids[:3]
    kept = [v for v in review.plan.verdicts if not v.consumed]
    assert [v.id for v in kept] == [world.ids[3]]


@pytest.mark.parametrize("raw", ["", "   ", "\n\n\t"])
def test_review_text_empty_is_discarded(world: World, raw: str) -> None:
    review = review_answer(
        raw, world.batch, structured=False, agent=AGENT, guard_mode="off", lookup=world.store.find
    )
    assert review.proposal is None
    assert review.plan.consume == []
    assert "empty" in review.plan.discard_reason
    assert not review.plan.applicable


def test_review_text_oversized_is_discarded(world: World) -> None:
    review = review_answer(
        "z" * (KIB64 + 10),
        world.batch,
        structured=False,
        agent=AGENT,
        guard_mode="off",
        lookup=world.store.find,
    )
    assert not review.plan.applicable
    assert "64 KiB" in review.plan.discard_reason


# ---------------------------------------------------------------- regressions (bugs fixed)


def test_empty_string_id_is_ignored_not_raised(world: World) -> None:
    review = world.propose(["", world.ids[0]])
    assert review.plan.consume == [world.ids[0]]
    assert review.plan.ignored[0].reason.startswith("unknown id")


def test_deeply_nested_json_is_discarded(world: World) -> None:
    review = world.review("[" * 1000 + "]" * 1000)
    assert not review.plan.applicable
    assert review.plan.discard_reason


def test_lone_surrogate_in_answer_is_discarded(world: World) -> None:
    raw = json.dumps({"summary": "bad @@ text", "consumes": world.ids[:1]})
    raw = raw.replace("@@", "\ud800")  # a lone surrogate, as a custom summariser may return
    review = world.review(raw)
    assert not review.plan.applicable


# ---------------------------------------------------------------- property


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def answers(draw: st.DrawFn, ids: list[str]) -> str:
    """Arbitrary text, arbitrary JSON, proposal-shaped JSON with arbitrary contents, or a
    well-formed proposal naming batch ids, strangers and junk."""
    kind = draw(st.sampled_from(["text", "json", "shaped", "valid", "valid"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "json":
        return json.dumps(draw(JSON_VALUES))
    an_id = st.one_of(st.sampled_from(ids), st.sampled_from(ids), st.text(max_size=80))
    good_summary = st.sampled_from(
        ["merged", "Batch fact number one, two and six; SUP-1234 went to Maria Lopez."]
    )
    obj: dict[str, Any]
    if kind == "valid":
        obj = {
            "summary": draw(st.one_of(good_summary, st.text(min_size=1, max_size=120))),
            "consumes": draw(st.lists(an_id, min_size=1, max_size=12)),
        }
    else:
        obj = {
            "summary": draw(st.one_of(st.text(max_size=120), JSON_VALUES)),
            "consumes": draw(
                st.one_of(st.lists(st.one_of(an_id, JSON_SCALARS), max_size=12), JSON_VALUES)
            ),
        }
    if draw(st.booleans()):
        obj["contradictions"] = draw(st.one_of(st.lists(st.text(max_size=20)), JSON_VALUES))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    wrap = draw(st.sampled_from(["{}", "```json\n{}\n```", "```\n{}\n```", "  {}  \n", "```{}"]))
    return wrap.replace("{}", text, 1)


def _ids_of(world: World) -> list[str]:
    return [
        *world.ids,
        world.outside.id,
        world.pinned.id,
        world.tombstone.id,
        world.foreign.id,
        UNKNOWN_ID,
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), guard_mode=st.sampled_from(["off", "keys", "strict"]))
def test_review_json_never_raises_and_stays_in_the_batch(
    world: World, data: st.DataObject, guard_mode: str
) -> None:
    raw = data.draw(answers(_ids_of(world)))
    _check_review(world, world.review(raw, guard_mode=guard_mode))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), guard_mode=st.sampled_from(["off", "keys", "strict"]))
def test_review_json_with_a_pure_lookup_never_raises(
    world: World, data: st.DataObject, guard_mode: str
) -> None:
    known = {f.id: f for f in world.store.all_facts()}
    raw = data.draw(answers(_ids_of(world)))
    review = review_answer(
        raw, world.batch, structured=True, agent=AGENT, guard_mode=guard_mode, lookup=known.get
    )
    _check_review(world, review)


def _check_review(world: World, review: Review) -> None:
    plan_ = review.plan
    event("applicable" if plan_.applicable else "discarded")
    batch = set(world.ids)
    assert set(plan_.consume) <= batch
    assert len(plan_.consume) == len(set(plan_.consume))
    assert plan_.applicable == (not plan_.discard_reason and bool(plan_.consume))
    if review.proposal is None:
        assert plan_.consume == []
        assert plan_.discard_reason
    else:
        # every proposed id is accounted for: ignored, or judged by the guard
        assert len(review.proposal.consumes) == len(plan_.ignored) + len(plan_.verdicts)
        assert [v.id for v in plan_.verdicts if v.consumed] == plan_.consume
        assert review.proposal.summary == review.proposal.summary.strip()
        assert review.proposal.summary


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.text(max_size=300))
def test_review_text_never_raises(world: World, raw: str) -> None:
    review = review_answer(
        raw, world.batch, structured=False, agent=AGENT, guard_mode="keys", lookup=world.store.find
    )
    assert review.plan.consume == [v.id for v in review.plan.verdicts if v.consumed]
    assert set(review.plan.consume) <= set(world.ids)
    if not raw.strip():
        assert not review.plan.applicable
