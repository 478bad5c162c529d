"""The pytest plugin (entry point ``pytest11: portagent``): suite cases become test items that replay
their cassettes; failures carry the gate's notes. Runs in a subprocess (``runpytest_subprocess``): the
plugin's items replay in-process, and a fresh interpreter is what a user's ``pytest`` is."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _support import EXAMPLES, PYTESTER_INI, REPO, require_path

pytest_plugins = ["pytester"]

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
CASSETTES = REPO / "cassettes"


@pytest.fixture
def cassettes(pytester: pytest.Pytester) -> str:
    require_path(CASSETTES / "support-desk", "the demo's committed cassettes")
    pytester.makeini(PYTESTER_INI)
    return str(CASSETTES)


def test_suite_items_replay_green_for_the_baseline_located_at_their_case_line_and_in_junit(
    pytester: pytest.Pytester, cassettes: str
) -> None:
    """One pytest run of the baseline's items (was two: every item, then ``-k refund-rule`` for the
    locations): each item replays green, is located at its case's line in suite.yaml, and the JUnit XML
    carries that file and line."""
    lines = SUITE.read_text(encoding="utf-8").splitlines()
    refund_line = next(i for i, x in enumerate(lines, 1) if x.strip() == "- case_id: refund-rule")
    pytester.makeconftest(
        """
        def pytest_collection_finish(session):
            for item in session.items:
                path, line, name = item.location
                print("LOC", item.nodeid.split("::", 1)[1], line)
        """
    )
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--portagent-suite",
        str(SUITE),
        "--portagent-cassettes",
        cassettes,
        "--portagent-providers",
        "openai",
        "--portagent-agent",
        "baseline",
        "-v",
        "-s",
        f"--junitxml={junit}",
    )
    result.assert_outcomes(passed=28)  # 14 cases x 2 repeats: one item per case x provider x repeat
    result.stdout.fnmatch_lines(
        ["*suite.yaml::refund-rule?openai-r0? PASSED*", "*suite.yaml::refund-rule?openai-r1? PASSED*"]
    )
    # item.location's line is 0-based (pytest's convention): the case's own line in suite.yaml
    result.stdout.fnmatch_lines([f"LOC refund-rule[[]openai-r0[]] {refund_line - 1}"])
    import xml.etree.ElementTree as ET

    case = ET.parse(junit).getroot().find(".//testcase[@name='refund-rule[openai-r0]']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["file"] == str(SUITE) and props["line"] == str(refund_line)
    assert (props["case_id"], props["provider"], props["repeat"]) == ("refund-rule", "openai", "0")


def test_candidate_items_fail_with_the_gate_notes(pytester: pytest.Pytester, cassettes: str) -> None:
    result = pytester.runpytest_subprocess(
        "--portagent-suite",
        str(SUITE),
        "--portagent-cassettes",
        cassettes,
        "--portagent-providers",
        "openai",
        "--portagent-agent",
        "candidate",
        "-k",
        "email",
    )
    result.assert_outcomes(passed=0, failed=4, deselected=24)
    result.stdout.fnmatch_lines(
        [
            "*case email-reviewed on openai (agent support_desk@2.0.0): 0/1 runs passed*",
            "*r0: failed approval*",
            "*- approval expected but never requested*",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED *suite.yaml::email-reviewed?openai-r1?*"])
    assert "Traceback" not in result.stdout.str()


def test_missing_cassette_fails_with_the_record_command(pytester: pytest.Pytester) -> None:
    pytester.makeini(PYTESTER_INI)
    empty = pytester.mkdir("no_cassettes")
    result = pytester.runpytest_subprocess(
        "--portagent-suite",
        str(SUITE),
        "--portagent-cassettes",
        str(empty),
        "--portagent-providers",
        "adk",
        "-k",
        "refund-rule and 1.0.0",
    )
    result.assert_outcomes(failed=2, deselected=54)
    result.stdout.fnmatch_lines(["*cassette* missing for --replay*", "*portagent record * --providers adk*"])


def test_marker_parametrizes_a_test(pytester: pytest.Pytester, cassettes: str) -> None:
    pytester.makepyfile(
        test_desk=f"""
        import pytest

        @pytest.mark.portagent_suite({str(SUITE)!r}, providers=["adk"], cassettes={cassettes!r}, role="baseline")
        def test_desk(portagent_run):
            portagent_run.check()
            assert all(o.score.passed for o in portagent_run.outcomes)
    """
    )
    # all 28 items (14 cases x 2 repeats) are made by the marker; two of them run (ADK replays cost)
    result = pytester.runpytest_subprocess("-q", "-k", "refund-rule")
    result.assert_outcomes(passed=2, deselected=26)


def test_bad_suite_is_a_collection_error_without_traceback(pytester: pytest.Pytester) -> None:
    pytester.makeini(PYTESTER_INI)
    bad = pytester.makefile(".yaml", bad_suite="kind: suite\nschema_version: 1\nsuite_id: x\n")
    result = pytester.runpytest_subprocess("--portagent-suite", str(bad))
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*dataset_version*"])
    assert "Traceback" not in result.stdout.str()


def test_plugin_imports_no_sdk_and_no_eval_core() -> None:
    # loaded in every pytest run of a project that installs portagent: it must stay light
    code = (
        "import sys, portagent.pytest_plugin; heavy = [m for m in ('agents', 'google.adk', 'claude_agent_sdk', "
        "'vcr', 'portagent.evals', 'rich') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_record_then_replay_through_pytest(pytester: pytest.Pytester) -> None:
    import shutil

    import yaml

    pytester.makeini(PYTESTER_INI)
    agent = pytester.path / "desk"
    shutil.copytree(
        EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    suite = agent / "suite.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "kind": "suite",
                "schema_version": 1,
                "suite_id": "tiny",
                "dataset_version": "1",
                "owner": "tests",
                "agent": "agent.yaml",
                "providers": ["openai"],
                "emulator_script": "emulator.yaml",
                "cases": [
                    {
                        "case_id": "refund",
                        "input": "What is the refund deadline?",
                        "why_it_exists": "read-only",
                        "expect": {"final_must_contain": ["30 days"], "required_tools": ["search_policy"]},
                    },
                    {
                        "case_id": "refund-wrong",
                        "input": "What is the refund deadline?",
                        "why_it_exists": "an expectation the agent does not meet: recording must not hide it",
                        "expect": {"final_must_contain": ["45 days"]},
                    },
                ],
            }
        )
    )
    args = ["--portagent-suite", str(suite), "--portagent-cassettes", str(pytester.path / "cass")]
    recorded = pytester.runpytest_subprocess(*args, "--portagent-record")
    # --portagent-record scores what it recorded: the failing case fails while recording too.
    recorded.assert_outcomes(passed=1, failed=1)
    recorded.stdout.fnmatch_lines(
        ["*case refund-wrong on openai (agent support_desk@1.0.0, recorded): 0/1 runs passed*", "*45 days*"]
    )
    for case in ("refund", "refund-wrong"):
        assert (
            pytester.path / "cass" / "tiny" / "support_desk@1.0.0" / case / "openai" / "r0" / "cassette.yaml"
        ).is_file()
    replayed = pytester.runpytest_subprocess(*args)
    replayed.assert_outcomes(passed=1, failed=1)
    replayed.stdout.fnmatch_lines(["FAILED *suite.yaml::refund-wrong?openai-r0?*"])
