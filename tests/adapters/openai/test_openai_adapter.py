"""The openai-agents adapter against portagent's emulator (real SDK, real gateway, no mocks).

Every scenario checks what the SDK actually sent (the emulator's request log), not only the trace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import EXAMPLES, REPO, run_cli

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tracing.compare import equivalent, normalized_jsonl

DATA = REPO / "tests" / "adapters" / "data"
SUPPORT = EXAMPLES / "support_desk"
AGENT = SUPPORT / "agent.yaml"

sys.path.insert(0, str(SUPPORT))
import support_desk_handlers as handlers  # noqa: E402


@pytest.fixture(scope="module")
def emu():
    script = load_script(SUPPORT / "emulator.yaml")
    with serve(script) as e:
        yield e


@pytest.fixture(scope="module")
def emu2():
    with serve(load_script(DATA / "script.yaml")) as e:
        yield e


def go(
    emu: Any,
    text: str | list[str],
    agent: Path = AGENT,
    *,
    approver: Any = "auto-deny",
    key: str | None = None,
    out: Path | None = None,
    options: RunOptions | None = None,
    clock: Any = None,
    ids: Any = None,
) -> Any:
    req = RunRequest(
        input=text, provider="openai", idempotency_key=key, scopes=["tickets:write", "email:send"]
    )
    cfg = RunConfig(
        endpoint=Endpoint(base_url=emu.base_url, api_key="sk-test-dummy"),
        approver=approver,
        out_dir=out,
        options=options or RunOptions(),
        clock=clock,
        ids=ids,
    )
    return asyncio.run(arun_full(agent, req, cfg))


def requests_for(emu: Any, first_user: str) -> list[dict[str, Any]]:
    """The logged requests of one conversation (matched by its first user message)."""
    out = []
    for r in emu.requests():
        body = r.get("body") or {}
        text = json.dumps(body.get("input") or body.get("messages") or "", ensure_ascii=False)
        if first_user in text:
            out.append(r)
    return out


def tool_outputs_sent(req: dict[str, Any]) -> list[dict[str, Any]]:
    """function_call_output items the SDK sent back to the model (Responses API)."""
    return [
        json.loads(i["output"])
        for i in req["body"].get("input", [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


def types(out: Any) -> list[str]:
    return [e.type for e in out.events]


# --- happy path, request log -------------------------------------------------------------------------


def test_two_tools_happy_path_and_what_the_sdk_sent(emu):
    q = "Case EXP-42: what is missing and what do the rules say about documents?"
    out = go(emu, q)
    r = out.result
    assert r.status == "completed" and r.stop_reason == "final_output"
    assert (
        r.final_output == "Your case lacks the DNI. Enrolment needs a DNI (or passport) and the signed form."
    )
    assert [e.tool for e in out.events if e.type == "tool.call"] == ["get_student_record", "search_policy"]
    assert [e.call_id for e in out.events if e.type == "tool.call"] == ["call_1", "call_2"]
    assert r.usage.model_calls == 3 and r.usage.input_tokens == 1200 and r.cost_source == "computed"
    assert r.cost_usd is not None and r.cost_usd > 0.01  # includes get_student_record's 0.01 tool cost
    reqs = requests_for(emu, q)
    assert len(reqs) == 3
    first = reqs[0]["body"]
    declared = {t["name"]: t for t in first["tools"]}
    assert set(declared) == {
        "search_policy",
        "get_student_record",
        "prepare_reply_for_review",
        "create_ticket",
        "send_email",
        "billing_specialist",
    }
    assert (
        declared["get_student_record"]["parameters"]["properties"]["case_id"]["pattern"] == "^EXP-[0-9]{2,8}$"
    )
    assert (
        declared["get_student_record"]["strict"] is False
    )  # pattern/optional fields: strict would rewrite it
    assert "student-services desk" in first["instructions"]
    sent = tool_outputs_sent(reqs[1])
    assert sent == [{"ok": True, "status": "incompleto", "missing_documents": ["DNI"], "balance_due": 180}]


def test_denied_tool_never_runs_and_model_sees_permission_denied(emu):
    before = len(handlers.SENT_EMAILS)
    q = "Email ana.garcia@gmail.com that her DNI is missing."
    out = go(emu, q, approver="auto-approve")
    assert len(handlers.SENT_EMAILS) == before
    dec = [e for e in out.events if e.type == "permission.decision"]
    assert [(d.decision, d.rule) for d in dec] == [("deny", "no-email-outside-university")]
    res = next(e for e in out.events if e.type == "tool.result")
    assert res.ok is False and res.error == "permission_denied"
    sent = tool_outputs_sent(requests_for(emu, q)[-1])
    assert sent[0]["error"] == "permission_denied" and "university" in sent[0]["message"]
    assert out.result.final_output == "Email to ana.garcia@gmail.com: permission_denied."


# --- approvals ---------------------------------------------------------------------------------------

TICKET = "Open a ticket for case EXP-42 about the missing DNI."


def test_approval_approve_executes_once(emu):
    out = go(emu, TICKET, approver="auto-approve")
    kinds = types(out)
    assert kinds.index("approval.requested") < kinds.index("approval.resolved") < kinds.index("tool.result")
    res = next(e for e in out.events if e.type == "tool.result")
    assert res.ok and res.output["ticket_id"] == "TCK-0001" and res.effect_id


def test_approval_reject_never_runs(emu):
    out = go(emu, TICKET, approver="auto-deny")
    res = next(e for e in out.events if e.type == "tool.result")
    assert res.ok is False and res.error == "approval_rejected"
    assert "approval_rejected" in json.dumps(tool_outputs_sent(requests_for(emu, TICKET)[-1]))


def test_approval_edit_is_revalidated(emu):
    good = {
        "type": "scripted",
        "decisions": [
            {
                "tool": "create_ticket",
                "decision": "edit",
                "args": {"case_id": "EXP-42", "summary": "Missing DNI (edited)", "priority": "low"},
            }
        ],
    }
    out = go(emu, TICKET, approver=good)
    res = next(e for e in out.events if e.type == "tool.result")
    assert res.ok and next(e for e in out.events if e.type == "approval.resolved").status == "edited"
    # An edit that breaks the schema (priority "urgent") is refused, never executed.
    bad = {
        "type": "scripted",
        "decisions": [
            {
                "tool": "create_ticket",
                "decision": "edit",
                "args": {"case_id": "EXP-42", "summary": "Missing DNI", "priority": "urgent"},
            }
        ],
    }
    out = go(emu, TICKET, approver=bad)
    res = next(e for e in out.events if e.type == "tool.result")
    assert res.ok is False and res.error in ("validation_error", "approval_rejected")


def test_defer_waits_then_resumes_with_exactly_one_effect(emu, tmp_path):
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.ledger import EffectLedger

    out = go(
        emu, TICKET, approver="defer", key="user-42:create-ticket:access-2026-06-10", out=tmp_path / "run"
    )
    r = out.result
    assert r.status == "waiting_approval" and r.stop_reason == "approval_pending"
    assert len(r.pending_approvals) == 1
    assert out.events[-2].type == "tool.result" and out.events[-2].error == "approval_required"
    # Re-running while the card is pending: a clear message, no second attempt.
    code, _, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--input",
        TICKET,
        "--emulator",
        str(SUPPORT / "emulator.yaml"),
        "--idempotency-key",
        "user-42:create-ticket:access-2026-06-10",
        "--approver",
        "defer",
    )
    assert code == 2 and f"still waiting for approval {r.pending_approvals[0]}" in err
    ApprovalStore().approve(r.pending_approvals[0], reviewer="lead")
    again = go(emu, TICKET, approver="defer", key="user-42:create-ticket:access-2026-06-10")
    assert (
        again.result.status == "completed" and again.result.run_id == r.run_id and again.result.attempt == 2
    )
    res = next(e for e in again.events if e.type == "tool.result")
    assert res.ok and res.output["ticket_id"] == "TCK-0001"
    third = go(emu, TICKET, approver="defer", key="user-42:create-ticket:access-2026-06-10")
    assert third.result.status == "duplicate" and third.result.run_id == r.run_id
    ledger = EffectLedger()
    assert len(ledger.entries("run:user-42:create-ticket:access-2026-06-10")) == 1
    # Same run, same trace: both attempts are in one file.
    lines = (tmp_path / "run" / "trace.jsonl").read_text().splitlines()
    starts = [json.loads(x) for x in lines if '"run.started"' in x]
    assert [s["attempt"] for s in starts] == [1, 2] and len({s["trace_id"] for s in starts}) == 1


# --- budgets -----------------------------------------------------------------------------------------


def test_max_tool_calls_rejects_the_seventh_call(emu):
    out = go(emu, "Search the handbook for everything about fees.")
    r = out.result
    assert r.status == "budget_exhausted" and r.stop_reason == "max_tool_calls"
    results = [e for e in out.events if e.type == "tool.result"]
    assert [x.ok for x in results] == [True] * 6 + [False] and results[-1].error == "budget_exhausted"
    ex = next(e for e in out.events if e.type == "budget.exceeded")
    assert (ex.limit, ex.limit_value, ex.observed) == ("max_tool_calls", 6, 7)


def test_max_turns_stops_before_the_extra_model_call(emu2):
    out = go(emu2, "Loop forever.", DATA / "tight.yaml")
    r = out.result
    assert r.status == "budget_exhausted" and r.stop_reason == "max_turns"
    assert r.usage.model_calls == 3
    assert len(requests_for(emu2, "Loop forever.")) == 3  # the 4th request was never sent


def test_max_cost_stops_the_run(emu2):
    out = go(emu2, "Spend a lot.", DATA / "tight.yaml")
    assert out.result.status == "budget_exhausted" and out.result.stop_reason == "max_cost_usd"
    ex = next(e for e in out.events if e.type == "budget.exceeded")
    assert ex.limit == "max_cost_usd" and ex.observed > 0.05


def test_timeout_cancels_the_run(emu2):
    # Emulator only: timing is not replayable from cassettes.
    out = go(emu2, "Take your time.", DATA / "tight.yaml")
    assert out.result.status == "budget_exhausted" and out.result.stop_reason == "timeout_s"
    assert out.events[-1].type == "run.completed"


# --- faults and bad arguments ------------------------------------------------------------------------


def test_429_is_retried_by_the_sdk_and_visible(emu):
    out = go(emu, "Are you there?")
    assert out.result.status == "completed" and out.result.final_output == "Yes, the desk is open."
    reqs = requests_for(emu, "Are you there?")
    assert [r["status"] for r in reqs] == [429, 200]
    errs = [e for e in out.events if e.type == "error"]
    assert len(errs) == 1 and errs[0].retryable and "429" in errs[0].message


def test_schema_invalid_arguments_reach_the_model_as_validation_error(emu):
    q = "Look up case 42 with payments."
    out = go(emu, q)
    first = next(e for e in out.events if e.type == "tool.result")
    assert first.error == "validation_error" and len(first.output["details"]) == 2
    sent = tool_outputs_sent(requests_for(emu, q)[1])
    assert sent[0]["error"] == "validation_error"
    assert out.result.final_output == "Case EXP-42 owes 180 EUR."


def test_malformed_argument_json_is_a_validation_error(emu2):
    # Pinned: openai-agents 0.24 hands the raw string to on_invoke_tool; the gateway rejects it.
    out = go(emu2, "Break the arguments.", DATA / "tight.yaml")
    res = next(e for e in out.events if e.type == "tool.result")
    assert res.error == "validation_error" and "not valid JSON" in res.output["message"]
    assert out.result.final_output == "Recovered: validation_error"


def test_unknown_tool_name_pinned(emu2):
    # Pinned: openai-agents 0.24 raises ModelBehaviorError for a tool the agent does not have;
    # portagent ends the run failed with a provider error (no tool executed).
    out = go(emu2, "Call a ghost tool.", DATA / "tight.yaml")
    assert out.result.status == "failed" and out.result.stop_reason == "provider_error"
    assert "delete_everything" in (out.result.error or "")
    assert not [e for e in out.events if e.type == "tool.call"]


# --- structured output, delegation -------------------------------------------------------------------


def test_structured_output_valid_and_invalid(emu2):
    good = go(emu2, "Give me JSON for EXP-42.", DATA / "structured.yaml")
    assert good.result.output_valid is True and good.result.final_output == {
        "answer": "incomplete",
        "case_id": "EXP-42",
    }
    bad = go(emu2, "Give me broken JSON.", DATA / "structured.yaml")
    assert bad.result.status == "completed" and bad.result.output_valid is False
    req = requests_for(emu2, "Give me JSON for EXP-42.")[0]["body"]
    assert req["text"]["format"]["schema"]["required"] == ["answer", "case_id"]


def test_handoff_records_the_route(emu2):
    out = go(emu2, "I have a question about the payments of case EXP-42.", DATA / "triage.yaml")
    hand = [e for e in out.events if e.type == "handoff"]
    assert [(h.from_agent, h.to_agent, h.kind) for h in hand] == [("triage", "billing", "handoff")]
    assert out.events[-1].agent == "billing"
    assert out.result.final_output == "Billing here: case EXP-42 owes 180 EUR."
    reqs = requests_for(emu2, "I have a question about the payments of case EXP-42.")
    assert "transfer_to_billing" in {t["name"] for t in reqs[0]["body"]["tools"]}


def test_agent_as_tool_keeps_control(emu2):
    out = go(emu2, "Ask billing about case EXP-42.", DATA / "coordinator.yaml")
    hand = [e for e in out.events if e.type == "handoff"]
    assert [(h.from_agent, h.to_agent, h.kind) for h in hand] == [("coordinator", "billing", "agent_as_tool")]
    assert out.events[-1].agent == "coordinator"
    assert out.result.final_output == "Billing says: The balance of EXP-42 is 180 EUR."
    tool_call = next(e for e in out.events if e.type == "tool.call")
    assert tool_call.agent == "billing" and tool_call.tool == "get_student_record"


# --- equivalence across wire APIs and streaming; determinism -----------------------------------------


@pytest.mark.parametrize(
    "api,stream", [("responses", True), ("chat_completions", False), ("chat_completions", True)]
)
def test_wire_api_and_streaming_give_equivalent_traces(emu, api, stream):
    q = "Case EXP-42: what is missing and what do the rules say about documents?"
    base = go(emu, q)
    other = go(emu, q, options=RunOptions(streaming=stream, openai_api=api))
    diff = equivalent(base.events, other.events)
    assert diff, diff.report()
    assert [e.input_tokens for e in base.events if e.type == "model.call"] == [
        e.input_tokens for e in other.events if e.type == "model.call"
    ]
    reqs = requests_for(emu, q)
    chat = [r for r in reqs if r["path"].endswith("/chat/completions")]
    resp = [r for r in reqs if r["path"].endswith("/responses")]
    assert chat or api == "responses"
    declared_resp = sorted(t["name"] for t in resp[0]["body"]["tools"])
    if chat:
        declared_chat = sorted(t["function"]["name"] for t in chat[0]["body"]["tools"])
        assert declared_chat == declared_resp
        if stream:
            assert chat[-1]["body"]["stream_options"] == {"include_usage": True}


def test_same_script_twice_is_byte_identical(emu, tmp_path):
    q = "Case EXP-42: what is missing and what do the rules say about documents?"
    for name in ("a", "b"):
        go(emu, q, out=tmp_path / name, clock=FixedClock(), ids=IdFactory("seed"))
    import re

    from portagent.tracing.recorder import read_trace

    # With an injected clock and ids, only measured latencies differ between two emulator runs.
    a = (tmp_path / "a" / "trace.jsonl").read_text()
    b = (tmp_path / "b" / "trace.jsonl").read_text()
    strip = lambda t: re.sub(r'"latency_ms":[0-9.]+', "", t)  # noqa: E731
    assert strip(a) == strip(b)

    assert normalized_jsonl(read_trace(tmp_path / "a" / "trace.jsonl")) == normalized_jsonl(
        read_trace(tmp_path / "b" / "trace.jsonl")
    )


def test_otel_export_with_the_sdk_in_memory_exporter(emu):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from portagent.tracing.otel import export_spans

    out = go(emu, "Email ana.garcia@gmail.com that her DNI is missing.")
    exporter = InMemorySpanExporter()
    n = export_spans(out.events, exporter)
    spans = exporter.get_finished_spans()
    assert n == len(spans)
    names = [s.name for s in spans]
    assert (
        "invoke_agent support_desk" in names
        and "chat gpt-4.1-mini" in names
        and "execute_tool send_email" in names
    )
    tool = next(s for s in spans if s.name == "execute_tool send_email")
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert [ev.name for ev in tool.events] == ["portagent.permission.decision"]
    assert tool.events[0].attributes["decision"] == "deny"
    root = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert root.attributes["gen_ai.provider.name"] == "openai"
    assert all(f"{s.context.trace_id:032x}" == out.events[0].trace_id for s in spans)


# --- CLI and bad input -------------------------------------------------------------------------------


def test_cli_run_writes_trace_and_run_json(tmp_path):
    code, out, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--input",
        "What is the refund deadline?",
        "--emulator",
        str(SUPPORT / "emulator.yaml"),
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 0, err
    assert "status     completed" in out and "search_policy  decision=allow  result=ok" in out
    rec = json.loads((tmp_path / "o" / "run.json").read_text())
    assert (
        rec["kind"] == "run"
        and rec["manifest"]["source"] == "emulator"
        and rec["manifest"]["sdk"] == "openai-agents"
    )
    code, shown, _ = run_cli("trace", "show", str(tmp_path / "o" / "trace.jsonl"))
    assert code == 0 and "tool call    call_1 search_policy@1.0.0" in shown


def test_live_path_sends_the_key_as_the_vendor_expects_and_writes_it_nowhere(emu, tmp_path, monkeypatch):
    secret = "sk-live-looking-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    code, out, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--input",
        "What is the refund deadline?",
        "--live",
        "--base-url",
        emu.base_url,
        "--out",
        str(tmp_path / "live"),
    )
    assert code == 0, err
    req = requests_for(emu, "What is the refund deadline?")[-1]
    auth = {k.lower(): v for k, v in req["headers"].items()}["authorization"]
    assert auth.startswith("Bearer ") and secret not in auth  # sent as a bearer token; the log masks it
    rec = json.loads((tmp_path / "live" / "run.json").read_text())
    assert rec["manifest"]["source"] == "endpoint"  # a local stand-in is not the vendor (issue 15)
    assert rec["manifest"]["base_url"] == emu.base_url
    files = [f for f in (tmp_path / "live").rglob("*") if f.is_file()]
    assert any(f.parent.name == "journal" for f in files)  # the run journal, too, holds no key
    for f in files:
        assert secret not in f.read_text()


def test_live_without_key_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = run_cli("run", str(AGENT), "--provider", "openai", "--input", "hi", "--live")
    assert code == 2 and "OPENAI_API_KEY" in err


def test_input_file_not_found():
    code, _, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--input-file",
        "nope.txt",
        "--emulator",
        str(SUPPORT / "emulator.yaml"),
    )
    assert code == 2 and "nope.txt" in err


def test_no_model_id_for_the_provider(tmp_path):
    spec = tmp_path / "a.yaml"
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: a\ninstructions: hi\nmodels: {adk: gemini-2.5-flash}\n"
    )
    code, _, err = run_cli(
        "run",
        str(spec),
        "--provider",
        "openai",
        "--input",
        "hi",
        "--emulator",
        str(SUPPORT / "emulator.yaml"),
    )
    assert code == 2 and "no model id for provider 'openai'" in err and "models.openai" in err


def test_missing_extra_gives_install_hint(monkeypatch):
    from dataclasses import replace

    from portagent.adapters import base

    missing = replace(base.REGISTRY["openai"], sdk_module="agents_not_installed_here")
    monkeypatch.setitem(base.REGISTRY, "openai", missing)
    code, _, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--input",
        "hi",
        "--emulator",
        str(SUPPORT / "emulator.yaml"),
    )
    assert code == 2 and "pip install 'portagent[openai]'" in err


def test_unreachable_endpoint_exit_3_with_error_event(tmp_path, monkeypatch):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    code, out, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--input",
        "hi",
        "--live",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--out",
        str(tmp_path / "x"),
    )
    assert code == 3 and "Traceback" not in err
    events = [json.loads(x) for x in (tmp_path / "x" / "trace.jsonl").read_text().splitlines()]
    assert events[-2]["type"] == "error" and "cannot reach" in events[-2]["message"]
    assert events[-1]["status"] == "failed"


def test_deciding_an_unknown_approval_id():
    code, _, err = run_cli("approvals", "approve", "apr_doesnotexist")
    assert code == 2 and "apr_doesnotexist" in err and "Traceback" not in err


def test_public_stream_api_yields_events_as_they_happen(emu):
    import portagent

    async def collect() -> list[Any]:
        req = portagent.RunRequest(input="What is the refund deadline?", provider="openai")
        cfg = portagent.RunConfig(endpoint=portagent.Endpoint(base_url=emu.base_url, api_key="sk-dummy"))
        seen = []
        async for event in portagent.stream(AGENT, req, cfg):
            seen.append(event)
        return seen

    events = asyncio.run(collect())
    assert [e.type for e in events][:2] == ["run.started", "model.call"]
    assert events[-1].type == "run.completed" and events[-1].status == "completed"
