"""A recording made against the emulator is stale once the emulator script the suite names changes
(``evals.drift.script_changed``): ``eval --replay`` gates it as a recording drift naming the script and the
``record --drifted`` line, ``record --drifted`` re-records it, and ``eval --reuse`` makes its replay again.
Before, nothing read back ``run.json``'s ``emulator_script_hash``: the stale answers gated PASS and
``record --drifted`` skipped the run as "replays cleanly"."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import run_cli

from portagent.contracts.loaded_suite import load_suite
from portagent.contracts.run import RunManifest
from portagent.evals.drift import SCRIPT_CHANGE, recording_changes, script_changed
from portagent.runtime.eval_plan import plan_runs
from portagent.runtime.reuse import Fingerprints

ANSWER = '- text: "Order ORD-7 is {{last_tool_result.status}} with {{last_tool_result.carrier}}."'


pytestmark = pytest.mark.slow  # records in processes of its own


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new project recorded against its emulator on openai (once: each test edits a copy)."""
    root = tmp_path_factory.mktemp("recorded")
    proj = root / "proj"
    code, out, err = run_cli("init", str(proj), "--name", "qa")
    assert code == 0, out + err
    suite = proj / "suite.yaml"
    suite.write_text(suite.read_text().replace("providers: [openai, claude, adk]", "providers: [openai]"))
    _record(proj, {**os.environ, "PORTAGENT_HOME": str(root / "home")})
    run = json.loads((proj / "cassettes/qa/qa@1.0.0/order-status/openai/r0/run.json").read_text())
    assert run["manifest"]["emulator_script_hash"]
    return proj


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded project for one test."""
    proj = tmp_path / "proj"
    shutil.copytree(recorded, proj)
    return proj


def _record(proj: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    """``portagent record`` in its own process (record then record --drifted in one process is not what
    this test is about)."""
    argv = ["record", "suite.yaml", "--providers", "openai", "--emulator", "--out", "cassettes", *extra]
    return subprocess.run(
        [sys.executable, "-m", "portagent", *argv],
        cwd=proj,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )


def _edit_answer(proj: Path) -> None:
    script = proj / "emulator.yaml"
    text = script.read_text()
    assert ANSWER in text
    script.write_text(text.replace(ANSWER, '- text: "Order ORD-7: I do not know."'))


def _replay(proj: Path, out: str) -> tuple[int, str]:
    cwd = Path.cwd()
    os.chdir(proj)
    try:
        code, stdout, err = run_cli(
            "eval", "suite.yaml", "--replay", "--cassettes", "cassettes", "--out", out, "--workers", "1"
        )
    finally:
        os.chdir(cwd)
    return code, stdout + err


def test_a_changed_script_makes_the_replay_a_drift_and_record_drifted_rerecords_it(
    project: Path, tmp_path: Path
) -> None:
    code, out = _replay(project, "before")
    assert code == 0 and "gate: PASS" in out, out  # the unchanged script: nothing stale
    _edit_answer(project)
    code, out = _replay(project, "after")
    flat = " ".join(out.split())
    assert code == 1 and "recording drift" in flat and "the emulator script" in flat, out
    assert "portagent record suite.yaml --providers openai --emulator --drifted --case order-status" in flat
    report = json.loads((project / "after" / "report.json").read_text())
    (run,) = report["runs"]
    assert run["issue"] == "cassette_drift" and not run["passed"]
    gate = json.loads((project / "after" / "ci_gate.json").read_text())
    assert gate["blocked_by"] == ["drift"]
    assert [f["changed"] for f in gate["findings"] if f["category"] == "drift"] == [[SCRIPT_CHANGE]]

    env = {**os.environ, "PORTAGENT_HOME": str(tmp_path / "home")}
    done = _record(project, env, "--drifted")
    assert "1 recorded, 0 skipped" in done.stdout + done.stderr, done.stdout + done.stderr
    code, out = _replay(project, "rerecorded")  # the new recording holds the script's new answer
    flat = " ".join(out.split())
    assert code == 1 and "regression" in flat and "final output lacks: shipped" in flat, out
    assert "recording drift" not in flat


def test_reuse_makes_a_replay_again_when_the_script_changed(project: Path, tmp_path: Path) -> None:
    loaded = load_suite(project / "suite.yaml")
    (task,) = plan_runs(loaded, mode="replay", providers=["openai"], cassettes=project / "cassettes")
    task = dataclasses.replace(task, out_dir=tmp_path / "out" / "r0")
    before = Fingerprints().key(task)
    _edit_answer(project)
    assert before is not None and Fingerprints().key(task) not in (None, before)


def test_only_emulator_recordings_with_another_script_hash_are_stale(project: Path) -> None:
    run = json.loads((project / "cassettes/qa/qa@1.0.0/order-status/openai/r0/run.json").read_text())
    m = RunManifest.model_validate(run["manifest"])
    recorded = m.emulator_script_hash
    assert recorded and not script_changed(m, recorded) and script_changed(m, "0" * 16)
    assert not script_changed(m, None)  # nothing to compare with
    live = m.model_copy(update={"source": "live", "emulator_script_hash": None})
    assert not script_changed(live, "0" * 16)  # a --live recording keeps no script hash: never stale
    same = {"spec_hash": m.spec_hash, "policy_hash": m.policy_hash, "tool_hashes": m.tool_hashes}
    assert recording_changes(m, **same, script_hash="0" * 16) == [SCRIPT_CHANGE]
    assert recording_changes(m, **same, script_hash=recorded) == []
