"""A gate that blocks only because the provider failed, or because runs could not be made (a worker died),
exits 3, not 1: nothing about the agent was measured, and a CI job can tell "retry later" from "the agent
regressed" (README exit codes: 3 is a provider or runtime error). Such a run is never labelled a
regression. A provider error beside a real regression or a drift stays 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _evals_trace import Trace
from _support import EXAMPLES, portagent_home, run_cli

from portagent.contracts.suite import Case
from portagent.contracts.trace import ErrorEvent, RunCompleted
from portagent.evals import SuiteResult, gate, score_run

CASE = Case.model_validate(
    {"case_id": "c1", "input": "x", "why_it_exists": "t", "expect": {"final_must_contain": ["ok"]}}
)


def _run(case_id: str, outcome: str, repeat: int = 0) -> Any:
    t = Trace(case_id=case_id, repeat=repeat).started()
    t.model()
    if outcome == "run_error":  # what the eval makes of a run whose worker died (eval_execute.unrunnable)
        score = score_run([], CASE.model_copy(update={"case_id": case_id}))
        return score.model_copy(
            update={"issue": "run_error", "notes": ["run could not be made: worker died"]}
        )
    if outcome == "provider_error":
        t._add(ErrorEvent, error_type="ProviderError", message="HTTP 500 from the provider")
        t._add(RunCompleted, status="failed", stop_reason="provider_error", cost_usd=0.0, duration_ms=9.0)
    elif outcome == "drift":
        t._add(ErrorEvent, error_type="CassetteDrift", message="cassette drift: the SDK sent POST /v1/x")
        t._add(RunCompleted, status="failed", stop_reason="cassette_drift", cost_usd=0.0, duration_ms=9.0)
    else:
        final = "ok" if outcome == "pass" else "no"
        t._add(
            RunCompleted, status="completed", stop_reason="final_output", final_output=final, duration_ms=9.0
        )
    return score_run(t.events, CASE.model_copy(update={"case_id": case_id}))


def _gate(*runs: tuple[str, str]) -> Any:
    cases = [CASE.model_copy(update={"case_id": c}) for c in sorted({c for c, _ in runs})]
    return gate(SuiteResult.from_runs("s", "d", [_run(c, o) for c, o in runs], cases))


@pytest.mark.parametrize(
    ("runs", "code"),
    [
        ([("c1", "provider_error")], 3),
        ([("c1", "provider_error"), ("c2", "pass")], 3),
        ([("c1", "provider_error"), ("c2", "fail")], 1),
        ([("c1", "provider_error"), ("c2", "drift")], 1),
        ([("c1", "run_error")], 3),
        ([("c1", "run_error"), ("c2", "provider_error")], 3),
        ([("c1", "run_error"), ("c2", "fail")], 1),
        ([("c1", "fail")], 1),
        ([("c1", "pass")], 0),
    ],
    ids=[
        "all-down",
        "down-and-pass",
        "down-and-regression",
        "down-and-drift",
        "not-made",
        "not-made-and-down",
        "not-made-and-regression",
        "regression",
        "pass",
    ],
)
def test_the_exit_code_says_whether_the_agent_or_the_provider_failed(
    runs: list[tuple[str, str]], code: int
) -> None:
    assert _gate(*runs).exit_code == code


def _support_desk(tmp_path: Path) -> Path:
    work = tmp_path / "sd"
    shutil.copytree(EXAMPLES / "support_desk", work, ignore=shutil.ignore_patterns("__pycache__"))
    return work


def test_eval_against_a_provider_that_always_fails_exits_3(tmp_path: Path) -> None:
    """Through the CLI: every model request gets HTTP 500 (after the SDK's own retries)."""
    work = _support_desk(tmp_path)
    script = yaml.safe_load((work / "emulator.yaml").read_text())
    for conversation in script["conversations"]:
        for turn in conversation["turns"]:
            turn["fault"] = {"type": "http_500", "retry_after_s": 0.01}
    (work / "emulator.yaml").write_text(yaml.safe_dump(script))
    out = tmp_path / "results"
    with portagent_home(tmp_path / "home"):
        code, stdout, err = run_cli(
            "eval", str(work / "suite.yaml"), "--emulator", "--providers", "openai", "--case", "refund-rule",
            "--repeats", "1", "--no-progress", "--workers", "1", "--out", str(out),
        )  # fmt: skip
    assert code == 3, stdout + err
    decision = json.loads((out / "ci_gate.json").read_text())
    assert decision["decision"] == "block" and decision["blocked_by"] == ["provider_error"]


def test_a_run_whose_worker_died_is_a_run_error_not_a_regression(tmp_path: Path) -> None:
    """Through the CLI: the tool handler kills its worker process mid-run (a segfault's effect)."""
    work = _support_desk(tmp_path)
    handlers = work / "support_desk_handlers.py"
    handlers.write_text(
        handlers.read_text().replace("def search_policy(", "def _search_policy(")
        + "\n\ndef search_policy(*args, **kwargs):\n    import os\n\n    os._exit(9)\n"
    )
    out = tmp_path / "results"
    with portagent_home(tmp_path / "home"):
        code, stdout, err = run_cli(
            "eval", str(work / "suite.yaml"), "--emulator", "--providers", "openai", "--case", "refund-rule",
            "--repeats", "1", "--no-progress", "--workers", "1", "--out", str(out),
        )  # fmt: skip
    assert code == 3, stdout + err
    decision = json.loads((out / "ci_gate.json").read_text())
    assert decision["blocked_by"] == ["run_error"], decision["reasons"]
    assert decision["reasons"][0].startswith("run error: case refund-rule on openai"), decision["reasons"]
    assert "worker" in decision["reasons"][0] and "died" in decision["reasons"][0]
