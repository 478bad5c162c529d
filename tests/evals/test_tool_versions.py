"""A tool changed without a version bump (issue 15, item 5) is flagged by ``record``, ``eval`` and ``gate``:
a warning by default, an error with ``--strict``; a bumped tool is not flagged (a replay still drifts);
a recording made before ``tool_versions`` is judged from its trace's ``tool.call`` events, and a tool it
never called is said to be unjudgeable. ``portagent`` commands (in process, ``run_cli``) on a copy of the
demo, replaying committed cassettes (copied) or running against the emulator."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRecord
from portagent.evals.tool_versions import (
    UNJUDGED_PREFIX,
    UNVERSIONED_PREFIX,
    current_tools,
    read_folder_tools,
    recorded_tools,
    unversioned_changes,
)
from portagent.tracing.recorder import read_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support_desk"
CASSETTES = ROOT / "cassettes" / "support-desk"
CASE = "email-outside-denied"  # calls send_email (denied); never calls create_ticket
SEND = "description: Send an email to the student. This leaves"
TICKET = "description: Open a follow-up ticket in the support queue."

pytestmark = pytest.mark.skipif(
    not (CASSETTES / "support_desk@1.0.0" / CASE / "openai" / "r0" / "run.json").is_file(),
    reason="committed demo cassettes missing",
)


def _example(
    tmp: Path, name: str, *, send: str | None = None, ticket: str | None = None, bump: bool = False
) -> Path:
    """A copy of examples/support_desk with send_email / create_ticket edited (version bumped or not)."""
    dst = tmp / name
    shutil.copytree(EXAMPLE, dst)
    tools = dst / "tools.yaml"
    text = tools.read_text(encoding="utf-8")
    if send is not None:
        assert SEND in text
        text = text.replace(SEND, f"description: {send} This leaves")
        if bump:
            head, tail = text.split("  - name: send_email\n    version: 1.0.0", 1)
            text = head + "  - name: send_email\n    version: 1.0.1" + tail
    if ticket is not None:
        assert TICKET in text
        text = text.replace(TICKET, f"description: {ticket}")
    tools.write_text(text, encoding="utf-8")
    return dst / "suite.yaml"


def _old_cassettes(tmp: Path) -> Path:
    """The committed cassettes of CASE on openai, as recorded before ``tool_versions`` existed."""
    root = tmp / "cassettes"
    for v in ("1.0.0", "2.0.0"):
        src = CASSETTES / f"support_desk@{v}" / CASE / "openai" / "r0"
        dst = root / "support-desk" / f"support_desk@{v}" / CASE / "openai" / "r0"
        shutil.copytree(src, dst)
        run = json.loads((dst / "run.json").read_text(encoding="utf-8"))
        run["manifest"].pop("tool_versions", None)
        (dst / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    return root


def _cli(tmp: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``portagent`` run from ``tmp`` with a state folder of its own, in this process (``run_cli``: the same
    ``main`` a shell reaches; the eval workers are real processes either way, and forked warm from the fork
    server kept across this module's evals rather than paying the SDK import in every new interpreter)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp)
        mp.setenv("PORTAGENT_HOME", str(tmp / "home"))
        mp.setenv("COLUMNS", "200")
        mp.delenv("GITHUB_ACTIONS", raising=False)
        code, out, err = run_cli(*map(str, args))
    return subprocess.CompletedProcess(["portagent", *map(str, args)], code, out, err)


def _one(*extra: str | Path) -> list[str | Path]:
    return ["--providers", "openai", "--repeats", "1", "--workers", "1", "--no-progress", *extra]


def _gate(folder: Path, name: str = "ci_gate.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / name).read_text(encoding="utf-8"))
    return data


def _tool_findings(gate: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in gate["findings"] if f["category"] == "tool_unversioned_change"]


# -- the rule, on a committed recording --------------------------------------------------------------


def test_an_old_recording_is_judged_from_its_trace_events_where_the_tool_was_called(tmp_path: Path) -> None:
    folder = CASSETTES / "support_desk@1.0.0" / CASE / "openai" / "r0"
    record = RunRecord.model_validate_json((folder / "run.json").read_text(encoding="utf-8"))
    old = record.manifest.model_copy(update={"tool_versions": {}})  # as recorded before the field
    tools = recorded_tools(old, read_trace(folder / "trace.jsonl"))
    assert tools["send_email"].version == "1.0.0"  # from its tool.call event
    assert tools["create_ticket"].version is None  # never called: unknown, not guessed
    edited = _example(tmp_path, "sd", send="Send an email to the student now.", ticket="Open a ticket.")
    now = current_tools(load_agent(edited.parent / "agent.yaml"))
    by_tool = {c.tool: c for c in unversioned_changes(tools, now, since="the recording")}
    assert by_tool["send_email"].kind == "unversioned"
    assert by_tool["send_email"].message.startswith(UNVERSIONED_PREFIX + "send_email@1.0.0 changed")
    assert by_tool["create_ticket"].kind == "unjudged"
    assert "cannot tell" in by_tool["create_ticket"].message
    assert set(by_tool) == {"send_email", "create_ticket"}  # unchanged tools are not reported
    # a new recording names every tool's version in its manifest: nothing is left unjudged
    same = current_tools(load_agent(EXAMPLE / "agent.yaml"))
    assert unversioned_changes(same, same, since="x") == []


# -- eval --replay: the cassette's manifest vs the current spec --------------------------------------


def test_eval_replay_flags_a_description_changed_without_a_bump_warning_then_strict(tmp_path: Path) -> None:
    suite = _example(tmp_path, "sd", send="Send an email to the student right away.", ticket="Open a ticket.")
    cassettes = _old_cassettes(tmp_path)
    args = ["eval", suite, "--replay", "--cassettes", cassettes, "--case", CASE, *_one()]
    p = _cli(tmp_path, *args, "--out", "r")
    assert p.returncode == 1, p.stderr  # the replays drift: the request changed
    assert "Traceback" not in p.stderr
    assert re.search(r"warning: tool changed without a version bump: send_email@1\.0\.0", p.stdout), p.stdout
    gate = _gate(tmp_path / "r")
    found = _tool_findings(gate)
    assert len(found) == 1 and not found[0]["blocking"]
    assert "send_email@1.0.0" in found[0]["message"]
    assert "tool_unversioned_change" not in gate["blocked_by"] and "drift" in gate["blocked_by"]
    assert any(w.startswith(UNVERSIONED_PREFIX + "send_email@1.0.0") for w in gate["warnings"])
    assert any(w.startswith(UNJUDGED_PREFIX + "create_ticket") for w in gate["warnings"])  # never called
    report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "tool changed without a version bump: send_email@1.0.0" in report
    assert "tool version unknown: create_ticket" in report

    p = _cli(tmp_path, *args, "--out", "s", "--strict")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    gate = _gate(tmp_path / "s")
    assert [f["blocking"] for f in _tool_findings(gate)] == [True]
    assert "tool_unversioned_change" in gate["blocked_by"]
    assert any(r.startswith(UNVERSIONED_PREFIX + "send_email@1.0.0") for r in gate["reasons"])
    assert any(w.startswith(UNJUDGED_PREFIX + "create_ticket") for w in gate["warnings"])  # still a warning
    assert "blocked by: recording drift, tool changed without a version bump" in p.stdout.replace("\n", " ")


def test_eval_replay_after_a_version_bump_is_drift_not_an_unversioned_change(tmp_path: Path) -> None:
    suite = _example(tmp_path, "sd", send="Send an email to the student right away.", bump=True)
    cassettes = _old_cassettes(tmp_path)
    p = _cli(
        tmp_path, "eval", suite, "--replay", "--cassettes", cassettes, "--case", CASE, *_one("--out", "r")
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr
    gate = _gate(tmp_path / "r")
    assert _tool_findings(gate) == []
    assert not any(w.startswith((UNVERSIONED_PREFIX, UNJUDGED_PREFIX)) for w in gate["warnings"])
    assert "drift" in gate["blocked_by"]  # still a stale recording
    drift = next(f for f in gate["findings"] if f["category"] == "drift")
    assert any("send_email" in c for c in drift["changed"])


# -- emulator + baseline results: eval --baseline and gate --baseline ---------------------------------


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tv-base")
    suite = _example(tmp, "sd")
    p = _cli(tmp, "eval", suite, "--emulator", "--case", "refund-rule", *_one("--out", "base"))
    assert p.returncode == 0, p.stdout + p.stderr
    return tmp / "base"


def test_eval_and_gate_against_a_baseline_warn_then_block_with_strict(tmp_path: Path, baseline: Path) -> None:
    suite = _example(tmp_path, "sd", send="Send an email to the student right away.")
    args = ["eval", suite, "--emulator", "--case", "refund-rule", "--baseline", baseline, *_one()]
    p = _cli(tmp_path, *args, "--out", "c")
    assert p.returncode == 0, p.stdout + p.stderr  # a warning by default
    assert (
        "warning: tool changed without a version bump: send_email@1.0.0 changed since the baseline"
        in p.stdout
    )
    gate = _gate(tmp_path / "c")
    assert gate["passed"] and [f["blocking"] for f in _tool_findings(gate)] == [False]
    assert "send_email@1.0.0 changed since the baseline" in (tmp_path / "c" / "report.md").read_text()

    p = _cli(tmp_path, *args, "--out", "cs", "--strict")
    assert p.returncode == 1, p.stdout + p.stderr
    gate = _gate(tmp_path / "cs")
    assert gate["blocked_by"] == ["tool_unversioned_change"]
    assert gate["reasons"] == [f["message"] for f in _tool_findings(gate)]

    g = _cli(tmp_path, "gate", tmp_path / "c", "--baseline", baseline, "--out", tmp_path / "g.json")
    assert g.returncode == 0, g.stdout + g.stderr
    assert "warning: tool changed without a version bump: send_email@1.0.0" in g.stdout
    g = _cli(
        tmp_path, "gate", tmp_path / "c", "--baseline", baseline, "--strict", "--out", tmp_path / "gs.json"
    )
    assert g.returncode == 1 and "Traceback" not in g.stderr
    assert "• tool changed without a version bump: send_email@1.0.0" in g.stdout
    assert _gate(tmp_path, "gs.json")["blocked_by"] == ["tool_unversioned_change"]


def test_a_bumped_tool_is_not_flagged_against_the_baseline(tmp_path: Path, baseline: Path) -> None:
    suite = _example(tmp_path, "sd", send="Send an email to the student right away.", bump=True)
    args = ["eval", suite, "--emulator", "--case", "refund-rule", "--baseline", baseline, "--strict"]
    p = _cli(tmp_path, *args, *_one("--out", "c"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert _tool_findings(_gate(tmp_path / "c")) == []
    assert "version bump" not in p.stdout


def test_eval_refuses_a_baseline_it_cannot_read_before_running(tmp_path: Path) -> None:
    suite = _example(tmp_path, "sd")
    p = _cli(tmp_path, "eval", suite, "--emulator", "--baseline", tmp_path / "nope", *_one("--out", "c"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "nope" in p.stderr
    assert not (tmp_path / "c").exists()


# -- record: re-recording over a folder whose tools changed ------------------------------------------


def test_record_warns_and_with_strict_refuses_before_writing(tmp_path: Path) -> None:
    suite = _example(tmp_path, "sd", send="Send an email to the student right away.")
    cassettes = _old_cassettes(tmp_path)
    before = {p: p.read_bytes() for p in cassettes.rglob("*") if p.is_file()}
    args = ["record", suite, "--providers", "openai", "--emulator", "--case", CASE, "--repeats", "1"]
    p = _cli(tmp_path, *args, "--out", cassettes, "--strict")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert (
        "refusing to re-record (--strict): tool changed without a version bump: send_email@1.0.0" in p.stderr
    )
    after = {p: p.read_bytes() for p in cassettes.rglob("*") if p.is_file()}
    assert after == before  # nothing written

    p = _cli(tmp_path, *args, "--out", cassettes, "--no-verify")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (
        "warning: tool changed without a version bump: send_email@1.0.0 changed since the recording"
        in p.stdout
    )
    run = RunRecord.model_validate_json(
        (cassettes / "support-desk" / "support_desk@1.0.0" / CASE / "openai" / "r0" / "run.json").read_text()
    )
    assert run.manifest.tool_versions["send_email"] == "1.0.0"  # written from now on
    assert set(run.manifest.tool_versions) == set(run.manifest.tool_hashes)
    again = read_folder_tools(cassettes / "support-desk" / "support_desk@1.0.0" / CASE / "openai" / "r0")
    assert again is not None and all(s.version for s in again.values())
