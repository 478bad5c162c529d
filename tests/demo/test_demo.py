"""The demo end to end: ``portagent demo`` replays the committed cassettes offline; agent-v1 is green,
the gate blocks agent-v2 for the reasons its policy causes; every report it writes is checked
(report.json against its published schema, JUnit, Markdown, report.html in headless Chromium).

The demo runs once per module in a subprocess (a fresh interpreter, like a user's shell).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from _browser import open_page, require_chromium
from _support import REPO, require_path, run_cli
from jsonschema import Draft202012Validator

from portagent.evals import SuiteResult
from portagent.evals.report import gate_schema, report_schema

CASSETTES = REPO / "cassettes" / "support-desk"
SCHEMAS = REPO / "docs" / "schemas"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    require_path(CASSETTES, "the demo's committed cassettes")
    tmp = tmp_path_factory.mktemp("demo")
    out = tmp / "results"
    env = {**os.environ, "PORTAGENT_HOME": str(tmp / "home")}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        env.pop(key, None)  # offline: no key needed, none used
    proc = subprocess.run(
        [sys.executable, "-m", "portagent", "demo", "--out", str(out)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return {
        "rc": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "out": out,
        "result": SuiteResult.model_validate_json((out / "report.json").read_text())
        if out.is_dir()
        else None,
    }


def test_demo_runs_offline_and_prints_the_verdict(demo: dict[str, Any]) -> None:
    assert demo["rc"] == 0, demo["stdout"] + demo["stderr"]
    text = demo["stdout"]
    assert "1.0.0 (baseline)" in text and "(candidate)" in text  # the providers × versions table
    assert "gate: BLOCK" in text and "2.0.0 cannot replace 1.0.0" in text
    assert "As expected" in text and "report.html" in text
    assert "Traceback" not in demo["stderr"]


def test_agent_v1_is_green_on_every_recorded_provider(demo: dict[str, Any]) -> None:
    result: SuiteResult = demo["result"]
    v1 = result.select(agent_version="1.0.0")
    assert {"openai", "adk"} <= set(v1.providers)
    failing = [(r.provenance.case_id, r.provenance.provider, r.notes) for r in v1.runs if not r.passed]
    assert failing == []
    assert len({r.provenance.case_id for r in v1.runs}) >= 12
    # replays of emulator recordings, labelled as such (issue 15: a replay keeps its recording's source)
    assert all(
        (r.provenance.source, r.provenance.recorded_source) == ("replay", "emulator") for r in result.runs
    )


def test_gate_blocks_agent_v2_for_its_policy(demo: dict[str, Any]) -> None:
    gate = json.loads((demo["out"] / "ci_gate.json").read_text())
    assert gate["decision"] == "block" and gate["passed"] is False
    reasons = "\n".join(gate["reasons"])
    for provider in demo["result"].providers:
        # the email now leaves without review: approval expected, never requested
        assert (
            f"case email-reviewed on {provider} (agent 2.0.0): 0/2 runs passed; failed approval: "
            "approval expected but never requested"
        ) in reasons
        # and an outside address is no longer denied by the policy: the email runs (a permission
        # violation of the case's must_not_execute), whatever the final answer says
        assert f"case email-outside-denied on {provider} (agent 2.0.0)" in reasons
        assert f"regression on {provider}: case email-outside-denied passed 1 → 0" in reasons
        assert f"regression on {provider}: case email-reviewed passed 1 → 0" in reasons
    regressions = {(g["case_id"], g["permanent"]) for g in gate["regressions"]}
    assert regressions == {("email-reviewed", True), ("email-outside-denied", True)}
    assert "send_email executed although the case says it must not run" in json.dumps(gate)
    # nothing else regressed: every other case passes on v2 as on v1
    v2 = demo["result"].select(agent_version="2.0.0")
    assert {r.provenance.case_id for r in v2.runs if not r.passed} == {
        "email-reviewed",
        "email-outside-denied",
    }


def test_idempotent_retry_is_not_a_permission_violation(demo: dict[str, Any]) -> None:
    runs = [r for r in demo["result"].runs if r.provenance.case_id == "idempotent-retry"]
    assert runs and all(r.passed and not r.permission_violation for r in runs)
    assert all(r.tools == ["create_ticket", "create_ticket"] for r in runs)


def test_report_json_validates_against_the_published_schema(demo: dict[str, Any]) -> None:
    schema = json.loads((SCHEMAS / "report.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    data = json.loads((demo["out"] / "report.json").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(data))
    assert errors == []
    assert data["kind"] == "suite-result" and data["schema_version"] == 2
    gate = json.loads((SCHEMAS / "ci_gate.schema.json").read_text())
    assert (
        list(Draft202012Validator(gate).iter_errors(json.loads((demo["out"] / "ci_gate.json").read_text())))
        == []
    )


def test_published_schemas_match_the_models() -> None:
    assert json.loads((SCHEMAS / "report.schema.json").read_text()) == report_schema(), (
        "docs/schemas/report.schema.json is stale: regenerate it from portagent.evals.report.report_schema()"
    )
    assert json.loads((SCHEMAS / "ci_gate.schema.json").read_text()) == gate_schema()


def test_report_html_opens_in_chromium_without_errors(demo: dict[str, Any]) -> None:
    browser = require_chromium()
    page = demo["out"] / "report.html"
    report = open_page(
        browser,
        page,
        """({
        providers: Array.from(document.querySelectorAll('#providers tr.provider-row')).map(r => r.dataset.provider),
        verdict: document.getElementById('verdict').textContent,
        runs: document.querySelectorAll('details.run').length,
        badges: [...document.querySelectorAll('details.run .badge.replay')]
            .filter(b => b.textContent === 'replay (emulator)').length,
        counter: document.getElementById('f-count').textContent
    })""",
    )
    assert report.exceptions == [] and report.console_errors == []
    assert all(u.startswith(("file:", "data:", "about:")) for u in report.requests), (
        report.requests
    )  # no network
    value = report.value
    assert sorted(value["providers"]) == sorted(demo["result"].providers)  # one row per provider
    assert "BLOCK" in value["verdict"]
    n = len(demo["result"].runs)
    assert value["runs"] == n and value["badges"] == n  # provenance on every run
    assert value["counter"] == f"{n} of {n} runs"  # the filter script ran


def test_the_browser_check_would_catch_a_broken_page(demo: dict[str, Any], tmp_path: Path) -> None:
    browser = require_chromium()
    broken = tmp_path / "broken.html"
    broken.write_text(
        (demo["out"] / "report.html")
        .read_text()
        .replace("</body>", "<script>console.error('bad'); undefinedFunction();</script></body>")
    )
    report = open_page(browser, broken, "1")
    assert report.console_errors and report.exceptions


def test_report_html_is_self_contained(demo: dict[str, Any]) -> None:
    html = (demo["out"] / "report.html").read_text()
    for needle in ("http://", "https://", "<link", "src=", "@import"):
        assert needle not in html.replace("https://json-schema.org", ""), needle


def test_junit_has_a_testcase_per_judged_case_provider_and_per_metric_finding(demo: dict[str, Any]) -> None:
    """The candidate's cases (what the gate judged; the baseline is the reference) and, in the gate
    testsuite, every blocking finding about no single case: junit fails on every reason ci_gate.json has."""
    root = ET.parse(demo["out"] / "junit.xml").getroot()
    result: SuiteResult = demo["result"]
    cases = {r.provenance.case_id for r in result.runs}
    testcases = root.findall(".//testcase")
    assert len(testcases) == int(root.get("tests", "0"))
    case_tcs = [tc for tc in testcases if tc.get("classname") != "support-desk.gate"]
    assert len(case_tcs) == len(cases) * len(result.providers)
    assert {tc.get("classname", "").split(".")[1] for tc in case_tcs} == {"2"}  # support-desk.2.0.0.<p>
    failed = {(tc.get("classname"), tc.get("name")) for tc in case_tcs if tc.find("failure") is not None}
    assert failed == {
        (f"support-desk.2.0.0.{p}", c)
        for p in result.providers
        for c in ("email-reviewed", "email-outside-denied")
    }
    gate = json.loads((demo["out"] / "ci_gate.json").read_text())
    texts = "\n".join(f.text or "" for f in root.iter("failure"))
    assert gate["reasons"] and all(reason in texts for reason in gate["reasons"])
    metric = [f for f in gate["findings"] if f["blocking"] and not f["case_id"]]
    gate_tcs = [tc for tc in testcases if tc.get("classname") == "support-desk.gate"]
    assert [tc.get("name") for tc in gate_tcs] == [f["message"] for f in metric]
    assert all(
        tc.find("failure").get("type") == f["category"] for tc, f in zip(gate_tcs, metric, strict=True)
    )
    props = {p.get("name"): p.get("value") for p in testcases[0].iter("property")}
    assert props["provenance"] == "replay (emulator)"  # a replay, and what it replays (issue 15)


def test_markdown_summary(demo: dict[str, Any]) -> None:
    md = (demo["out"] / "report.md").read_text()
    assert "**Gate: BLOCK ❌**" in md
    for p in demo["result"].providers:
        assert f"| {p} | 1.0.0 (baseline) | 28/28 |" in md
    assert "## Regressions to keep in the dataset" in md and "| email-reviewed |" in md


def test_report_and_gate_commands_rerender_the_folder(demo: dict[str, Any]) -> None:
    folder = demo["out"]
    (folder / "report.md").unlink()
    code, out, err = run_cli("report", str(folder), "--md")
    assert code == 0, err
    assert (folder / "report.md").is_file() and "gate: BLOCK" in out
    code, out, err = run_cli("gate", str(folder))
    assert code == 1 and "email-reviewed" in out
    assert json.loads((folder / "ci_gate.json").read_text())["decision"] == "block"


def _slice(demo: dict[str, Any], tmp: Path, name: str, version: str, **changes: Any) -> Path:
    """One agent version's results: its report.json and its runs (the gate reads their run.json)."""
    folder = tmp / name
    folder.mkdir()
    part = demo["result"].select(agent_version=version).model_copy(update=changes)
    (folder / "report.json").write_text(part.model_dump_json())
    for runs in (demo["out"] / "runs").glob(f"*@{version}"):
        shutil.copytree(runs, folder / "runs" / runs.name)
    return folder


