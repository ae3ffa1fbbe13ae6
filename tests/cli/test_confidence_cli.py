"""Confidence through the real CLI on both backends: `remember --confidence` and `revise
--confidence` write the label, `recall --min-confidence` and `--confidence-weight` rank
by it and `--explain` shows the factor (text and JSON); a bad value is a usage error
(exit 2, one `Error:` line naming the flag) and writes nothing. Without the flags,
recall's output is what it was."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.backends import CliStore

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]
AGENT = "ops"
TEXTS = {
    "verified": "The deploy window opens Thursday",
    "unverified": "The deploy window opens Tuesday",
    None: "The deploy window opens Monday",
    "inferred": "The deploy window opens Wednesday",
}


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stdout


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(done))


def usage_error(done: subprocess.CompletedProcess[str], flag: str) -> str:
    """Assert click's usage error for `flag` and return its `Error:` line."""
    assert done.returncode == 2, (done.args, done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], done.stderr
    assert f"'{flag}'" in errors[0], errors[0]
    return errors[0]


def _seed(any_cli: RunCli) -> dict[str | None, str]:
    """label -> id, written a minute apart in TEXTS' order (ties rank older first)."""
    ids = {}
    for minute, (label, text) in enumerate(TEXTS.items()):
        flags = ["--confidence", label] if label else []
        at = {"GRAYMATTER_NOW": f"2026-03-01T11:0{minute}:00Z"}
        ids[label] = as_json(any_cli("remember", AGENT, text, *flags, "--json", env=at))["id"]
    return ids


def _stored(cli_store: CliStore) -> dict[str, Any]:
    with cli_store.open() as store:
        return {f.id: f.confidence for f in store.all_facts()}


def test_remember_writes_the_label_and_json_shows_it_only_when_given(
    any_cli: RunCli, cli_store: CliStore
) -> None:
    sure = as_json(
        any_cli("remember", AGENT, "The VPN is required", "--confidence", "verified", "--json")
    )
    assert sure["confidence"] == "verified"
    plain = as_json(any_cli("remember", AGENT, "The VPN is slow", "--json"))
    assert "confidence" not in plain
    assert _stored(cli_store) == {sure["id"]: "verified", plain["id"]: None}


def test_revise_keeps_the_label_or_takes_the_one_given(
    any_cli: RunCli, cli_store: CliStore
) -> None:
    old = as_json(any_cli("remember", AGENT, "Port 5432", "--confidence", "verified", "--json"))
    kept = as_json(any_cli("revise", old["id"], "Port 5433", "--json"))
    assert kept["confidence"] == "verified"
    given = as_json(
        any_cli("revise", kept["id"], "Port 5434", "--confidence", "unverified", "--json")
    )
    assert given["confidence"] == "unverified"
    assert _stored(cli_store)[given["id"]] == "unverified"


def test_recall_without_the_flags_is_as_before_and_ignores_labels(any_cli: RunCli) -> None:
    ids = _seed(any_cli)
    plain = as_json(any_cli("recall", AGENT, "deploy window", "--preview", "--json", "--explain"))
    assert [hit["id"] for hit in plain] == list(ids.values())  # written order: the tie-break
    assert all("confidence" not in hit and "confidence_factor" not in hit for hit in plain)
    text = ok(any_cli("recall", AGENT, "deploy window", "--preview", "--explain"))
    assert "confidence" not in text


def test_recall_weighs_and_filters_by_confidence_and_explains_the_factor(
    any_cli: RunCli,
) -> None:
    ids = _seed(any_cli)
    query = (AGENT, "deploy window", "--preview")
    weighed = as_json(
        any_cli("recall", *query, "--confidence-weight", "0.2", "--json", "--explain")
    )
    assert [hit["id"] for hit in weighed] == [
        ids["verified"],
        ids[None],
        ids["inferred"],
        ids["unverified"],
    ]
    assert [hit["confidence_factor"] for hit in weighed] == [1.2, 1.0, 1.0, 0.8]
    assert [hit["confidence"] for hit in weighed] == ["verified", None, "inferred", "unverified"]
    assert [hit["score"] for hit in weighed] == [1.2, 1.0, 1.0, 0.8]

    text = ok(any_cli("recall", *query, "--confidence-weight", "0.2", "--explain")).splitlines()
    assert text[0].startswith(f"1.2000  {ids['verified']}  ")
    assert text[1].endswith("× confidence 1.2000 (verified)")
    unknown = text.index(next(line for line in text if ids[None] in line))
    assert text[unknown + 1].endswith("× confidence 1.0000 (unknown)")

    sure = as_json(any_cli("recall", *query, "--min-confidence", "inferred", "--json"))
    assert [hit["id"] for hit in sure] == [ids["verified"], ids["inferred"]]
    floor = as_json(any_cli("recall", *query, "--min-confidence", "unverified", "--json"))
    assert len(floor) == 4


