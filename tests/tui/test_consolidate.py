"""The Consolidate tab: stepping a cycle stage by stage, reading the proposal as a diff,
applying, rejecting and proposing again, with the offline `local` summariser and with the
scripted Ollama on a loopback socket (a good answer, and a hang cancelled with esc)."""

from __future__ import annotations

import re

from textual.widgets import TabbedContent

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import STAGE_TITLES, STAGES
from tests.support.ollama_fake import RecordedRequest, Reply
from tests.support.over_socket import OllamaOverSocket
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    notifications,
    running,
    screen_lines,
    screen_text,
    settle,
    static_text,
    wait_until,
)

PROMPT_ROW = re.compile(r"^- ([0-9A-Z]{26}): (.*)$", re.MULTILINE)
MERGED = "Staging DB: port 5432 (listens there); reach it over the VPN."


def merge_the_staging_pair(request: RecordedRequest) -> Reply:
    """The scripted Ollama's answer: merge the two staging facts, found by their prompt rows."""
    rows = dict((text, fact_id) for fact_id, text in PROMPT_ROW.findall(request.prompt))
    return Reply.proposal(MERGED, [rows[STAGING_A], rows[STAGING_B]])


def done_stages(stepper: str) -> list[str]:
    """Titles of the stages the stepper marks with ✓, in order."""
    out = []
    for line in stepper.splitlines():
        for stage, title in STAGE_TITLES.items():
            if line.startswith(f"  ✓ {title} "):
                out.append(stage)
    return out


def curation(store: LmdbStore) -> dict[str, tuple[str, str, bool]]:
    """Text, superseded_by and pin of every fact: what only curation or apply changes."""
    return {f.id: (f.text, f.superseded_by, f.pinned) for f in store.all_facts()}


def ids_of(store: LmdbStore, *texts: str) -> list[str]:
    by_text = {f.text: f.id for f in store.list_facts(OPS)}
    return [by_text[t] for t in texts]


async def step(pilot: object, times: int = 1) -> None:
    for _ in range(times):
        await pilot.press("n")  # type: ignore[attr-defined]
        await settle(pilot)  # type: ignore[arg-type]


async def test_local_step_through_then_apply(demo_store: LmdbStore) -> None:
    staging = ids_of(demo_store, STAGING_A, STAGING_B)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("3")
        await pilot.pause()
        assert "No cycle yet." in static_text(app, "#stepper")
        assert "Summariser local" in static_text(app, "#summariser-line")
        for count, stage in enumerate(["decay", "select", "propose", "review"], start=1):
            await step(pilot)
            stepper = static_text(app, "#stepper")
            assert done_stages(stepper) == list(STAGES[:count]), stage
            assert f"▶ {STAGE_TITLES[STAGES[count]]}" in stepper
        stepper = static_text(app, "#stepper")
        assert "would consume 2 of 32 batch facts" in stepper
        assert "a apply · r reject · p propose again" in stepper

        diff = static_text(app, "#diff-body")
        assert f" − {STAGING_A}\n" in diff
        assert f" − {STAGING_B}\n" in diff
        assert f" + {STAGING_B}\n" in diff  # the merge keeps every distinct sentence
        assert "2 to consume · 30 kept" in diff
        assert diff.index(f" − {STAGING_A}") < diff.index(" + ")  # what goes, then what replaces
        shown = screen_text(app)
        assert f"− {STAGING_A}" in shown
        assert f"+ {STAGING_B}" in shown
        assert demo_store.counters().consolidations == 0  # nothing applied yet

        await pilot.press("a")
        await settle(pilot)
        stepper = static_text(app, "#stepper")
        assert done_stages(stepper) == list(STAGES)
        assert "Outcome: applied" in stepper

    record = demo_store.records()[0]
    assert record.outcome == "applied" and record.agent_id == OPS
    assert sorted(record.consumed) == sorted(staging)
    summary = demo_store.require(record.summary_id)
    assert summary.is_live and summary.text == STAGING_B and summary.cycle_id == record.cycle_id
    for fact_id in staging:
        assert demo_store.require(fact_id).superseded_by == summary.id
    assert sorted(demo_store.fact_ids(OPS, "tombstones")) == sorted(staging)
    assert demo_store.receipts(summary.id) == record.consumed
    counters = demo_store.counters()
    assert (counters.consolidations, counters.facts_consolidated, counters.cycles) == (1, 2, 1)