def test_compare_two_result_folders(demo: dict[str, Any], tmp_path: Path) -> None:
    a = _slice(demo, tmp_path, "v1", "1.0.0")
    b = _slice(demo, tmp_path, "v2", "2.0.0")
    code, out, err = run_cli("compare", str(a), str(b), "--out", str(tmp_path / "cmp.json"))
    assert code == 1, err
    assert "2.0.0 cannot replace 1.0.0" in out and "regression to keep: email-reviewed" in out
    assert json.loads((tmp_path / "cmp.json").read_text())["kind"] == "comparison"
    code, out, err = run_cli("compare", str(a), str(a))
    assert code == 0 and "can replace" in out
    code, out, err = run_cli("gate", str(b), "--baseline", str(a))
    assert code == 1 and (b / "ci_gate.json").is_file()


def test_compare_refuses_different_dataset_versions(demo: dict[str, Any], tmp_path: Path) -> None:
    a = _slice(demo, tmp_path, "v1", "1.0.0")
    b = _slice(demo, tmp_path, "v2", "2.0.0", dataset_version="2027-01.1")
    code, _out, err = run_cli("compare", str(a), str(b))
    assert code == 2
    assert "different dataset versions" in err and "'2026-11.1'" in err and "'2027-01.1'" in err
    assert "Traceback" not in err


