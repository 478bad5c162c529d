"""The ch. 04 token-saving gate as a suite option (issue 16 part 5): ``context_gate`` in a suite.

``examples/context_saving``: a baseline that resends a long session thread and a candidate with a context
budget (``max_context_tokens``), each case continuing its own thread (``Case.thread``). The cassettes were
recorded against the emulator with ``portagent record`` (no network); ``portagent eval --replay`` on them
works offline. The token counts are the ones the emulator reported receiving (no usage is scripted: it
counts characters / 4 of each request), kept in the cassettes, so the saving is measured on what each SDK
sent, not on portagent's own estimate. A stricter copy of the suite (same cases and cassettes, 90 %) blocks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "context_saving"
STRICT = Path(__file__).resolve().parent / "data" / "context_gate_strict.yaml"
ONE = ["--providers", "openai", "--no-progress", "--workers", "1"]


def replay(suite: Path, out: Path) -> tuple[int, str, str]:
    return run_cli(
        "eval", str(suite), "--replay", "--cassettes", str(EXAMPLE / "cassettes"), "--out", str(out), *ONE
    )


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow  # the CLI's worker pool: a process start and the SDK imports
def test_the_example_suite_passes_its_context_gate_offline(tmp_path):
    code, out, err = replay(EXAMPLE / "suite.yaml", tmp_path / "r")
    assert code == 0, out + err
    [saving] = load(tmp_path / "r" / "report.json")["context"]
    assert saving["provider"] == "openai" and saving["cases"] == 2 and saving["passed"]
    assert saving["baseline_input_tokens"] > saving["candidate_input_tokens"] > 0
    assert saving["token_saving"] >= 0.35 and saving["min_token_saving"] == 0.35
    assert saving["candidate_continuation"] == saving["baseline_continuation"] == 1.0
    # the counts are what the provider reported for the recorded requests (run.json usage), summed
    runs = load(tmp_path / "r" / "report.json")["runs"]
    by_version: dict[str, int] = {}
    for r in runs:
        by_version[r["provenance"]["agent_version"]] = (
            by_version.get(r["provenance"]["agent_version"], 0) + (r["usage"]["input_tokens"])
        )
    assert by_version == {"1.0.0": saving["baseline_input_tokens"], "1.1.0": saving["candidate_input_tokens"]}
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "## Context tokens (baseline → candidate)" in md and "fewer input tokens" in md
    assert "context: openai:" in out and "gate: PASS" in out
    assert load(tmp_path / "r" / "ci_gate.json")["passed"] is True
    # each candidate run's context manifest lists the turns its budget left out, as a run in a session's
    # does: it listed none while its history block said "omitted" (the eval never told the manifest)
    candidates = sorted((tmp_path / "r" / "runs" / "parcel_desk@1.1.0").glob("*/openai/r0/trace.jsonl"))
    assert len(candidates) == 2
    for trace in candidates:
        events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
        started = next(e for e in events if e["type"] == "run.started")
        [manifest] = [e for e in events if e["type"] == "context.manifest"]
        omitted = int(re.search(r'omitted="(\d+)"', started["input"])[1])
        [left_out] = manifest["excluded"]
        case = trace.parent.parent.parent.name
        assert left_out["source"] == f"session:case:{case}#1-{omitted}" and left_out["tokens"] > 0
        assert "left out" in left_out["reason"]


def test_the_candidate_request_left_the_oldest_turns_out(tmp_path):
    """What the saving comes from, in the recorded requests: the baseline sent the first scan log, the
    candidate's framed thread says how many turns it left out and does not hold it."""
    base = EXAMPLE / "cassettes" / "context-saving" / "parcel_desk@1.0.0" / "window-after-long-history"
    cand = EXAMPLE / "cassettes" / "context-saving" / "parcel_desk@1.1.0" / "window-after-long-history"
    b, c = (sent(d / "openai" / "r0" / "cassette.yaml") for d in (base, cand))
    assert "Where is order 12?" in b and "omitted=" not in b
    assert "Where is order 12?" not in c and "omitted=" in c and "Is order 12 insured?" in c


def sent(cassette: Path) -> str:
    """The request bodies a cassette recorded, as one text."""
    import yaml

    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    return "\n".join(str(i["request"]["body"]) for i in data["interactions"])