async def test_local_propose_again_then_reject_changes_nothing(demo_store: LmdbStore) -> None:
    before = curation(demo_store)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("3")
        await step(pilot, 4)
        pane = app.query_one("#consolidate-pane")
        assert pane.cycle.at_review  # type: ignore[attr-defined]
        first_diff = static_text(app, "#diff-body")

        # p: back to propose, asked again, and through review once more
        await pilot.press("p")
        await settle(pilot)
        stepper = static_text(app, "#stepper")
        assert done_stages(stepper) == ["decay", "select", "propose", "review"]
        assert [s.stage for s in pane.cycle.record.stages] == list(STAGES[:4])  # type: ignore[attr-defined]
        assert pane.cycle.at_review  # type: ignore[attr-defined]
        assert static_text(app, "#diff-body") == first_diff

        await pilot.press("r")
        await settle(pilot)
        stepper = static_text(app, "#stepper")
        assert "Outcome: discarded — rejected by the user at review" in stepper
        assert "not run: proposal rejected" in stepper
        assert any("nothing applied" in message for _, message in notifications(app))

        # p after the cycle has ended is refused with a warning
        await pilot.press("p")
        await settle(pilot)
        assert any(
            severity == "warning" and "only after propose and before apply" in message
            for severity, message in notifications(app)
        )

    assert curation(demo_store) == before  # same facts, same texts, nothing superseded
    counters = demo_store.counters()
    assert (counters.consolidations, counters.facts_consolidated, counters.reverts) == (0, 0, 0)
    assert counters.cycles == 1  # the rejected cycle is journalled
    (record,) = demo_store.records()
    assert record.outcome == "discarded"
    assert "rejected" in record.reason
    assert record.summary_id == "" and record.consumed == []


async def test_ollama_step_through_applies_the_servers_proposal(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    staging = ids_of(demo_store, STAGING_A, STAGING_B)
    ollama.set_responder(merge_the_staging_pair)
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=5.0)
    async with running(app) as pilot:
        await pilot.press("3")
        await wait_until(
            pilot,
            lambda: "✓ Ollama 0.12.0" in static_text(app, "#summariser-line"),
            what="the reachability check",
        )
        await step(pilot, 2)
        assert ollama.generate_requests == []
        await step(pilot)  # propose: one real HTTP call
        (request,) = ollama.generate_requests
        assert request.json["model"] == "llama3.2"
        batch = [fact_id for fact_id, _ in PROMPT_ROW.findall(request.prompt)]
        assert len(batch) == 32 and set(staging) <= set(batch)
        await step(pilot)  # review
        assert "would consume 2 of 32 batch facts" in static_text(app, "#stepper")
        diff = static_text(app, "#diff-body")
        assert f" − {STAGING_A}\n" in diff and f" − {STAGING_B}\n" in diff
        assert f" + {MERGED}\n" in diff
        await pilot.press("a")
        await settle(pilot)
        assert "Outcome: applied" in static_text(app, "#stepper")
        assert len(ollama.generate_requests) == 1

    record = demo_store.records()[0]
    assert record.outcome == "applied" and record.summariser == "ollama"
    assert sorted(record.consumed) == sorted(staging)
    assert demo_store.require(record.summary_id).text == MERGED
    assert all(demo_store.require(i).superseded_by == record.summary_id for i in staging)


