"""Crash consistency of ``portagent run --idempotency-key`` (issue 14, finding 1): a run killed with
``kill -9`` in the middle of a write never wedges its key. The killed run is a real CLI subprocess (the
real OpenAI Agents SDK against portagent's emulator, SIGKILL); the requests after it run the same command in
this process, another process than the killed one; every wait is bounded."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import run_cli_as_another_shell

pytest.importorskip("agents")

DATA = Path(__file__).parent / "data" / "crash"
BOUND_S = 90


def _env(tmp_path: Path, hang: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PORTAGENT_HOME"] = str(tmp_path / "home")
    env["CRASH_EFFECTS"] = str(tmp_path / "effects.jsonl")
    env.pop("CRASH_HANG", None)
    if hang is not None:
        env["CRASH_HANG"] = str(hang)
    return env


def _argv(agent: str, key: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "portagent",
        "run",
        str(DATA / agent),
        "--provider",
        "openai",
        "--emulator",
        str(DATA / "script.yaml"),
        "--input",
        "Write note n1.",
        "--idempotency-key",
        key,
        "--approver",
        "auto-approve",
    ]


def _run(tmp_path: Path, agent: str, key: str) -> subprocess.CompletedProcess[str]:
    """The same command again, after (or beside) the killed one: in this process (``run_cli``), a process
    other than the one that holds or held the key, as a new shell's would be, without importing the SDK
    again for each request."""
    argv = _argv(agent, key)[3:]  # without ``python -m portagent``
    return run_cli_as_another_shell(tmp_path, _env(tmp_path), *argv, unset=("CRASH_HANG",))


def _killed_mid_write(tmp_path: Path, agent: str, key: str) -> None:
    """Start a run whose write handler makes its effect and hangs, then SIGKILL it there."""
    hang = tmp_path / "in-handler"
    proc = subprocess.Popen(
        _argv(agent, key),
        env=_env(tmp_path, hang),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + BOUND_S
        while not hang.exists():
            if proc.poll() is not None:
                pytest.fail(
                    f"the run ended before its handler hung: {proc.stderr.read() if proc.stderr else ''}"
                )
            if time.monotonic() > deadline:
                pytest.fail("the handler never started")
            time.sleep(0.05)
    finally:
        proc.kill()  # SIGKILL
        proc.wait(timeout=BOUND_S)
    assert proc.returncode == -9
    row = sqlite3.connect(tmp_path / "home" / "runs.db").execute("SELECT status FROM runs").fetchone()
    assert row == ("running",)  # what the dead process left behind


def _effects(tmp_path: Path) -> list[dict]:
    path = tmp_path / "effects.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_a_killed_run_with_guarded_effects_is_resumed_with_one_effect(tmp_path: Path) -> None:
    _killed_mid_write(tmp_path, "agent.yaml", "K1")
    pending = (
        sqlite3.connect(tmp_path / "home" / "ledger.db").execute("SELECT status FROM effects").fetchall()
    )
    assert pending == [("pending",)]  # the intent without an outcome

    again = _run(tmp_path, "agent.yaml", "K1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "status     completed (final_output)" in again.stdout and "attempt 2" in again.stdout
    assert "duplicate" not in again.stdout
    assert len(_effects(tmp_path)) == 1  # ADR 0003 recovery: reconcile found the effect, no second one
    ledger = sqlite3.connect(tmp_path / "home" / "ledger.db").execute("SELECT status FROM effects").fetchall()
    assert ledger == [("done",)]
    trace = [
        json.loads(x) for x in Path(again.stdout.split("trace      ")[1].strip()).read_text().splitlines()
    ]
    started = [e for e in trace if e["type"] == "run.started"]
    assert started[-1]["attempt"] == 2 and "interrupted" in started[-1]["provider_details"]["resumed"]
    result = next(e for e in trace if e["type"] == "tool.result")
    assert result["ok"] is True

    third = _run(tmp_path, "agent.yaml", "K1")  # now a finished run: duplicate, with the first result
    assert third.returncode == 0 and "duplicate (duplicate_request)" in third.stdout
    assert len(_effects(tmp_path)) == 1


def test_the_killed_attempt_keeps_its_effects_call_in_the_trace_and_its_approval(tmp_path: Path) -> None:
    """What the killed attempt did before its effect is in trace.jsonl (the effect's call, its decision, its
    approval): the trace was written only at the end of an attempt, so a process killed mid-effect left no
    record that the effect was ever called. The resumed attempt uses the card that approved the effect
    (the ledger holds its intent without an outcome) instead of asking for a second approval of what may
    already have happened; reconcile then settles it."""
    _killed_mid_write(tmp_path, "agent.yaml", "K3")
    (folder,) = (tmp_path / "home" / "runs").iterdir()
    killed = [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in killed if e["type"] == "tool.call"]
    assert [c["tool"] for c in calls] == ["write_note"], [e["type"] for e in killed]
    (first_approval,) = [e for e in killed if e["type"] == "approval.resolved"]
    assert first_approval["status"] == "approved"

    again = _run(tmp_path, "agent.yaml", "K3")
    assert again.returncode == 0 and "attempt 2" in again.stdout, again.stdout + again.stderr
    assert len(_effects(tmp_path)) == 1
    cards = sqlite3.connect(tmp_path / "home" / "approvals.db").execute(
        "SELECT approval_id FROM approval_cards"
    )
    assert [row[0] for row in cards] == [first_approval["approval_id"]]  # no second card for the same effect
    trace = [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines()]
    resolved = [e for e in trace if e["type"] == "approval.resolved"]
    assert [e["approval_id"] for e in resolved] == [first_approval["approval_id"]] * 2
    assert [e["seq"] for e in trace] == list(range(len(trace)))  # attempt 2 follows attempt 1's events


def test_a_killed_run_with_unguarded_effects_is_reported_interrupted_never_duplicate(tmp_path: Path) -> None:
    _killed_mid_write(tmp_path, "agent_unguarded.yaml", "K2")
    for _ in range(2):  # every later request gets the same answer: never "duplicate" with exit 0
        again = _run(tmp_path, "agent_unguarded.yaml", "K2")
        assert again.returncode == 3, again.stdout + again.stderr
        assert "status     failed (interrupted)" in again.stdout
        assert "was interrupted" in again.stdout and "write_note" in again.stdout
        assert "Traceback" not in again.stderr
    assert len(_effects(tmp_path)) == 1  # never run a second time


def test_a_key_held_by_a_live_run_is_refused_not_taken_over(tmp_path: Path) -> None:
    hang = tmp_path / "in-handler"
    proc = subprocess.Popen(
        _argv("agent.yaml", "K3"),
        env=_env(tmp_path, hang),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + BOUND_S
        while not hang.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert hang.exists()
        second = _run(tmp_path, "agent.yaml", "K3")
        assert second.returncode == 2 and "already running in another process" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        proc.kill()
        proc.wait(timeout=BOUND_S)
    assert len(_effects(tmp_path)) == 1
