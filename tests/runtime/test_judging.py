"""Graders (issue 17): judge, rubric and pairwise graders judged by a portagent agent, recorded with the
suite's runs and replayed offline; calibration against human labels; a judge gates only above its
declared agreement.

The judge is the real openai-agents SDK against portagent's emulator, whose script plays the judge:
its verdict depends on what the judge was sent (the answer in the prompt), so a verdict proves what
the SDK carried to the judge model. The module records once (baseline + candidate, openai) and every
test replays that recording offline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import EXAMPLES, run_cli

JUDGE = {
    "kind": "agent",
    "schema_version": 1,
    "name": "answer_judge",
    "version": "1.0.0",
    "instructions": "You grade a support agent's answers. Reply with a verdict only.",
    "models": {"openai": "gpt-4.1-mini"},
    "output_schema": {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "score": {"type": "number"},
            "explanation": {"type": "string"},
        },
        "required": ["label", "score", "explanation"],
        "additionalProperties": False,
    },
}


def _verdict(label: str, score: float, why: str) -> dict[str, Any]:
    return {"text": json.dumps({"label": label, "score": score, "explanation": why})}


# The emulator plays the judge: the first conversation whose regex matches the prompt answers.
JUDGE_SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "judge",
    "defaults": {"usage": {"input_tokens": 300, "output_tokens": 30}},
    "conversations": [
        {
            "name": "correct_pass",
            "match": {
                "first_user_regex": r"(?s)^Grader: correct \(judge\).*## Answer to grade\n[^#]*30 days"
            },
            "turns": [_verdict("pass", 0.9, "States the 30-day refund deadline.")],
        },
        {
            "name": "correct_fail",
            "match": {"first_user_regex": r"^Grader: correct \(judge\)"},
            "turns": [_verdict("fail", 0.1, "Does not state the deadline.")],
        },
        {
            "name": "complete_full",
            "match": {"first_user_regex": r"(?s)^Grader: complete \(rubric\).*## Answer to grade\n[^#]*DNI"},
            "turns": [_verdict("1", 1, "Names the missing DNI.")],
        },
        {
            "name": "complete_none",
            "match": {"first_user_regex": r"^Grader: complete \(rubric\)"},
            "turns": [_verdict("0", 0, "Names no document.")],
        },
        {  # a judge that always prefers the answer shown first: pairwise must expose it
            "name": "better_first",
            "match": {"first_user_regex": r"^Grader: better \(pairwise\)"},
            "turns": [_verdict("1", 0.6, "Answer 1 reads better.")],
        },
    ],
}

CALIBRATION = [
    {
        "input": "What is the refund deadline?",
        "answer": "Refunds are accepted within 30 days.",
        "label": "pass",
    },
    {"input": "What is the refund deadline?", "answer": "I am not sure, ask the office.", "label": "fail"},
    {"input": "What is the refund deadline?", "answer": "Within 30 days (handbook H-1).", "label": "pass"},
    {"input": "What is the refund deadline?", "answer": "There is no deadline.", "label": "fail"},
]

SUITE = {
    "kind": "suite",
    "schema_version": 1,
    "suite_id": "judged",
    "dataset_version": "1",
    "owner": "tests",
    "baseline": "agent.yaml",
    "candidate": "agent_v2.yaml",
    "providers": ["openai"],
    "emulator_script": "emulator.yaml",
    "graders": [
        {
            "name": "correct",
            "type": "judge",
            "judge": "judge.yaml",
            "provider": "openai",
            "instructions": "Does the answer state the refund deadline correctly?",
            "gate": True,
            "min_kappa": 0.6,
            "calibration": CALIBRATION,
            "emulator_script": "judge_emulator.yaml",
        },
        {
            "name": "better",
            "type": "pairwise",
            "judge": "judge.yaml",
            "instructions": "Which answer helps the student more?",
            "emulator_script": "judge_emulator.yaml",
        },
    ],
    "cases": [
        {
            "case_id": "refund",
            "input": "What is the refund deadline?",
            "why_it_exists": "read-only answer",
            "expect": {"required_tools": ["search_policy"], "graders": ["correct", "better"]},
        },
        {
            "case_id": "status",
            "input": "What is missing from my case EXP-42?",
            "why_it_exists": "record lookup",
            "expect": {
                "required_tools": ["get_student_record"],
                "graders": [
                    {
                        "name": "complete",
                        "type": "rubric",
                        "judge": "judge.yaml",
                        "criteria": ["names the missing document"],
                        "anchors": {0: "names no document", 0.5: "vague", 1: "names the document"},
                        "threshold": 1,
                        "emulator_script": "judge_emulator.yaml",
                    },
                    "better",
                ],
            },
        },
    ],
}


def write_suite(folder: Path, name: str = "suite.yaml", **changes: Any) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({**SUITE, **changes}, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("judged")
    agent = root / "agent"
    shutil.copytree(
        EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    (agent / "judge.yaml").write_text(yaml.safe_dump(JUDGE, sort_keys=False))
    (agent / "judge_emulator.yaml").write_text(yaml.safe_dump(JUDGE_SCRIPT, sort_keys=False))
    suite = write_suite(agent)
    cassettes = root / "cassettes"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PORTAGENT_HOME", str(root / "home"))
        code, out, err = run_cli("record", str(suite), "--emulator", "--out", str(cassettes), "--no-verify")
    assert code == 0, out + err
    # 4 agent runs; judge runs: 4 verdicts + 4 pair orders (2 cases) + 4 calibration answers
    assert "16 recorded, 0 skipped, 0 failed" in out, out
    return {"root": root, "agent": agent, "suite": suite, "cassettes": cassettes}


def _eval(judged: dict[str, Path], out: Path, *extra: str, suite: Path | None = None) -> tuple[int, str, str]:
    return run_cli(
        "eval",
        str(suite or judged["suite"]),
        "--replay",
        "--cassettes",
        str(judged["cassettes"]),
        "--out",
        str(out),
        "--workers",
        "1",
        "--no-progress",
        *extra,
    )


def test_judge_prompt_carries_the_recorded_answer(judged: dict[str, Path]) -> None:
    """What the SDK sent to the judge model (its cassette) holds the agent's recorded answer, blind."""
    folder = judged["cassettes"] / "judged" / "answer_judge@1.0.0"
    verdict = folder / "correct.refund.1.0.0.openai.r0" / "openai" / "r0"
    agent_run = judged["cassettes"] / "judged" / "support_desk@1.0.0" / "refund" / "openai" / "r0"
    answer = json.loads((agent_run / "run.json").read_text())["result"]["final_output"]
    (interaction,) = yaml.safe_load((verdict / "cassette.yaml").read_text())["interactions"]
    body = json.loads(interaction["request"]["body"])
    prompt = body["input"][0]["content"]
    assert prompt.startswith("Grader: correct (judge)") and "30 days" in answer
    assert f"## Answer to grade\n{answer}\n" in prompt  # the recorded answer, as sent to the judge
    assert "support_desk" not in prompt and "openai" not in prompt  # blind to who answered
    pairs = sorted(p.name for p in folder.iterdir() if p.name.startswith("better."))
    assert pairs == [
        "better.refund.openai.r0.ab",
        "better.refund.openai.r0.ba",
        "better.status.openai.r0.ab",
        "better.status.openai.r0.ba",
    ]