async def test_ollama_hang_is_cancelled_with_escape(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    ollama.script(Reply.hang(30))
    before = curation(demo_store)
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=20.0)
    async with running(app) as pilot:
        await pilot.press("3")
        await step(pilot, 2)
        pane = app.query_one("#consolidate-pane")
        await pilot.press("n")  # propose: the server reads the request and says nothing
        await wait_until(
            pilot,
            lambda: "waiting for ollama" in static_text(app, "#call-status"),
            what="the call status",
        )
        assert "(esc cancels)" in static_text(app, "#call-status")
        assert len(ollama.generate_requests) == 1
        assert pane.busy  # type: ignore[attr-defined]

        await pilot.press("escape")
        await wait_until(pilot, lambda: not pane.busy, what="the cancel")  # type: ignore[attr-defined]
        await settle(pilot)
        assert static_text(app, "#call-status") == ""
        stepper = static_text(app, "#stepper")
        assert "Model call cancelled" in stepper
        assert done_stages(stepper) == ["decay", "select"]
        assert "▶ Propose" in stepper
        assert pane.cycle.next_stage == "propose"  # type: ignore[attr-defined]

        # the UI still answers
        await pilot.press("1")
        await pilot.pause()
        assert app.query_one("#tabs", TabbedContent).active == "facts"
        await pilot.press("4")
        await pilot.pause()
        assert app.query_one("#tabs", TabbedContent).active == "journal"
        # Decay has written, so the cycle is journaled already, as unfinished.
        assert "1 record" in screen_text(app)
        assert "unfinished" in screen_text(app)
        await pilot.press("q")
        await settle(pilot)

    assert curation(demo_store) == before  # no new facts, nothing superseded
    (record,) = demo_store.records()  # and leaving gives the record its end
    assert (record.outcome, record.reason) == (
        "skipped",
        "left when the TUI was closed before propose",
    )
    assert demo_store.counters().consolidations == 0