def test_a_saving_below_the_suite_threshold_blocks_the_gate(tmp_path):
    """The same write_eval → decide path as the CLI, in process (no worker start-up): the stricter suite
    replays the same cassettes and its gate blocks, naming the provider and the saving."""
    from portagent.contracts.loaded_suite import load_suite
    from portagent.evals.report import write_eval
    from portagent.runtime.eval_run import plan_eval, run_eval

    plan = plan_eval(
        load_suite(STRICT),
        mode="replay",
        providers=["openai"],
        cassettes=EXAMPLE / "cassettes",
        results=tmp_path / "r",
    )
    (tmp_path / "r").mkdir()
    _, decision, _ = write_eval(
        run_eval(plan, in_process=True),
        tmp_path / "r",
        started_at="2026-12-01T00:00:00+00:00",
        duration_s=1.0,
    )
    assert decision.exit_code == 1
    gate = load(tmp_path / "r" / "ci_gate.json")
    assert gate["passed"] is False and "regression" in gate["blocked_by"]
    [reason] = [r for r in gate["reasons"] if "context gate" in r]
    assert reason.startswith("regression: context gate on openai (agent 1.1.0): token saving ")
    assert "is below 90%" in reason
    assert "context gate on openai" in (tmp_path / "r" / "report.md").read_text(encoding="utf-8")


def test_a_context_gate_without_a_baseline_is_one_clear_error(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        (EXAMPLE / "suite.yaml")
        .read_text(encoding="utf-8")
        .replace("baseline: agent.yaml\ncandidate: agent_budget.yaml\n", f"agent: {EXAMPLE / 'agent.yaml'}\n")
        .replace("case_files: [cases.yaml]", f"case_files: [{EXAMPLE / 'cases.yaml'}]")
        .replace("emulator_script: emulator.yaml", f"emulator_script: {EXAMPLE / 'emulator.yaml'}"),
        encoding="utf-8",
    )
    code, out, err = run_cli("eval", str(suite), "--emulator", "--out", str(tmp_path / "r"), *ONE)
    assert code == 1, out + err  # an invalid suite is a failed check (DESIGN §3 exit codes)
    assert "context_gate compares a candidate with a baseline" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_context_savings_compares_only_shared_cases_and_flags_lower_continuation():
    from portagent.contracts.suite import ContextGate
    from portagent.evals.aggregate import SuiteResult
    from portagent.evals.context_metrics import context_savings

    runs = load_runs(EXAMPLE / "cassettes")
    # the candidate fails one case: same saving, lower continuation → blocked, with the reason
    worse = [
        r.model_copy(update={"passed": False})
        if (r.provenance.agent_version, r.provenance.case_id) == ("1.1.0", "window-after-long-history")
        else r
        for r in runs
    ]
    result = SuiteResult.from_runs("context-saving", "2026.12", worse)
    [s] = context_savings(result, "1.0.0", "1.1.0", ContextGate())
    assert not s.passed and s.reasons == ["continuation dropped from 1.000 to 0.500"]
    # a case only one side ran is not compared
    one_sided = [
        r
        for r in runs
        if r.provenance.case_id != "address-after-long-history" or r.provenance.agent_version == "1.0.0"
    ]
    [s] = context_savings(
        SuiteResult.from_runs("context-saving", "2026.12", one_sided), "1.0.0", "1.1.0", ContextGate()
    )
    assert s.cases == 1


def load_runs(cassettes: Path) -> list[Any]:
    """RunScores of the recorded openai runs (their recorded usage), scored as passing."""
    from portagent.contracts.run import Usage
    from portagent.evals.scoring import Provenance, RunScore

    out = []
    for run_json in sorted(cassettes.glob("context-saving/*/*/openai/r0/run.json")):
        record = load(run_json)
        version = run_json.parts[-5].split("@")[1]
        case = run_json.parts[-4]
        prov = Provenance(
            case_id=case, provider="openai", agent=f"parcel_desk@{version}", agent_version=version, repeat=0
        )
        usage = Usage.model_validate(record["result"]["usage"])
        out.append(RunScore.model_validate({**_passing(), "provenance": prov, "usage": usage}))
    return out


def _passing() -> dict[str, Any]:
    return {
        "passed": True,
        "checks": {},
        "final": 1.0,
        "trajectory": 1.0,
        "trajectory_f1": 1.0,
        "args": 1.0,
        "approval": 1.0,
        "trace": 1.0,
    }