def test_eval_replays_judges_offline_and_reports_them(judged: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "results"
    code, stdout, err = _eval(judged, out)
    assert code == 0, stdout + err
    report = json.loads((out / "report.json").read_text())
    runs = {(r["provenance"]["agent_version"], r["provenance"]["case_id"]): r for r in report["runs"]}
    refund = runs[("1.0.0", "refund")]
    (verdict,) = refund["graders"]
    assert verdict["label"] == "pass" and verdict["gate"] is True and verdict["passed"] is True
    assert verdict["explanation"] == "States the 30-day refund deadline."
    assert refund["checks"]["judge"] is True
    status = runs[("2.0.0", "status")]
    (rubric,) = status["graders"]
    assert (rubric["type"], rubric["label"], rubric["score"], rubric["gate"]) == ("rubric", "1", 1.0, False)
    assert "judge" not in status["checks"]  # a grader that does not gate is reported only
    judging = report["judging"]
    # judging cost is its own: 4 verdicts + 4 pair orders + 4 calibration answers
    assert judging["runs"] == 12 and judging["cost_usd"] > 0
    # every judge run's tokens, the calibration's included (the judge script: 300 in, 30 out per run)
    assert (judging["input_tokens"], judging["output_tokens"], judging["cost_unknown"]) == (3600, 360, 0)
    agent_cost = sum(r["cost_usd"] for r in report["runs"])
    assert abs(sum(g["total_cost_usd"] for g in report["by_provider"]) - agent_cost) < 1e-9
    (cal,) = judging["calibration"]
    assert (cal["accuracy"], cal["kappa"], cal["eligible"]) == (1.0, 1.0, True)
    assert (cal["runs"], cal["input_tokens"], cal["output_tokens"]) == (4, 1200, 120)
    # the judge always picks answer 1: every pair is order-dependent, position bias +1
    pair = next(p for p in judging["pairwise"] if p["case_id"] == "refund")
    assert (pair["wins_a"], pair["wins_b"], pair["inconsistent"]) == (0, 0, 1)
    assert (pair["first_position_picks"], pair["second_position_picks"]) == (2, 0)
    md = (out / "report.md").read_text()
    assert "## Judges" in md and "position bias +1.00" in md and "States the 30-day refund deadline." in md
    assert "judging: 12 judge run(s)" in stdout
    assert (out / "judges" / "answer_judge@1.0.0").is_dir()  # judge traces kept with the results


def test_calibrate_reports_agreement(judged: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cal"
    code, stdout, err = _eval(judged, out, "--calibrate")
    assert code == 0, stdout + err
    assert "accuracy 1.000, Cohen's kappa 1.000 (min_kappa 0.6)" in stdout
    data = json.loads((out / "calibration.json").read_text())
    (g,) = data["graders"]
    assert g["confusion"] == {"pass": {"pass": 2, "fail": 0}, "fail": {"pass": 0, "fail": 2}}


def test_a_judge_below_its_declared_agreement_may_not_gate(judged: dict[str, Path], tmp_path: Path) -> None:
    # the human calls the 4th answer a pass; the judge does not: kappa 0.5 < 0.6 — same recordings
    graders = json.loads(json.dumps(SUITE["graders"]))
    graders[0]["calibration"][3]["label"] = "pass"
    suite = write_suite(judged["agent"], "suite_disagree.yaml", graders=graders)
    out = tmp_path / "refused"
    # the human's label is not in the judge's prompt: the recorded judge runs replay as they are
    code, stdout, err = _eval(judged, out, suite=suite)
    assert code == 2, stdout + err
    assert "grader correct may not gate: kappa 0.500, accuracy 0.750" in err
    assert "set gate: false" in err and "Traceback" not in err
    assert not out.exists()  # refused before the results folder was touched
    code, stdout, _ = _eval(judged, tmp_path / "cal", "--calibrate", suite=suite)
    assert (
        code == 1 and "may NOT gate" in stdout and "disagrees on example 3: human pass, judge fail" in stdout
    )


def test_a_missing_judge_recording_names_the_record_command(judged: dict[str, Path], tmp_path: Path) -> None:
    graders = json.loads(json.dumps(SUITE["graders"]))
    graders[0]["calibration"][3]["answer"] = "Deadlines? None that I know of."  # a new prompt
    suite = write_suite(judged["agent"], "suite_new_example.yaml", graders=graders)
    code, stdout, err = _eval(judged, tmp_path / "x", suite=suite)
    assert code == 1 and "1 judge recording(s) missing for --replay" in err
    assert f"portagent record {suite} --emulator" in err and "--missing" in err
    assert not (tmp_path / "x").exists()


def test_judge_without_verdict_schema_is_refused(judged: dict[str, Path], tmp_path: Path) -> None:
    bad = {**JUDGE, "output_schema": None}
    (judged["agent"] / "judge_plain.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
    graders = json.loads(json.dumps(SUITE["graders"]))
    graders[1]["judge"] = "judge_plain.yaml"
    suite = write_suite(judged["agent"], "suite_plain.yaml", graders=graders)
    code, stdout, err = _eval(judged, tmp_path / "x", suite=suite)
    assert code == 2 and "grader better: judge judge_plain.yaml cannot judge: it has no output_schema" in err
    assert "Traceback" not in err and not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"graders": [{**SUITE["graders"][0], "min_kappa": None}]}, "gate: true needs calibration"),
        (
            {"cases": [{**SUITE["cases"][0], "expect": {"graders": ["nope"]}}]},
            "unknown grader 'nope'",
        ),
        (
            {"graders": [{**SUITE["graders"][1], "type": "rubric", "anchors": {0: "a", 1: "b"}}]},
            "anchors must be exactly 0, 0.5 and 1",
        ),
    ],
)
def test_grader_spec_mistakes_are_one_message(
    judged: dict[str, Path], tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    suite = write_suite(judged["agent"], "suite_bad.yaml", **change)
    code, stdout, err = _eval(judged, tmp_path / "x", suite=suite)
    assert code in (1, 2) and message in err and "Traceback" not in err, err


def test_judge_runs_the_spend_cap_never_started_are_not_counted(
    judged: dict[str, Path], tmp_path: Path
) -> None:
    """A judge run the eval never started (``not_run``: the spend cap was reached) cost nothing and used no
    tokens: the judging block counts only the runs made, as its tokens show."""
    out = tmp_path / "capped"
    code, stdout, err = _eval(judged, out, "--max-spend-usd", "0.0001")
    assert "Traceback" not in err, err
    report = json.loads((out / "report.json").read_text())
    judging = report["judging"]
    made = judging["input_tokens"] // 300
    assert judging["runs"] == made and judging["output_tokens"] == 30 * made, judging
    assert judging["cost_unknown"] == 0, judging  # a run never started has no unknown cost either
    assert 4 <= made < 12, judging  # calibration ran; the cap stopped some judge runs, not counted as made


def test_calibrate_names_a_calibrated_grader_no_case_uses(judged: dict[str, Path], tmp_path: Path) -> None:
    """``--calibrate`` measures the graders the cases use: a suite whose only calibrated grader no case
    names is told that, not that no grader has human labels."""
    cases = [{**c, "expect": {**c["expect"], "graders": ["better"]}} for c in SUITE["cases"]]
    suite = write_suite(judged["agent"], "suite_unnamed.yaml", cases=cases)
    code, stdout, err = _eval(judged, tmp_path / "cal", "--calibrate", suite=suite)
    assert code == 2 and "Traceback" not in err, stdout + err
    assert "no case names correct" in err and "expect.graders" in err and "none of" not in err