async def test_m_switches_the_summariser_for_the_next_cycle(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("3", "m")
        await pilot.pause()
        assert "local — offline near-duplicate merge" in screen_text(app)
        await pilot.press("end", "enter")  # none — decay and prune only
        await settle(pilot)
        assert app.settings.summariser == "none"
        assert "Summariser none  ✓ nothing to contact" in static_text(app, "#summariser-line")
        await step(pilot, 2)
        stepper = static_text(app, "#stepper")
        assert "· none" in stepper.splitlines()[0]
        assert "no summariser: nothing to summarise" in stepper


async def test_status_follows_the_summariser_chosen_with_m(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("5")
        await settle(pilot)
        assert "summariser  local — reachable" in screen_text(app)
        await pilot.press("3", "m")
        await pilot.pause()
        await pilot.press("end", "enter")
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        line = next(line for line in screen_lines(app) if "summariser  " in line)
        assert "summariser  none" in line
        assert "near-duplicate merge" not in line


async def test_long_diff_rows_wrap_under_their_text_and_rewrap_on_resize(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app, size=(64, 34)) as pilot:
        await pilot.press("3")
        await step(pilot, 4)  # decay, select, propose, review
        assert "would consume 2 of 32" in static_text(app, "#stepper")

        def rows_of(text: str) -> list[tuple[int, str]]:
            """The first two screen lines of the diff row for `text`, with its text column."""
            lines = screen_lines(app)
            head = text[: text.index("Use") + 3]  # STAGING_A is a prefix of STAGING_B
            first = next(i for i, line in enumerate(lines) if f"− {head}" in line)
            return [(lines[first].index(head), lines[first]), (0, lines[first + 1])]

        (column, first), (_, second) = rows_of(STAGING_B)
        assert STAGING_B not in first  # too long for 64 columns
        # the line ends in the box's border, and may hold the scrollbar's thumb before it
        rest = STAGING_B[len(first[column:].rstrip(" │▁▂▃▄▅▆▇█")) :].strip()
        assert second[column:].startswith(rest.split()[0])  # hangs under the text, not the −
        assert second[:column].strip(" │") == ""
        assert "2 to consume · 30 kept" in static_text(app, "#diff-body")
        assert static_text(app, "#diff-body").startswith(" 2 to consume")  # counts first

        await pilot.resize_terminal(120, 34)
        await settle(pilot)
        assert any(f"− {STAGING_B}" in line for line in screen_lines(app))


async def test_the_proposal_is_shown_before_review_then_what_review_made_of_it(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    """Right after propose the diff shows the model's answer as it stands (every id it
    named, unclamped); after review, what review kept."""

    def respond(request: RecordedRequest) -> Reply:
        rows = dict((text, fact_id) for fact_id, text in PROMPT_ROW.findall(request.prompt))
        a, b = rows[STAGING_A], rows[STAGING_B]
        return Reply.proposal(MERGED, [a, b, "01NOTAFACT0000000000000000", a])

    ollama.set_responder(respond)
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=5.0)
    async with running(app) as pilot:
        await pilot.press("3")
        await step(pilot, 3)  # decay, select, propose
        assert "▶ Review" in static_text(app, "#stepper")
        diff = static_text(app, "#diff-body")
        assert "0 to consume" not in diff
        assert "as proposed, before review: 2 named for consumption · 30 not named" in diff
        assert f" − {STAGING_A}\n" in diff and f" − {STAGING_B}\n" in diff
        assert f" + {MERGED}\n" in diff
        assert "01NOTAFACT0000000000000000  ignored: not in the batch" in diff
        assert "ignored: named twice" in diff
        assert f"+ {MERGED}" in screen_text(app)

        await step(pilot)  # review
        diff = static_text(app, "#diff-body")
        assert diff.startswith(" 2 to consume · 30 kept")
        assert "01NOTAFACT0000000000000000  ignored: unknown id" in diff
        assert "ignored: duplicate" in diff


async def test_an_unreadable_answer_is_shown_as_such_before_review(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    ollama.script(Reply.text("Sure! Here is my summary: [not json]"))
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=5.0)
    async with running(app) as pilot:
        await pilot.press("3")
        await step(pilot, 3)
        diff = static_text(app, "#diff-body")
        assert "The answer is not a usable proposal: the response is not valid JSON" in diff
        assert "Sure! Here is my summary: [not json]" in diff  # literally, never markup


async def test_after_esc_the_hint_names_the_key_that_asks_again(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    ollama.script(Reply.hang(30))
    ollama.set_responder(merge_the_staging_pair)
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=20.0)
    async with running(app) as pilot:
        await pilot.press("3")
        await step(pilot, 2)
        pane = app.query_one("#consolidate-pane")
        await pilot.press("n")
        await wait_until(pilot, lambda: pane.busy, what="the call")  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not pane.busy, what="the cancel")  # type: ignore[attr-defined]
        await settle(pilot)
        stepper = static_text(app, "#stepper")
        note = next(line for line in stepper.splitlines() if "Model call cancelled" in line)
        key = re.search(r"cancelled: (\S+) asks again", note)
        assert key is not None, note
        await pilot.press(key.group(1))  # the key the note names
        await wait_until(
            pilot,
            lambda: "answer received" in static_text(app, "#stepper"),
            what="the second call",
        )
        assert len(ollama.generate_requests) == 2
        await settle(pilot)
        assert f" + {MERGED}\n" in static_text(app, "#diff-body")


async def test_a_stale_apply_is_not_marked_done(demo_store: LmdbStore) -> None:
    """Another process changes a batch fact between review and apply: apply discards the
    stale proposal, and the stepper must not show it as a green ✓."""
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("3")
        await step(pilot, 4)
        (staging_a,) = ids_of(demo_store, STAGING_A)
        demo_store.revise(staging_a, STAGING_A + " Changed meanwhile.")
        await pilot.press("a")
        await settle(pilot)
        stepper = static_text(app, "#stepper")
        apply_line = next(line for line in stepper.splitlines() if " Apply " in line)
        assert "discarded" in apply_line
        assert "✓" not in apply_line and "✗" in apply_line
        assert "apply" not in done_stages(stepper)
        assert "Outcome: discarded" in stepper
    assert demo_store.records()[0].outcome == "discarded"
