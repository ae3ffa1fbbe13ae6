"""Three MCP server processes, the CLI and the TUI on one store at once.

Three `graymatter-tui mcp` subprocesses, each driven by the SDK client in an asyncio task
of its own, add 1,000 facts each; a subprocess runs `remember` in a loop; meanwhile the
real app (under `run_test`, in this process) steps a consolidation of another agent
through the Consolidate pane with the offline `local` summariser and applies it. Then
nothing is lost or doubled, every write is in the activity feed under its writer's name,
the Facts pane shows each agent's count, the cycle is whole and `doctor` is clean."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.tui.screens.activity import ActivityPane
from tests.conftest import clean_env, run_graymatter
from tests.mcp_server.client import connected
from tests.support.soak import rounds
from tests.tui.helpers import OPS, make_app, open_store, running, settle, static_text, wait_until

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

SERVERS = 3
CALLS = rounds(300, 1_000)  # per server; the soak's 1,000 make a rare interleaving likelier
CLI_FACTS = 8
CLI_AGENT = "cli-agent"
# Writers pause here until the cycle is applied, so their writes surround it.
PAUSE_AT = CALLS * 9 // 10
START_CYCLE_AFTER = CALLS // 10


def mcp_agent(n: int) -> str:
    return f"mcp-agent-{n}"


def mcp_text(n: int, call: int) -> str:
    return f"server {n} note {call}: the build {call} of service {n} passed"


def start_cli_loop(path: Path) -> subprocess.Popen[bytes]:
    """`remember` run again and again by a shell, each call a process of its own."""
    remember = f'"{sys.executable}" -m graymatter_tui --dir "{path}" remember {CLI_AGENT}'
    script = (
        f'i=0; while [ "$i" -lt {CLI_FACTS} ]; do '
        f'{remember} "cli note $i" >/dev/null || exit 1; i=$((i+1)); done'
    )
    return subprocess.Popen(
        ["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env()
    )


async def test_three_servers_the_cli_and_the_tui_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    create_demo(store)  # the TUI consolidates ops-agent's near-duplicate staging pair
    progress = [0] * SERVERS
    applied = asyncio.Event()

    async def write(n: int) -> None:
        async with connected(path, client_name=f"writer-{n}") as agent:
            for call in range(CALLS):
                if call == PAUSE_AT:
                    await applied.wait()
                await agent.ok("memory_add", agent_id=mcp_agent(n), text=mcp_text(n, call))
                progress[n] = call + 1

    cli = start_cli_loop(path)
    app = make_app(store)
    try:
        async with running(app) as pilot:
            writers = [asyncio.create_task(write(n)) for n in range(SERVERS)]
            await wait_until(
                pilot,
                lambda: min(progress) >= START_CYCLE_AFTER or any(w.done() for w in writers),
                timeout=120,
                what="every server to be writing",
            )
            assert not any(w.done() for w in writers), [w.exception() for w in writers]
            await pilot.press("3")
            for _ in range(4):  # decay, select, propose, review
                await pilot.press("n")
                await settle(pilot)
            assert "would consume 2 of" in static_text(app, "#stepper")
            await pilot.press("a")
            await settle(pilot)
            assert "Outcome: applied" in static_text(app, "#stepper")
            applied.set()
            await asyncio.wait_for(asyncio.gather(*writers), timeout=300)
            _, err = cli.communicate(timeout=300)
            assert cli.returncode == 0, err.decode(errors="replace")

            # The Facts pane follows the other processes' writes (it polls the store).
            await pilot.press("1")
            for agent, count in [
                *((mcp_agent(n), CALLS) for n in range(SERVERS)),
                (CLI_AGENT, CLI_FACTS),
            ]:
                app.agent = agent  # what choosing it in the agent chooser does
                await wait_until(
                    pilot,
                    lambda c=count: static_text(app, "#facts-info").startswith(f"{c} live"),
                    timeout=30,
                    what=f"the Facts pane to show {count} live facts of {agent}",
                )
            # The Activity pane lists every writer's writes, and the TUI's own cycle.
            await pilot.press("6")
            feed = app.query_one("#activity-pane", ActivityPane)
            newest = store.last_activity()
            await wait_until(
                pilot,
                lambda: bool(feed.entries) and feed.entries[0].seq == newest,
                timeout=30,
                what="the Activity pane to show the newest write",
            )
            for source in [*(f"mcp:writer-{n}" for n in range(SERVERS)), "cli", "tui"]:
                feed.source_filter = source
                feed.invalidate()
                await wait_until(
                    pilot,
                    lambda s=source: (
                        bool(feed.entries) and all(e.source == s for e in feed.entries)
                    ),
                    timeout=30,
                    what=f"the Activity pane to show the writes of {source}",
                )
                if source == "tui":
                    assert [e.action for e in feed.entries] == ["consolidation"]
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
        store.close()

    with LmdbStore.open(path, read_only=True) as reader:
        feed = reader.activity()
        for n in range(SERVERS):
            facts = reader.list_facts(mcp_agent(n))
            texts = Counter(f.text for f in facts)
            assert texts == Counter(mcp_text(n, call) for call in range(CALLS))  # once each
            assert {f.source for f in facts} == {f"mcp:writer-{n}"}
            # (a write that makes a possible update of the one before also logs the
            # pair it held for review, from the same writer)
            held = [e for e in feed if e.agent_id == mcp_agent(n) and e.action == "review"]
            assert {e.source for e in held} <= {f"mcp:writer-{n}"}
            logged = [e for e in feed if e.agent_id == mcp_agent(n) and e.action != "review"]
            assert sorted(e.fact_id for e in logged) == sorted(f.id for f in facts)
            assert {(e.action, e.source) for e in logged} == {("add", f"mcp:writer-{n}")}
        cli_facts = reader.list_facts(CLI_AGENT)
        assert Counter(f.text for f in cli_facts) == Counter(
            f"cli note {i}" for i in range(CLI_FACTS)
        )
        assert {f.source for f in cli_facts} == {"cli"}
        cli_logged = [e for e in feed if e.agent_id == CLI_AGENT]
        assert sorted(e.fact_id for e in cli_logged) == sorted(f.id for f in cli_facts)

        (record,) = reader.records(OPS)
        assert record.outcome == "applied" and len(record.consumed) == 2
        assert reader.receipts(record.summary_id) == record.consumed
        summary = reader.require(record.summary_id)
        assert summary.is_live and summary.cycle_id == record.cycle_id
        for fact_id in record.consumed:
            assert reader.require(fact_id).superseded_by == record.summary_id
        assert any(e.cycle_id == record.cycle_id for e in feed if e.agent_id == OPS)
        failed = [f"{c.name}: {v}" for c in check_invariants(reader) for v in c.violations]
        assert failed == []

    done = run_graymatter("doctor", "--dir", str(path), "--json")
    report = json.loads(done.stdout)
    assert report["ok"] is True, [c for c in report["checks"] if c["status"] != "ok"]
    assert done.returncode == 0
