"""``portagent route``: receipts on stdout and as traces, judged by the evals' route factor and gate."""

from __future__ import annotations

import json
from pathlib import Path

from _support import run_cli

from portagent.contracts.suite import Case
from portagent.evals.aggregate import SuiteResult
from portagent.evals.gate import gate
from portagent.evals.scoring import score_run
from portagent.tracing.recorder import read_trace

DATA = Path(__file__).parent / "data"
ROUTER = str(DATA / "university.router.yaml")
REQUESTS = str(DATA / "requests.yaml")


def test_route_prints_every_decision_with_its_alternatives() -> None:
    code, out, err = run_cli("route", ROUTER, REQUESTS)
    assert code == 0, err
    assert "r1: RUN mcp.biblioteca.search_docs (mcp_tool, score 0.637)" in out
    assert "r2: REVIEW a2a.becas.review_case" in out
    assert "r3: STOP no route" in out
    assert "higher effect than requested (least privilege)" in out


def test_route_json_and_out_folder_hold_the_receipts(tmp_path: Path) -> None:
    out_dir = tmp_path / "routes"
    code, out, err = run_cli("route", ROUTER, REQUESTS, "--json", "--out", str(out_dir))
    assert code == 0, err
    printed = json.loads(out)
    assert [d["decision"] for d in printed] == ["run", "review", "stop"]
    assert json.loads((out_dir / "decisions.json").read_text()) == printed
    events = read_trace(out_dir / "r1" / "trace.jsonl")
    assert [e.type for e in events] == ["run.started", "route.decision", "run.completed"]
    decision = events[1]
    assert decision.selected_route == "mcp.biblioteca.search_docs" and len(decision.alternatives) == 4
    assert len({e.trace_id for e in events}) == 1
    code, shown, _ = run_cli("trace", "show", str(out_dir / "r2" / "trace.jsonl"))
    assert code == 0 and "route        r2 review -> a2a.becas.review_case" in shown
    # the same folder may receive a second routing, when asked to replace the first
    assert run_cli("route", ROUTER, REQUESTS, "--out", str(out_dir), "--overwrite")[0] == 0


def _case(case_id: str, route: str | None) -> Case:
    return Case.model_validate(
        {
            "case_id": case_id,
            "input": "x",
            "why_it_exists": "routing must not drift",
            "expect": {"route": route},
        }
    )


def test_the_evals_route_factor_and_gate_judge_router_runs(tmp_path: Path) -> None:
    out_dir = tmp_path / "routes"
    assert run_cli("route", ROUTER, REQUESTS, "--out", str(out_dir))[0] == 0
    r1 = read_trace(out_dir / "r1" / "trace.jsonl")
    good = score_run(r1, _case("r1", "mcp.biblioteca.search_docs"))
    assert good.passed and good.checks["route"] and good.trace == 1.0
    bad = score_run(r1, _case("r1", "local.normativa_cache"))
    assert not bad.checks["route"]
    assert "route expected local.normativa_cache, got mcp.biblioteca.search_docs" in bad.notes
    decision = gate(SuiteResult.from_runs("routes", "1", [good, bad]))
    assert not decision.passed


def test_bad_router_spec_is_one_message(tmp_path: Path) -> None:
    spec = tmp_path / "dup.yaml"
    text = (DATA / "university.router.yaml").read_text()
    spec.write_text(text.replace("route_id: local.normativa_cache", "route_id: mcp.biblioteca.search_docs"))
    code, out, err = run_cli("route", str(spec), REQUESTS)
    assert code == 1 and "appears twice" in err and "Traceback" not in err


def test_bad_requests_file_is_one_message(tmp_path: Path) -> None:
    bad = tmp_path / "req.yaml"
    bad.write_text(
        "requests:\n  - request_id: r1\n    effect: delete_everything\n    max_latency_ms: 1\n    max_cost_usd: 0\n"
    )
    code, _, err = run_cli("route", ROUTER, str(bad))
    assert code == 1 and "effect" in err and "Traceback" not in err
    code, _, err = run_cli("route", ROUTER, str(tmp_path / "missing.yaml"))
    assert code == 2 and "requests file not found" in err  # a missing file: usage (README's exit codes)


def test_out_must_be_a_folder_of_its_own(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert run_cli("route", ROUTER, REQUESTS, "--out", str(f))[0] == 2
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = run_cli("route", ROUTER, REQUESTS, "--out", str(other))
    assert code == 2 and "folder is not empty; pass --overwrite" in err
    code, _, err = run_cli("route", ROUTER, REQUESTS, "--out", str(other), "--overwrite")
    assert code == 2 and "not a route results folder (no decisions.json)" in err
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
