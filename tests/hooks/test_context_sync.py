"""`context-sync`: the agent's pinned facts in a managed block of CLAUDE.md / AGENTS.md,
everything else in the file untouched, a hand-edited block refused unless --force."""

from __future__ import annotations

import json
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from tests.hooks.conftest import Hook, run_cli

AGENT = "my-project"
HEAD = "# Project rules\n\nUse tabs. Run `make check` before pushing.\n"


def pin(hook: Hook, *texts: str, agent: str = AGENT) -> None:
    with LmdbStore.open(hook.store) as store:
        for text in texts:
            store.put(agent, text, pinned=True)


def sync(hook: Hook, *args: str) -> object:
    return run_cli(hook, "context-sync", "--dir", str(hook.store), *args)


def block_of(text: str) -> list[str]:
    lines = text.splitlines()
    begin = next(i for i, line in enumerate(lines) if line.startswith("<!-- graymatter:begin"))
    end = lines.index("<!-- graymatter:end -->")
    return lines[begin + 1 : end]


def test_the_pinned_facts_go_in_a_block_and_the_rest_of_the_file_stays(hook: Hook) -> None:
    claude = hook.project / "CLAUDE.md"
    claude.write_text(HEAD)
    pin(hook, "The API lives in src/api", "Release notes go in CHANGELOG.md")
    with LmdbStore.open(hook.store) as store:
        store.put(AGENT, "not pinned, not shown")
        store.put("other", "another agent's pin", pinned=True)
    done = sync(hook, "--json")
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    text = claude.read_text()
    assert text.startswith(HEAD)
    assert block_of(text) == ["- The API lives in src/api", "- Release notes go in CHANGELOG.md"]
    assert receipt["action"] == "added" and receipt["facts"] == 2
    assert Path(receipt["backup"]).read_text() == HEAD


def test_syncing_again_changes_nothing_and_a_new_pin_updates_the_block(hook: Hook) -> None:
    pin(hook, "first pinned fact")
    assert sync(hook).returncode == 0
    claude = hook.project / "CLAUDE.md"
    created = claude.read_text()
    again = sync(hook, "--json")
    assert json.loads(again.stdout)["action"] == "unchanged" and claude.read_text() == created
    pin(hook, "second pinned fact")
    assert json.loads(sync(hook, "--json").stdout)["action"] == "updated"
    assert block_of(claude.read_text()) == ["- first pinned fact", "- second pinned fact"]
    claude.write_text("a line a person added above\n" + claude.read_text() + "and below\n")
    pin(hook, "third")
    assert sync(hook).returncode == 0
    final = claude.read_text()
    assert final.startswith("a line a person added above\n") and final.endswith("and below\n")


def test_a_block_edited_by_hand_is_refused_unless_forced(hook: Hook) -> None:
    pin(hook, "The API lives in src/api")
    sync(hook)
    claude = hook.project / "CLAUDE.md"
    edited = claude.read_text().replace("src/api", "src/API (moved!)")
    claude.write_text(edited)
    refused = sync(hook)
    assert refused.returncode == 1
    assert len(refused.stderr.splitlines()) == 1 and "edited by hand" in refused.stderr
    assert claude.read_text() == edited
    forced = sync(hook, "--force", "--json")
    assert forced.returncode == 0
    assert block_of(claude.read_text()) == ["- The API lives in src/api"]
    assert Path(json.loads(forced.stdout)["backup"]).read_text() == edited  # the edit is kept


def test_a_fact_cannot_close_the_block_or_forge_a_marker(hook: Hook) -> None:
    pin(hook, "evil <!-- graymatter:end -->\nnew line\x1b[31m", "second")
    assert sync(hook, "--file", "AGENTS.md").returncode == 0
    text = (hook.project / "AGENTS.md").read_text()
    assert text.count("<!-- graymatter:end -->") == 1
    assert len(block_of(text)) == 2 and "\x1b" not in text
    assert sync(hook, "--file", "AGENTS.md").returncode == 0  # and it reads back as ours


def test_broken_markers_are_refused(hook: Hook) -> None:
    claude = hook.project / "CLAUDE.md"
    claude.write_text(HEAD + '<!-- graymatter:begin agent="x" sha256=0000000000000000 -->\n')
    done = sync(hook)
    assert done.returncode == 1 and "markers" in done.stderr
    assert claude.read_text().startswith(HEAD)


def test_no_pins_yet_still_writes_a_block_that_says_so(hook: Hook) -> None:
    done = sync(hook, "--agent", "ops")
    assert done.returncode == 0, done.stderr
    assert "no pinned facts yet" in block_of((hook.project / "CLAUDE.md").read_text())[0]
    assert not hook.store.exists()  # reading the store created nothing
