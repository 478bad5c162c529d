"""Every report of a results folder says what its gate said: ``portagent report`` re-renders the decision
with the settings eval.json recorded (``eval --baseline``, ``--strict``, the last ``gate`` into the
folder) or refuses (exit 2) when the recorded baseline is gone or changed; junit.xml fails exactly when
ci_gate.json blocks, on the version the gate judged. Driven through the CLI on copies of the
support-desk example, replayed from the repository's cassettes."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, portagent_home, run_cli

SUITE = """kind: suite
schema_version: 1
suite_id: support-desk
dataset_version: "2026-11.1"
owner: tests
agent: {agent}
providers: [openai]
repeats: 1
thresholds: {{final: 0.5}}
emulator_script: emulator.yaml
approver: scripted
cases:
  - case_id: email-outside-denied
    input: "Email ana.garcia@gmail.com that her DNI is missing."
    why_it_exists: its final answer is worse on agent v2 (a quality drop the gate blocks)
    expect:
      final_must_contain: [ana.garcia@gmail.com, permission_denied]
      required_tools: [send_email]
    context: {{scopes: ["email:send"]}}
"""
REPLAY = ("--replay", "--cassettes", str(REPO / "cassettes"), "--no-progress", "--workers", "1")


def _cli(home: Path, *argv: str) -> tuple[int, str, str]:
    with portagent_home(home):
        return run_cli(*argv)


def _junit(folder: Path) -> ET.Element:
    return ET.parse(folder / "junit.xml").getroot()


def _decision(folder: Path) -> str:
    return str(json.loads((folder / "ci_gate.json").read_text())["decision"])


def _agree(folder: Path) -> None:
    """junit.xml has failures exactly when ci_gate.json blocks."""
    failures = int(_junit(folder).get("failures", "0"))
    assert (failures > 0) == (_decision(folder) == "block"), (failures, _decision(folder))


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """work/base (agent v1) and work/cand (agent v2, ``eval --baseline work/base``: blocked)."""
    root = tmp_path_factory.mktemp("gated")
    work = root / "work"
    shutil.copytree(
        EXAMPLES / "support_desk", work, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    (work / "suite_v1.yaml").write_text(SUITE.format(agent="agent.yaml"))
    (work / "suite_v2.yaml").write_text(SUITE.format(agent="agent_v2.yaml"))
    home = root / "home"
    code, _, err = _cli(home, "eval", str(work / "suite_v1.yaml"), *REPLAY, "--out", str(work / "base"))
    assert code == 0, err
    code, out, err = _cli(
        home,
        "eval",
        str(work / "suite_v2.yaml"),
        *REPLAY,
        "--out",
        str(work / "cand"),
        "--baseline",
        str(work / "base"),
    )
    assert code == 1 and "regression: quality on openai" in out, (out, err)
    return root


def _copy(gated: Path, tmp_path: Path) -> Path:
    shutil.copytree(gated / "work", tmp_path / "work", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "work"


def test_rerender_keeps_the_decision_made_against_the_baseline(gated: Path, tmp_path: Path) -> None:
    work = _copy(gated, tmp_path)
    cand = work / "cand"
    before = (cand / "ci_gate.json").read_text()
    code, _, err = _cli(tmp_path / "home", "report", str(cand))
    assert code == 0, err
    assert _decision(cand) == "block"
    after = json.loads((cand / "ci_gate.json").read_text())
    assert after["reasons"] == json.loads(before)["reasons"]
    assert "**Gate: BLOCK" in (cand / "report.md").read_text()
    _agree(cand)
    assert json.loads((cand / "eval.json").read_text())["gate"]["baseline"] == str(gated / "work" / "base")


def test_rerender_refuses_a_recorded_baseline_that_is_gone_or_changed(gated: Path, tmp_path: Path) -> None:
    work = _copy(gated, tmp_path)
    cand, home = work / "cand", tmp_path / "home"
    assert _cli(home, "gate", str(cand), "--baseline", str(work / "base"))[0] == 1  # records this copy's
    assert _cli(home, "report", str(cand))[0] == 0
    before = {p.name: p.read_bytes() for p in cand.iterdir() if p.is_file()}
    (work / "base").rename(work / "base-moved")
    code, out, err = _cli(home, "report", str(cand))
    assert code == 2 and "no longer there" in err and "Traceback" not in err, (out, err)
    assert "portagent gate" in err  # the way out is named
    (work / "base-moved").rename(work / "base")
    report = (work / "base" / "report.json").read_bytes()
    (work / "base" / "report.json").write_bytes(report + b"\n")
    code, out, err = _cli(home, "report", str(cand))
    assert code == 2 and "has changed since" in err and "Traceback" not in err, (out, err)
    assert {p.name: p.read_bytes() for p in cand.iterdir() if p.is_file()} == before  # nothing written
    (work / "base" / "report.json").write_bytes(report)
    moved = work.rename(tmp_path / "moved")  # results and baseline moved together: found again
    code, out, err = _cli(home, "report", str(moved / "cand"))
    assert code == 0 and _decision(moved / "cand") == "block", (out, err)


def test_gate_into_the_folder_records_its_settings_for_the_next_rerender(gated: Path, tmp_path: Path) -> None:
    work = _copy(gated, tmp_path)
    cand, home = work / "cand", tmp_path / "home"
    meta = (cand / "eval.json").read_text()
    assert _cli(home, "gate", str(cand), "--no-baseline", "--out", str(tmp_path / "elsewhere.json"))[0] == 0
    assert (cand / "eval.json").read_text() == meta  # --out elsewhere: the folder's record is untouched
    assert _cli(home, "gate", str(cand), "--no-baseline")[0] == 0  # judged on its own, into the folder
    assert json.loads((cand / "eval.json").read_text())["gate"]["baseline"] is None
    assert _cli(home, "gate", str(cand))[0] == 0  # as now recorded: on its own
    assert _cli(home, "report", str(cand))[0] == 0
    assert _decision(cand) == "pass"
    _agree(cand)
    assert _cli(home, "gate", str(cand), "--baseline", str(work / "base"))[0] == 1
    assert _cli(home, "report", str(cand))[0] == 0
    assert _decision(cand) == "block"
    _agree(cand)


def test_junit_fails_on_every_blocking_finding_with_its_category(gated: Path) -> None:
    cand = gated / "work" / "cand"
    _agree(cand)
    root = _junit(cand)
    failures = root.findall(".//failure")
    assert [f.get("type") for f in failures] == ["regression"]
    assert "quality on openai" in str(failures[0].get("message"))
    gate_suite = root.find("testsuite[@name='support-desk gate']")
    assert gate_suite is not None and gate_suite.get("failures") == "1"


def test_junit_reports_the_candidate_the_gate_judged(gated: Path, tmp_path: Path) -> None:
    """A folder with a baseline and a candidate where the candidate fixes the baseline's failure: the gate
    passes, and junit is green (the baseline's failing runs are not what was judged)."""
    work = _copy(gated, tmp_path)
    s = (EXAMPLES / "support_desk" / "suite.yaml").read_text()
    swapped = s.replace(
        "baseline: agent.yaml\ncandidate: agent_v2.yaml\n", "baseline: agent_v2.yaml\ncandidate: agent.yaml\n"
    )
    assert swapped != s
    (work / "suite.yaml").write_text(swapped)
    out = tmp_path / "r"
    argv = ("--providers", "openai", "--repeats", "1", "--case", "email-reviewed", "--case", "refund-rule")
    code, stdout, err = _cli(
        tmp_path / "home", "eval", str(work / "suite.yaml"), *REPLAY, *argv, "--out", str(out)
    )
    assert code == 0, (stdout, err)
    assert _decision(out) == "pass"
    _agree(out)
    suites = [s.get("name") for s in _junit(out).findall("testsuite")]
    assert suites == ["support-desk support_desk@1.0.0"]
    base = json.loads((out / "report.json").read_text())
    assert any(not r["passed"] for r in base["runs"] if r["provenance"]["agent_version"] == "2.0.0")


def test_a_plain_gate_after_eval_baseline_decides_as_the_eval_did(gated: Path, tmp_path: Path) -> None:
    """CI runs ``eval --baseline B --out R`` then ``gate R``: the gate must not judge R alone and turn the
    eval's BLOCK into a PASS (it did, and rewrote ci_gate.json). Flags given still win."""
    work = _copy(gated, tmp_path)
    cand, home = work / "cand", tmp_path / "home"
    before = json.loads((cand / "ci_gate.json").read_text())
    code, out, err = _cli(home, "gate", str(cand))
    assert code == 1, (out, err)
    assert "settings recorded in" in out and "baseline" in out
    assert json.loads((cand / "ci_gate.json").read_text())["reasons"] == before["reasons"]
    _agree(cand)
    code, out, err = _cli(home, "gate", str(cand), "--baseline", str(work / "base"), "--no-baseline")
    assert code == 2 and err.count("\n") == 1 and "contradict" in err, (out, err)
    md = (cand / "report.md").read_text()
    assert _cli(home, "gate", str(cand), "--no-baseline")[0] == 0  # explicitly alone: v2 passes its cases
    _agree(cand)  # the gate rendered the folder's reports again: junit.xml and report.md say PASS too
    assert "**Gate: BLOCK" in md and "**Gate: PASS" in (cand / "report.md").read_text()
    (work / "base" / "report.json").write_text((work / "base" / "report.json").read_text() + "\n")
    assert _cli(home, "gate", str(cand))[0] == 0  # --no-baseline was recorded: the changed base is not read
    assert _cli(home, "gate", str(cand), "--baseline", str(work / "base"))[0] == 1
    (work / "base" / "report.json").write_text((work / "base" / "report.json").read_text() + "\n")
    code, out, err = _cli(home, "gate", str(cand))
    assert code == 2 and "has changed since" in err and "--no-baseline" in err, (out, err)


def test_rerender_refuses_a_decision_whose_eval_json_is_gone(gated: Path, tmp_path: Path) -> None:
    """Without eval.json the folder no longer says how its decision was made (baseline, threshold,
    strictness): ``report`` re-decided it with the defaults and rewrote ci_gate.json (12 reasons became 4,
    the version comparison gone). It refuses now, naming the way back, and writes nothing."""
    work = _copy(gated, tmp_path)
    cand = work / "cand"
    (cand / "eval.json").unlink()
    before = {p.name: p.read_bytes() for p in cand.iterdir() if p.is_file()}
    code, out, err = _cli(tmp_path / "home", "report", str(cand))
    assert code == 2 and "no eval.json" in err and "Traceback" not in err, (out, err)
    assert {p.name: p.read_bytes() for p in cand.iterdir() if p.is_file()} == before
