"""`portagent validate FOLDER` checks the specs in it and says what the other YAML/JSON files are.

A project folder holds more than specs: recorded runs (run.json beside cassette.yaml, mcp.json, inputs.json),
an eval's output (eval.json, report.json, comparison.json, ci_gate.json), a suite's case files, JSON
Schemas. Those are listed as skipped with what they are; a broken spec is still reported, also one that
lost its ``kind:``, and a file named on its own is always checked.
"""

import json
import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, run_cli

from portagent.runtime.validate import OUTPUT_KINDS

SHIPPED = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and p.name != "invalid_specs")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_example_folder_validates(name):
    code, out, err = run_cli("validate", str(EXAMPLES / name))
    assert code == 0, err
    assert "Traceback" not in err


def test_a_suite_folder_with_cassettes_and_case_files(tmp_path):
    folder = tmp_path / "project"
    shutil.copytree(EXAMPLES / "context_saving", folder)
    code, out, err = run_cli("validate", str(folder))
    assert code == 0, err
    assert f"skipped  {folder / 'cases.yaml'}: a case file of {folder / 'suite.yaml'}" in out
    cassettes = [
        line for line in out.splitlines() if line.endswith("cassette.yaml") or "cassette.yaml:" in line
    ]
    assert cassettes and all(
        line.startswith("skipped") and "part of the recorded run" in line for line in cassettes
    )
    assert "12 of 12 spec files valid (9 other files skipped: not specs)" in out
    # a case file is still checked, through its suite
    (folder / "cases.yaml").write_text("- case_id: broken\n  input: 12\n  nonsense: true\n")
    code, _, err = run_cli("validate", str(folder))
    assert code == 1
    assert "invalid  " + str(folder / "suite.yaml") in err
    assert "cases.yaml" in err


def test_an_eval_output_folder(tmp_path):
    suite = EXAMPLES / "context_saving" / "suite.yaml"
    out_dir = tmp_path / "results"
    code, _, err = run_cli(
        "eval",
        str(suite),
        "--replay",
        "--cassettes",
        str(EXAMPLES / "context_saving" / "cassettes"),
        "--providers",
        "openai",
        "--out",
        str(out_dir),
    )
    assert code == 0, err
    names = {p.name for p in out_dir.rglob("*") if p.suffix in {".json", ".yaml"}}
    assert {"eval.json", "report.json", "comparison.json", "ci_gate.json", "run.json", "inputs.json"} <= names
    code, out, err = run_cli("validate", str(out_dir))
    assert code == 0, err
    for name, kind in (
        ("eval.json", "eval-run"),
        ("report.json", "suite-result"),
        ("comparison.json", "comparison"),
        ("ci_gate.json", "gate-decision"),
    ):
        assert f"skipped  {out_dir / name}: portagent's eval output ({name}, kind '{kind}')" in out
    inputs = [line for line in out.splitlines() if "inputs.json" in line]
    assert inputs and all(line.startswith("skipped") for line in inputs)
    assert all(line.startswith("ok") for line in out.splitlines() if line.endswith("run.json (run)"))
    # named on its own, an output file is not a spec: one message saying what it is
    code, _, err = run_cli("validate", str(out_dir / "eval.json"))
    assert code == 1
    assert "portagent's eval output (eval.json, kind 'eval-run'), not a spec file" in err


def test_a_broken_spec_is_never_skipped(tmp_path):
    """Not by a missing kind, not beside a recorded run."""
    (tmp_path / "agent.yaml").write_text("schema_version: 1\nname: a\nmodel: gpt-4o\ninstructions: hi\n")
    run = tmp_path / "runs" / "r0"
    run.mkdir(parents=True)
    shutil.copy(next((REPO / "cassettes").rglob("openai/r0/run.json")), run / "run.json")
    (run / "cassette.yaml").write_text("interactions: []\nversion: 1\n")
    (run / "policy.yaml").write_text("kind: policy\nschema_version: 1\nname: p\ndefaults: {read: alow}\n")
    (tmp_path / "odd.yaml").write_text("kind: {agent: 1}\n")
    # beside a run.json (`portagent run --out .` leaves one in a spec folder) only a recording's own files
    # are skipped: a spec with a typo in its kind, without one, or that does not parse is still reported
    (run / "typo.yaml").write_text("kind: polcy\nschema_version: 1\nname: p\n")
    (run / "nokind.yaml").write_text("schema_version: 1\nname: p\ndefaults: {read: allow}\n")
    (run / "broken.yaml").write_text("kind: policy\nname: [unclosed\n")
    (run / "inputs.json").write_text('{"schema": 1, "key": "sha256:00"}')
    code, out, err = run_cli("validate", str(tmp_path))
    assert code == 1
    assert f"invalid  {tmp_path / 'agent.yaml'}" in err and "missing 'kind:'" in err
    assert f"invalid  {run / 'policy.yaml'}" in err
    assert f"invalid  {tmp_path / 'odd.yaml'}" in err and "'kind:' must be one word" in err
    for name in ("typo.yaml", "nokind.yaml", "broken.yaml"):
        assert f"invalid  {run / name}" in err
    assert f"skipped  {run / 'cassette.yaml'}: part of the recorded run" in out
    assert f"skipped  {run / 'inputs.json'}: part of the recorded run" in out
    assert "1 of 7 spec files valid (2 other files skipped: not specs)" in err


