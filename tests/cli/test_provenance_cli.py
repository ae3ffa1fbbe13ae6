"""Who wrote a fact, as a person and a script read it: `show` names the source, `--json`
carries it, our jsonl export keeps it through a round trip, upstream's `memories.json` stays
upstream-shaped, and an import file cannot claim a source this program never writes.

On both backends (`any_cli`); exports are imported into fresh LMDB stores.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.stdout, done.stderr)
    return done.stdout


def remembered(run_cli: RunCli, text: str) -> dict[str, Any]:
    return dict(json.loads(ok(run_cli("remember", "ops", text, "--json"))))


def test_show_names_who_wrote_the_fact(any_cli: RunCli) -> None:
    fact = remembered(any_cli, "The pager rota lives in PagerDuty.")
    assert fact["source"] == "cli"
    shown = ok(any_cli("show", fact["id"]))
    assert "   source: cli" in shown.splitlines()
    payload = json.loads(ok(any_cli("show", fact["id"], "--json")))
    assert payload["fact"]["source"] == "cli"


def test_the_jsonl_export_keeps_sources_and_memories_json_leaves_them_out(
    any_cli: RunCli, tmp_path: Path
) -> None:
    fact = remembered(any_cli, "Kept through a round trip.")
    lines = [json.loads(x) for x in ok(any_cli("export", "--format", "jsonl")).splitlines()]
    exported = [x["fact"] for x in lines if x["type"] == "fact"]
    assert [f["source"] for f in exported if f["id"] == fact["id"]] == ["cli"]
    upstream = json.loads(ok(any_cli("export", "--format", "json")))
    assert upstream and all("source" not in item for item in upstream)

    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    other = {"GRAYMATTER_DIR": str(tmp_path / "other"), "GRAYMATTER_STORE": ""}
    ok(any_cli("import", str(dump), env=other))
    again = json.loads(ok(any_cli("show", fact["id"], "--json", env=other)))
    assert again["fact"]["source"] == "cli"  # not "import": the file says who wrote it

    bare = tmp_path / "memories.json"
    bare.write_text(json.dumps(upstream))
    third = {"GRAYMATTER_DIR": str(tmp_path / "third"), "GRAYMATTER_STORE": ""}
    ok(any_cli("import", str(bare), env=third))
    from_upstream = json.loads(ok(any_cli("show", fact["id"], "--json", env=third)))
    assert from_upstream["fact"]["source"] == "import"


def test_an_import_claiming_a_made_up_source_is_refused_and_changes_nothing(
    any_cli: RunCli, tmp_path: Path
) -> None:
    fact = {
        "id": "01JC0000000000000000000001",
        "agent_id": "ops",
        "text": "forged",
        "created_at": "2026-01-01T00:00:00Z",
        "source": "mcp:\u001b[31mroot",
    }
    dump = tmp_path / "forged.jsonl"
    dump.write_text(json.dumps({"type": "fact", "fact": fact}) + "\n")
    done = any_cli("import", str(dump))
    assert done.returncode == 1
    assert "line 1" in done.stderr and "'source' must name who wrote the fact" in done.stderr
    assert "\x1b" not in done.stderr
    listed = any_cli("list", "ops", "--json")
    assert listed.returncode in (0, 1) and "forged" not in listed.stdout
