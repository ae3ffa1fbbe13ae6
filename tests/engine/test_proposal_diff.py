"""The diff shown between propose and review: the model's answer as it stands, parsed by
review's own parser (so it can never disagree with review about what the answer says),
every id it named shown, none clamped yet."""

from __future__ import annotations

import json

import pytest

from graymatter_tui.consolidation.cycle import stage_state
from graymatter_tui.consolidation.diff import PROPOSED, build_proposal_diff
from graymatter_tui.consolidation.review import InvalidProposal
from graymatter_tui.core.model import BatchItem, CycleRecord, StageResult

BATCH = [
    BatchItem(id="01A0000000000000000000000A", text="fact one", weight=0.2),
    BatchItem(id="01A0000000000000000000000B", text="fact two", weight=0.3),
    BatchItem(id="01A0000000000000000000000C", text="fact three", weight=0.4),
]
RECORD = CycleRecord(cycle_id="01C0000000000000000000000A", agent_id="a", batch_facts=BATCH)
OUTSIDE = "01Z0000000000000000000000Z"


def proposal(consumes: list[str], summary: str = "merged", **extra: object) -> str:
    return json.dumps({"summary": summary, "consumes": consumes, **extra})


def test_every_named_id_is_shown_unclamped() -> None:
    a, b, _c = (item.id for item in BATCH)
    raw = proposal([a, OUTSIDE, b, a], contradictions=["one says 5, another 6"])
    diff = build_proposal_diff(RECORD, raw, structured=True)
    assert diff.outcome == PROPOSED
    assert (diff.consumed, diff.kept, diff.ignored, diff.guarded) == (2, 1, 2, 0)
    kinds = [(row.kind, row.id, row.note) for row in diff.rows]
    assert kinds == [
        ("consumed", a, "named for consumption"),
        ("consumed", b, "named for consumption"),
        ("summary", "", "proposed summary"),
        ("ignored", OUTSIDE, "not in the batch shown to the summariser"),
        ("ignored", a, "named twice"),
        ("contradiction", "", "contradiction noted by the summariser"),
        ("kept", BATCH[2].id, "not named"),
    ]
    assert diff.counts_line == (
        "as proposed, before review: 2 named for consumption · 1 not named · "
        "2 ids outside the batch"
    )


def test_a_fenced_answer_reads_as_review_reads_it() -> None:
    raw = "```json\n" + proposal([BATCH[0].id], summary="  padded  ") + "\n```"
    diff = build_proposal_diff(RECORD, raw, structured=True)
    assert [row.text for row in diff.rows if row.kind == "summary"] == ["padded"]


def test_a_plain_text_answer_names_the_whole_batch() -> None:
    diff = build_proposal_diff(RECORD, "All three facts, merged.", structured=False)
    assert diff.consumed == 3 and diff.kept == 0
    assert [row.text for row in diff.rows if row.kind == "summary"] == ["All three facts, merged."]


@pytest.mark.parametrize(
    ("raw", "structured", "words"),
    [
        ("not json", True, "not valid JSON"),
        (proposal([]), True, "'consumes' is empty"),
        ("   ", False, "empty summary"),
    ],
)
def test_an_unusable_answer_raises_reviews_reason(raw: str, structured: bool, words: str) -> None:
    with pytest.raises(InvalidProposal, match=words):
        build_proposal_diff(RECORD, raw, structured=structured)


@pytest.mark.parametrize(
    ("summary", "state"),
    [
        ("answer received (172 characters)", "done"),
        ("failed: connection refused", "failed"),
        ("unusable answer: the model's answer was cut off", "discarded"),
        ("discarded: a batch fact changed since the proposal", "discarded"),
        ("no proposal: nothing to merge", "skipped"),
        ("not run: proposal rejected", "not_run"),
        ("not run", "not_run"),
        ("would consume 2 of 32 batch facts", "done"),
    ],
)
def test_stage_state_reads_the_summary_the_cycle_wrote(summary: str, state: str) -> None:
    assert stage_state(StageResult(stage="apply", summary=summary)) == state