def test_case_files_are_found_as_the_suite_loader_finds_them(tmp_path):
    """Through a linked suite file the loader reads case files beside the real one; so does the walk."""
    real = tmp_path / "real"
    shutil.copytree(EXAMPLES / "context_saving", real, ignore=shutil.ignore_patterns("cassettes"))
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "suite.yaml").symlink_to(real / "suite.yaml")
    (linked / "cases.yaml").write_text("- case_id: [broken\n")  # not the suite's case file
    code, out, err = run_cli("validate", str(linked))
    assert code == 1
    assert f"invalid  {linked / 'cases.yaml'}" in err


def test_recording_files_are_the_writers_names():
    from portagent.recording.vcr_cassette import CASSETTE_FILE
    from portagent.runtime.reuse import INPUTS_FILE
    from portagent.runtime.validate import RECORDING_FILES
    from portagent.tools.a2a.sources import A2A_CASSETTE
    from portagent.tools.mcp.cassette import MCP_CASSETTE

    assert {CASSETTE_FILE, INPUTS_FILE, A2A_CASSETTE, MCP_CASSETTE} == RECORDING_FILES


def test_cassettes_and_schemas_outside_a_run_folder(tmp_path):
    shutil.copy(EXAMPLES / "support_desk" / "tools.yaml", tmp_path / "tools.yaml")
    shutil.copy(next((REPO / "cassettes").rglob("openai/r0/cassette.yaml")), tmp_path / "recorded.yaml")
    (tmp_path / "vcr.json").write_text(json.dumps({"interactions": [], "version": 1}))
    shutil.copy(REPO / "docs" / "schemas" / "report.schema.json", tmp_path / "agent.schema.json")
    code, out, err = run_cli("validate", str(tmp_path))
    assert code == 0, err
    assert f"skipped  {tmp_path / 'recorded.yaml'}: a recorded HTTP cassette (vcrpy)" in out
    assert f"skipped  {tmp_path / 'vcr.json'}: a recorded HTTP cassette (vcrpy)" in out
    assert f"skipped  {tmp_path / 'agent.schema.json'}: a JSON Schema document" in out
    assert "1 of 1 spec file valid (3 other files skipped: not specs)" in out


def test_a_folder_of_recordings_only_is_a_usage_error(tmp_path):
    run = tmp_path / "r0"
    run.mkdir()
    (run / "cassette.yaml").write_text("interactions: []\nversion: 1\n")
    (tmp_path / "other.yaml").write_text("interactions: []\nversion: 1\n")
    code, _, err = run_cli("validate", str(tmp_path))
    assert code == 2
    assert "no spec files" in err and "Traceback" not in err


def test_a_case_file_named_alone_points_at_its_suite():
    code, _, err = run_cli("validate", str(EXAMPLES / "context_saving" / "cases.yaml"))
    assert code == 1
    assert "got list (a suite's case file is checked with the suite that names it)" in err


def test_output_kinds_are_the_models_kinds():
    from portagent.evals.aggregate import SuiteResult
    from portagent.evals.compare import Comparison
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import EvalMeta

    kinds = {m.model_fields["kind"].default for m in (SuiteResult, Comparison, GateDecision, EvalMeta)}
    assert kinds == set(OUTPUT_KINDS)


def test_a_file_reached_twice_is_checked_and_counted_once(tmp_path: Path, monkeypatch) -> None:
    """``validate agent.yaml ./agent.yaml .`` (a shell glob beside its folder) checked and counted the
    same file three times ("7 of 7 valid" for 5 files)."""
    monkeypatch.chdir(tmp_path)
    assert run_cli("init", "p")[0] == 0
    monkeypatch.chdir(tmp_path / "p")
    code, out, err = run_cli("validate", "agent.yaml", "./agent.yaml", ".")
    assert code == 0, err
    files = len([p for p in (tmp_path / "p").rglob("*") if p.suffix in (".yaml", ".json")])
    assert out.count("ok       agent.yaml") == 1 and out.count("agent.yaml (agent)") == 1, out
    assert f"{files} of {files} spec files valid" in out, out


def test_quiet_prints_problems_only(tmp_path: Path, monkeypatch) -> None:
    """``--quiet``: "print problems only" — a clean check prints nothing (it printed the summary)."""
    monkeypatch.chdir(tmp_path)
    assert run_cli("init", "p")[0] == 0
    code, out, err = run_cli("validate", "p", "-q")
    assert (code, out, err) == (0, "", "")
    (tmp_path / "p" / "policy.yaml").write_text("kind: policy\nschema_version: 1\nrules: 3\n")
    code, out, err = run_cli("validate", "p", "-q")
    assert code == 1 and out == "" and "policy.yaml" in err and "valid" in err  # problems, then the count
