"""``portagent route --execute``: the chosen ``local_tool`` route runs through the gateway in the request's
own run, after its ``route.decision`` (the design source's ch. 11 trace: run.started, route.decision,
tool.call, tool.result, run.completed). What really ran is read from the handlers' own log
(``$ROUTE_TEST_LOG``), never from the trace alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_cli

from portagent.contracts.suite import Case
from portagent.evals.scoring import score_run
from portagent.tracing.recorder import read_trace

DATA = Path(__file__).parent / "data"
ROUTER = str(DATA / "exec" / "desk.router.yaml")
REQUESTS = str(DATA / "exec" / "desk.requests.yaml")


@pytest.fixture
def ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The handlers' log: one JSON line per call that really reached a handler."""
    log = tmp_path / "handlers.jsonl"
    monkeypatch.setenv("ROUTE_TEST_LOG", str(log))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    return log


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _route(out: Path) -> tuple[int, str, str]:
    return run_cli("route", ROUTER, REQUESTS, "--execute", "--out", str(out), "--overwrite")


def test_the_chosen_route_runs_in_the_requests_run_and_the_evals_judge_it(ran: Path, tmp_path: Path) -> None:
    out = tmp_path / "routes"
    code, printed, err = _route(out)
    assert code == 0, err
    assert "executed: local.faq → faq_lookup ok" in printed
    events = read_trace(out / "faq" / "trace.jsonl")
    assert [e.type for e in events] == [
        "run.started",
        "route.decision",
        "tool.call",
        "permission.decision",
        "tool.result",
        "run.completed",
    ]
    assert len({e.trace_id for e in events}) == 1 and {e.run_id for e in events} == {events[0].run_id}
    call, result, done = events[2], events[4], events[5]
    assert (call.tool, call.args) == ("faq_lookup", {"question": "refund deadline"})
    assert result.ok and result.output["source"] == "faq"
    assert (done.status, done.stop_reason, done.tool_calls, done.cost_usd) == (
        "completed",
        "route_executed",
        1,
        0.001,
    )
    # the route gate's factors over one run: the route taken and the tool it ran
    case = Case.model_validate(
        {
            "case_id": "faq",
            "input": "x",
            "why_it_exists": "refund questions go to the FAQ",
            "expect": {
                "route": "local.faq",
                "required_tools": ["faq_lookup"],
                "forbidden_tools": ["create_ticket"],
            },
        }
    )
    scored = score_run(events, case)
    assert scored.passed and scored.checks["route"], scored.notes
    # the stop decision ran nothing, the MCP route was decided but not executed (said so)
    publish = read_trace(out / "publish" / "trace.jsonl")
    assert [e.type for e in publish] == ["run.started", "route.decision", "run.completed"]
    library = read_trace(out / "library" / "trace.jsonl")
    assert "tool.call" not in [e.type for e in library]
    (step,) = library[-1].final_output["execution"]["routes"]
    assert step == {
        "route": "mcp.library.search",
        "executed": False,
        "why": "mcp_tool routes are not executed by portagent route",
    }
    assert [c["tool"] for c in _calls(ran)] == ["faq_lookup", "faq_lookup", "faq_backup"]  # faq, outage


def test_a_route_that_fails_falls_back_to_an_equal_effect_route(ran: Path, tmp_path: Path) -> None:
    out = tmp_path / "routes"
    assert _route(out)[0] == 0
    events = read_trace(out / "outage" / "trace.jsonl")
    calls = [(e.tool, e.call_id) for e in events if e.type == "tool.call"]
    results = [(e.call_id, e.ok, e.error) for e in events if e.type == "tool.result"]
    assert calls == [("faq_lookup", "call_1"), ("faq_backup", "call_2")]
    assert results == [("call_1", False, "handler_error"), ("call_2", True, None)]
    done = events[-1]
    assert (done.status, done.final_output["execution"]["fell_back"]) == ("completed", True)
    assert done.final_output["execution"]["routes"][1]["output"]["source"] == "faq_backup"


def test_a_review_decision_waits_for_approval_then_runs_once(ran: Path, tmp_path: Path) -> None:
    out = tmp_path / "routes"
    code, printed, _ = _route(out)
    events = read_trace(out / "ticket" / "trace.jsonl")
    decision = next(e for e in events if e.type == "permission.decision")
    assert (decision.decision, decision.rule) == ("approval_required", "router-review:local.ticket")
    approval = next(e for e in events if e.type == "approval.requested").approval_id
    assert (events[-1].status, events[-1].stop_reason) == ("waiting_approval", "approval_pending")
    assert f"waits for approval {approval}" in printed
    assert "create_ticket" not in [c["tool"] for c in _calls(ran)]  # nothing ran before a person decided

    assert run_cli("approvals", "approve", approval, "--reviewer", "ana")[0] == 0
    assert _route(out)[0] == 0  # the same command again: the decided card applies
    again = read_trace(out / "ticket" / "trace.jsonl")
    resolved = next(e for e in again if e.type == "approval.resolved")
    assert (resolved.approval_id, resolved.status, resolved.reviewer) == (approval, "approved", "ana")
    result = next(e for e in again if e.type == "tool.result")
    assert result.ok and result.output["ticket_id"] == "T-S-7"
    assert (again[-1].status, again[-1].stop_reason) == ("completed", "route_executed")
    assert _route(out)[0] == 0  # and once more: the effect ledger answers, the handler is not run again
    third = next(e for e in read_trace(out / "ticket" / "trace.jsonl") if e.type == "tool.result")
    assert third.ok and third.duplicate
    assert [c for c in _calls(ran) if c["tool"] == "create_ticket"] == [
        {"tool": "create_ticket", "student": "S-7", "summary": "DNI missing"}
    ]


def test_execute_needs_every_local_route_to_name_a_tool(ran: Path, tmp_path: Path) -> None:
    """The ch. 09 fixture router has no tool_files: --execute refuses it before anything runs."""
    out = tmp_path / "routes"
    code, _, err = run_cli(
        "route",
        str(DATA / "university.router.yaml"),
        str(DATA / "requests.yaml"),
        "--execute",
        "--out",
        str(out),
    )
    assert code == 2 and "Traceback" not in err
    assert "route local.normativa_cache runs tool 'normativa_cache', which no tool_files entry defines" in err
    assert not out.exists()
    spec = tmp_path / "router.yaml"
    spec.write_text(
        Path(ROUTER).read_text().replace("tool_files: [desk_tools.yaml]", "tool_files: [nope.yaml]")
    )
    code, _, err = run_cli("route", str(spec), REQUESTS, "--execute")
    assert code == 2 and "tool_files: nope.yaml not found" in err and "Traceback" not in err
