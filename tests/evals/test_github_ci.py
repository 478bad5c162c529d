"""CI fit (issue 21): JUnit testcases carry the file and line of their case, and under
``GITHUB_ACTIONS=true`` ``portagent eval`` and ``portagent gate`` write ``::error file=…,line=…::``
annotations (the file that holds the case and the line of its ``case_id``) and a Markdown job summary
to ``$GITHUB_STEP_SUMMARY``. Driven through the CLI on a copy of the support-desk example, run on the
emulator with the real openai-agents SDK."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from _support import EXAMPLES, run_cli

CASES = [
    {
        "case_id": "refund",
        "input": "What is the refund deadline?",
        "why_it_exists": "read-only answer",
        "expect": {"final_must_contain": ["30 days"], "required_tools": ["search_policy"], "approval": False},
    },
    {
        "case_id": "refund_wrong",
        "input": "What is the refund deadline?",
        "why_it_exists": "a case written to fail: the answer never says this",
        "expect": {"final_must_contain": ["ninety-nine days"]},
    },
]
FILE_CASE = {
    "case_id": "status_wrong",
    "input": "What is missing from my case EXP-42?",
    "why_it_exists": "a case in a case file, written to fail",
    "expect": {"final_must_contain": ["a passport photo in colour"]},
}


def line_of(path: Path, case_id: str) -> int:
    """The 1-based line where the mapping holding ``case_id: <case_id>`` starts (a list item: its dash)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.strip().lstrip("- ") == f"case_id: {case_id}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ci")
    agent = root / "agent"
    shutil.copytree(
        EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    (agent / "cases").mkdir()
    (agent / "cases" / "more.yaml").write_text(yaml.safe_dump([FILE_CASE], sort_keys=False))
    suite = {
        "kind": "suite",
        "schema_version": 1,
        "suite_id": "ci",
        "dataset_version": "1",
        "owner": "tests",
        "agent": "agent.yaml",
        "providers": ["openai"],
        "repeats": 1,
        "emulator_script": "emulator.yaml",
        "cases": CASES,
        "case_files": ["cases/more.yaml"],
    }
    (agent / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    return root


@pytest.fixture(scope="module")
def evaluated(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    summary = tmp_path_factory.mktemp("gh") / "summary.md"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PORTAGENT_HOME", str(project / "home"))
        mp.setenv("GITHUB_ACTIONS", "true")
        mp.setenv("GITHUB_WORKSPACE", str(project))
        mp.setenv("GITHUB_STEP_SUMMARY", str(summary))
        code, out, err = run_cli(
            "eval",
            str(project / "agent" / "suite.yaml"),
            "--emulator",
            "--out",
            str(project / "results"),
            "--workers",
            "1",
            "--no-progress",
        )
    return {"code": code, "out": out, "err": err, "summary": summary}


def test_eval_annotates_each_failing_case_at_its_file_and_line(project: Path, evaluated: dict) -> None:
    assert evaluated["code"] == 1, evaluated["err"]  # the gate blocks
    errors = [line for line in str(evaluated["out"]).splitlines() if line.startswith("::error ")]
    suite = project / "agent" / "suite.yaml"
    more = project / "agent" / "cases" / "more.yaml"
    expected = {
        f"::error file=agent/suite.yaml,line={line_of(suite, 'refund_wrong')},title=portagent ci%3A refund_wrong [openai]::",
        f"::error file=agent/cases/more.yaml,line={line_of(more, 'status_wrong')},title=portagent ci%3A status_wrong [openai]::",
    }
    assert {e.partition("::")[0] + "::" + e.split("::")[1] + "::" for e in errors} == expected
    assert all("ninety-nine days" in e for e in errors if "refund_wrong" in e)
    assert not any("title=portagent ci%3A refund [" in e for e in errors)  # the passing case is quiet


def test_eval_writes_a_markdown_job_summary(project: Path, evaluated: dict) -> None:
    text = Path(str(evaluated["summary"])).read_text(encoding="utf-8")
    assert text.startswith("## portagent gate: BLOCK")
    suite_line = line_of(project / "agent" / "suite.yaml", "refund_wrong")
    assert f"| refund_wrong | openai | `agent/suite.yaml:{suite_line}` |" in text
    assert "`agent/cases/more.yaml:" in text


def test_gate_annotates_too_and_appends_to_the_summary(
    project: Path, evaluated: dict, tmp_path: Path, monkeypatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(project))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run_cli("gate", str(project / "results"), "--out", str(tmp_path / "gate.json"))
    assert code == 1, err
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2 and all(",line=" in e for e in errors)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n") and "## portagent gate: BLOCK" in text  # appended, not replaced


def test_no_annotations_outside_github_actions(
    project: Path, evaluated: dict, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    code, out, _ = run_cli("gate", str(project / "results"), "--out", str(tmp_path / "gate.json"))
    assert code == 1 and "::error" not in out


def test_an_unwritable_summary_is_one_warning_not_a_failure(
    project: Path, evaluated: dict, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing-dir" / "summary.md"))
    code, out, err = run_cli("gate", str(project / "results"), "--out", str(tmp_path / "gate.json"))
    assert code == 1  # the gate's own answer, unchanged
    assert "warning: cannot write the job summary" in err and "Traceback" not in err
    assert "::error " in out


def test_junit_testcases_carry_the_file_and_line_of_their_case(
    project: Path, evaluated: dict, monkeypatch
) -> None:
    root = ET.parse(project / "results" / "junit.xml").getroot()
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(cases) == {"refund", "refund_wrong", "status_wrong"}
    suite = project / "agent" / "suite.yaml"
    for name in ("refund", "refund_wrong"):
        assert cases[name].get("file", "").endswith("agent/suite.yaml")
        assert cases[name].get("line") == str(line_of(suite, name))
    more = project / "agent" / "cases" / "more.yaml"
    assert cases["status_wrong"].get("file", "").endswith("agent/cases/more.yaml")
    assert cases["status_wrong"].get("line") == str(line_of(more, "status_wrong"))
    assert cases["refund_wrong"].find("failure") is not None and cases["refund"].find("failure") is None