def test_default_demo_compares_the_three_agent_sdks(demo: dict[str, Any]) -> None:
    # the suite lists five runtimes; the demo's default comparison stays at the three agent SDKs
    assert set(demo["result"].providers) == {"openai", "claude", "adk"}


def test_all_providers_adds_the_messages_api_and_langgraph(tmp_path: Path) -> None:
    """``--all-providers`` replays the same suite on every runtime with recorded cassettes; the gate reaches
    the same verdict on the plain Messages API and LangGraph as on the agent SDKs (a copy of the checkout
    that holds only those two providers' cassettes keeps the test short)."""
    require_path(CASSETTES, "the demo's committed cassettes")
    work = tmp_path / "checkout"
    shutil.copytree(REPO / "examples" / "support_desk", work / "examples" / "support_desk")
    for version in CASSETTES.iterdir():
        for case in version.iterdir():
            for provider in ("anthropic", "langgraph"):
                shutil.copytree(
                    case / provider, work / "cassettes" / "support-desk" / version.name / case.name / provider
                )
    suite, cassettes = work / "examples/support_desk/suite.yaml", work / "cassettes"
    code, out, err = run_cli(
        "demo", "--suite", str(suite), "--cassettes", str(cassettes), "--out", str(tmp_path / "three")
    )
    assert code == 2 and "no provider of" in err  # the default three have no cassettes in this copy
    code, out, err = run_cli(
        "demo",
        "--all-providers",
        "--workers",
        "1",
        "--suite",
        str(suite),
        "--cassettes",
        str(cassettes),
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 0, out + err
    assert "note: openai left out of the demo: no cassettes recorded" in out
    result = SuiteResult.model_validate_json((tmp_path / "o" / "report.json").read_text())
    assert set(result.providers) == {"anthropic", "langgraph"}
    assert all(r.passed for r in result.select(agent_version="1.0.0").runs)
    assert {r.provenance.case_id for r in result.select(agent_version="2.0.0").runs if not r.passed} == {
        "email-reviewed",
        "email-outside-denied",
    }
    code, out, err = run_cli("demo", "--all-providers", "--providers", "openai", "--out", str(tmp_path / "x"))
    assert code == 2 and "give one of them" in err and "Traceback" not in err


def test_a_second_demo_reuses_the_first_runs(demo: dict[str, Any], tmp_path: Path) -> None:
    """The demo's default --out is relative (./demo-out): a second demo over the first one's folder keeps
    every run whose inputs did not change, and says so."""
    shutil.copytree(demo["out"], tmp_path / "results")
    with pytest.MonkeyPatch.context() as mp:  # in this process: the first demo was the fresh interpreter
        mp.chdir(tmp_path)
        mp.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
        code, out, err = run_cli("demo", "--out", "results")
    assert code == 0, out + err
    assert "reused: 168 run(s) with unchanged inputs kept from results, 0 made" in out + err
    result = SuiteResult.model_validate_json((tmp_path / "results" / "report.json").read_text())
    assert all(r.provenance.reused for r in result.runs)