@pytest.mark.parametrize(
    ("args", "flag", "said"),
    [
        (("remember", AGENT, "A new fact", "--confidence", "sure"), "--confidence", "'sure'"),
        (
            ("remember", AGENT, "A new fact", "--confidence", "Verified"),
            "--confidence",
            "verified, inferred or unverified",
        ),
        (("recall", AGENT, "deploy", "--min-confidence", "high"), "--min-confidence", "'high'"),
        (
            ("recall", AGENT, "deploy", "--confidence-weight", "0.6"),
            "--confidence-weight",
            "from 0 to 0.5, got 0.6",
        ),
        (
            ("recall", AGENT, "deploy", "--confidence-weight", "-0.1"),
            "--confidence-weight",
            "got -0.1",
        ),
        (
            ("recall", AGENT, "deploy", "--confidence-weight", "lots"),
            "--confidence-weight",
            "'lots'",
        ),
        (
            ("recall", AGENT, "deploy", "--confidence-weight", "nan"),
            "--confidence-weight",
            "got nan",
        ),
    ],
)
def test_a_bad_confidence_value_is_a_usage_error_and_writes_nothing(
    any_cli: RunCli, cli_store: CliStore, args: tuple[str, ...], flag: str, said: str
) -> None:
    before = as_json(any_cli("remember", AGENT, "The deploy window opens Friday", "--json"))
    assert said in usage_error(any_cli(*args), flag)
    assert _stored(cli_store) == {before["id"]: None}


def test_a_bad_label_on_revise_changes_nothing(any_cli: RunCli, cli_store: CliStore) -> None:
    old = as_json(any_cli("remember", AGENT, "Port 5432", "--json"))
    usage_error(any_cli("revise", old["id"], "Port 5433", "--confidence", "maybe"), "--confidence")
    with cli_store.open() as store:
        assert [(f.id, f.text, f.is_live) for f in store.all_facts()] == [
            (old["id"], "Port 5432", True)
        ]


def test_show_names_the_confidence_of_a_labelled_fact_only(any_cli: RunCli) -> None:
    sure = as_json(any_cli("remember", AGENT, "Port 5432", "--confidence", "verified", "--json"))
    plain = as_json(any_cli("remember", AGENT, "Port 6379", "--json"))
    shown = ok(any_cli("show", sure["id"])).splitlines()
    assert "confidence: verified" in shown
    assert f"        id: {sure['id']}" in shown  # the labels stay aligned
    unlabelled = ok(any_cli("show", plain["id"])).splitlines()
    assert not any("confidence" in line for line in unlabelled)
    assert f"       id: {plain['id']}" in unlabelled  # as it always was


def test_review_shows_the_confidence_a_held_change_writes(
    any_cli: RunCli, cli_store: CliStore
) -> None:
    with cli_store.open() as store:
        labelled = store.hold_change(AGENT, "add", "", "Port 80", confidence="verified").id
        plain = store.hold_change(AGENT, "add", "", "Port 81").id
    shown = ok(any_cli("review", "show", labelled)).splitlines()
    assert "  confidence verified (of the fact it writes)" in shown
    assert as_json(any_cli("review", "show", labelled, "--json"))["confidence"] == "verified"
    assert not any(
        "confidence" in line for line in ok(any_cli("review", "show", plain)).splitlines()
    )
    assert "confidence" not in as_json(any_cli("review", "show", plain, "--json"))
    ok(any_cli("review", "approve", labelled))
    assert list(_stored(cli_store).values()) == ["verified"]  # the approved add: Port 80
