"""A judge's reply is a verdict only when it keeps the judge's own contract (QA, docs/judges.md).

Real ``portagent eval --emulator`` runs: the openai-agents SDK plays the agent and the judge against
portagent's emulator, whose judge script answers per case. A reply that breaks the judge's
``output_schema`` (no ``explanation``) and a rubric reply whose label and score name different anchors
were read as verdicts (the first passed a gating grader; the second's label was rewritten from its
score). Both must be no verdict, with an error naming what was wrong, and fail the run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from _support import run_cli
from test_judging import JUDGE  # the judge agent of the judge tests: label, score, explanation required

AGENT = {
    "kind": "agent",
    "schema_version": 1,
    "name": "helper",
    "version": "1.0.0",
    "instructions": "Answer briefly.",
    "models": {"openai": "gpt-4.1-mini"},
}
AGENT_SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "conversations": [
        {"name": name, "match": {"first_user": f"q {name}"}, "turns": [{"text": f"ANSWER-{name}"}]}
        for name in ("good", "noexpl", "rubric", "rubric_ok")
    ],
}


def _reply(answer: str, verdict: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "name": name,
        "match": {"first_user_regex": f"(?s)## Answer to grade\n{answer}"},
        "turns": [{"text": json.dumps(verdict)}],
    }


JUDGE_SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "defaults": {"usage": {"input_tokens": 300, "output_tokens": 30}},
    "conversations": [
        _reply("good answer", {"label": "pass", "score": 1, "explanation": "fine"}, "cal_pass"),
        _reply("bad answer", {"label": "fail", "score": 0, "explanation": "bad"}, "cal_fail"),
        _reply("ANSWER-good", {"label": "pass", "score": 0.9, "explanation": "right"}, "good"),
        _reply("ANSWER-noexpl", {"label": "pass", "score": 0.8}, "noexpl"),  # breaks the judge's schema
        _reply("ANSWER-rubric_ok", {"label": "1", "score": 1, "explanation": "names it"}, "rubric_ok"),
        _reply("ANSWER-rubric", {"label": "0", "score": 1, "explanation": "names none"}, "rubric"),
    ],
}

SUITE = {
    "kind": "suite",
    "schema_version": 1,
    "suite_id": "verdicts",
    "dataset_version": "1",
    "owner": "tests",
    "agent": "agent.yaml",
    "providers": ["openai"],
    "emulator_script": "emulator.yaml",
    "graders": [
        {
            "name": "correct",
            "type": "judge",
            "judge": "judge.yaml",
            "instructions": "Is it right?",
            "gate": True,
            "min_kappa": 0.5,
            "calibration": [
                {"input": "q", "answer": "good answer", "label": "pass"},
                {"input": "q", "answer": "bad answer", "label": "fail"},
                {"input": "q", "answer": "good answer 2", "label": "pass"},
                {"input": "q", "answer": "bad answer 2", "label": "fail"},
            ],
            "emulator_script": "judge_emulator.yaml",
        },
        {
            "name": "complete",
            "type": "rubric",
            "judge": "judge.yaml",
            "criteria": ["names the document"],
            "anchors": {0: "names none", 0.5: "vague", 1: "names it"},
            "emulator_script": "judge_emulator.yaml",
        },
    ],
    "cases": [
        {
            "case_id": "c_good",
            "input": "q good",
            "why_it_exists": "a verdict",
            "expect": {"graders": ["correct"]},
        },
        {
            "case_id": "c_noexpl",
            "input": "q noexpl",
            "why_it_exists": "a reply without explanation",
            "expect": {"graders": ["correct"]},
        },
        {
            "case_id": "c_rubric_ok",
            "input": "q rubric_ok",
            "why_it_exists": "a rubric verdict",
            "expect": {"graders": ["complete"]},
        },
        {
            "case_id": "c_rubric",
            "input": "q rubric",
            "why_it_exists": "label and score disagree",
            "expect": {"graders": ["complete"]},
        },
    ],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("verdicts")
    for name, doc in (
        ("agent.yaml", AGENT),
        ("judge.yaml", JUDGE),
        ("emulator.yaml", AGENT_SCRIPT),
        ("judge_emulator.yaml", JUDGE_SCRIPT),
        ("suite.yaml", SUITE),
    ):
        (root / name).write_text(yaml.safe_dump(doc, sort_keys=False))
    out = root / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PORTAGENT_HOME", str(root / "home"))
        code, stdout, err = run_cli(
            "eval",
            str(root / "suite.yaml"),
            "--emulator",
            "--out",
            str(out),
            "--workers",
            "1",
            "--no-progress",
        )
    assert code in (0, 1), stdout + err
    runs = json.loads((out / "report.json").read_text())["runs"]
    return {r["provenance"]["case_id"]: r for r in runs}


def _grader(run: dict[str, Any]) -> dict[str, Any]:
    (g,) = run["graders"]
    return dict(g)


def test_a_valid_verdict_is_read(report: dict[str, dict[str, Any]]) -> None:
    g = _grader(report["c_good"])
    assert (g["label"], g["score"], g["passed"], g["gate"], g["error"]) == ("pass", 0.9, True, True, None)
    g = _grader(report["c_rubric_ok"])
    assert (g["label"], g["score"], g["passed"], g["error"]) == ("1", 1.0, True, None)


def test_a_reply_breaking_the_judges_schema_is_no_verdict_and_fails_the_gate(
    report: dict[str, dict[str, Any]],
) -> None:
    run = report["c_noexpl"]
    g = _grader(run)
    assert (g["label"], g["score"], g["passed"], g["gate"]) == (None, None, False, True)
    assert "breaks its output_schema" in g["error"] and "'explanation' is a required property" in g["error"]
    assert run["passed"] is False


def test_a_rubric_label_that_contradicts_its_score_is_no_verdict(report: dict[str, dict[str, Any]]) -> None:
    g = _grader(report["c_rubric"])
    assert (g["label"], g["score"], g["passed"]) == (None, None, False)
    assert "label '0' and score 1 name different anchors" in g["error"]
