"""The Claude Agent SDK adapter against portagent's emulator: the real claude-agent-sdk 0.2.189 driving
its bundled Claude Code CLI 2.1.332 (no mocks of the SDK, the CLI or the gateway).

Every run starts the CLI (~0.5–1 s each), so these tests cannot be replays; the transport seam that
a cassette will use is tested here too. Assertions read the emulator's request log — what the CLI
actually sent: tool names and schemas, the system prompt, the tool results returned to the model.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import EXAMPLES, REPO

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.errors import UsageError
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tracing.compare import normalized_jsonl

DATA = REPO / "tests" / "adapters" / "claude" / "data"
SUPPORT = EXAMPLES / "support_desk"
AGENT = SUPPORT / "agent.yaml"
TWO_TOOLS = "Case EXP-42: what is missing and what do the rules say about documents?"
EMAIL_INSIDE = "Email ana.garcia@uni.example that her DNI is missing."

sys.path.insert(0, str(SUPPORT))
import support_desk_handlers as handlers  # noqa: E402

pytestmark = pytest.mark.slow  # every test starts the Claude Code CLI at least once


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SUPPORT / "emulator.yaml")) as e:
        yield e


@pytest.fixture(scope="module")
def emu2():
    with serve(load_script(DATA / "script.yaml")) as e:
        yield e


@pytest.fixture(autouse=True)
def _no_cli_left_behind():
    """Every run, however it ends, leaves no Claude Code process behind."""
    import os
    import subprocess

    yield
    ps = subprocess.run(
        ["ps", "--ppid", str(os.getpid()), "-o", "stat=,cmd="], capture_output=True, text=True
    )
    assert [line for line in ps.stdout.splitlines() if "claude" in line] == []


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
    api_key: str = "sk-ant-dummy",
) -> Any:
    req = RunRequest(
        input=text, provider="claude", idempotency_key=key, scopes=["tickets:write", "email:send"]
    )
    cfg = RunConfig(
        endpoint=Endpoint(base_url=emu.base_url, api_key=api_key),
        approver=approver,
        out_dir=out,
        options=options or RunOptions(),
        clock=clock,
        ids=ids,
    )
    return asyncio.run(arun_full(agent, req, cfg))


def requests_for(emu: Any, first_user: str) -> list[dict[str, Any]]:
    """The logged Messages requests whose first user message is ``first_user``."""
    out = []
    for r in emu.requests():
        messages = (r.get("body") or {}).get("messages") or []
        if messages and first_user in json.dumps(messages[0], ensure_ascii=False):
            out.append(r)
    return out


def tool_results_sent(req: dict[str, Any]) -> list[dict[str, Any]]:
    """``tool_result`` blocks of the request's last user message (what the model got back)."""
    last = req["body"]["messages"][-1]
    return [c for c in last["content"] if isinstance(c, dict) and c.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    """A tool_result's text without the CLI's appended ``<system-reminder>`` blocks."""
    content = block["content"]
    text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
    return re.sub(r"<system-reminder>.*?</system-reminder>", "", text, flags=re.S).strip()


def types(out: Any) -> list[str]:
    return [e.type for e in out.events]


def of(out: Any, kind: str) -> list[Any]:
    return [e for e in out.events if e.type == kind]


# --- happy path and what the CLI declared --------------------------------------------------------


def test_two_tools_happy_path_and_what_the_cli_sent(emu):
    from portagent.adapters.claude.agent import DEFAULT_CLAUDE_MODEL
    from portagent.contracts.bundle import load_agent

    out = go(emu, TWO_TOOLS)
    r = out.result
    assert r.status == "completed" and r.stop_reason == "final_output"
    assert r.final_output.startswith("Your case lacks the DNI. Enrolment needs a DNI")
    assert [(e.tool, e.via) for e in of(out, "tool.call")] == [
        ("get_student_record", "function"),
        ("search_policy", "function"),
    ]
    assert [e.call_id for e in of(out, "tool.call")] == ["call_1", "call_2"]
    # model.call precedes the tool calls it asked for (the hooks wait for it), usage in OTel semantics.
    assert types(out)[1:5] == ["model.call", "tool.call", "permission.decision", "tool.result"]
    calls = of(out, "model.call")
    assert len(calls) == 3 and all(c.input_tokens == 400 and c.output_tokens == 40 for c in calls)
    assert [c.finish_reason for c in calls] == ["tool_calls", "tool_calls", "stop"]
    assert r.usage.model_calls == 3 and r.usage.input_tokens == 1200
    # Cost is the CLI's own total_cost_usd (1200 x $3/M + 120 x $15/M) plus the tool's cost_usd.
    assert r.cost_source == "vendor" and r.cost_usd == pytest.approx(0.0036 + 0.0018 + 0.01)

    bundle = load_agent(AGENT)
    reqs = requests_for(emu, TWO_TOOLS)
    assert len(reqs) == 3
    body = reqs[0]["body"]
    # The example and the adapter pin the same model id, and the CLI sent exactly that one.
    assert bundle.spec.models.claude == DEFAULT_CLAUDE_MODEL == body["model"]
    declared = {t["name"]: t for t in body["tools"]}
    root_tools = bundle.node.tools
    assert set(declared) == {f"mcp__portagent__{n}" for n in root_tools} | {"Agent"}
    for name, spec in root_tools.items():
        assert declared[f"mcp__portagent__{name}"]["input_schema"] == spec.input_schema
        assert declared[f"mcp__portagent__{name}"]["description"] == spec.model_description()
    system = [b["text"] for b in body["system"]]
    assert bundle.spec.instructions.strip() in [s.strip() for s in system]
    # What went back to the model is the gateway's structured observation, as JSON text.
    sent = json.loads(result_text(tool_results_sent(reqs[1])[0]))
    assert sent == of(out, "tool.result")[0].output and sent["ok"] is True


def test_denied_tool_is_never_run_and_the_model_gets_permission_denied(emu):
    before = len(handlers.SENT_EMAILS)
    out = go(emu, "Email ana.garcia@gmail.com that her DNI is missing.", approver="auto-approve")
    assert len(handlers.SENT_EMAILS) == before  # the handler never ran
    decision = of(out, "permission.decision")[0]
    assert decision.decision == "deny" and decision.rule == "no-email-outside-university"
    reqs = requests_for(emu, "Email ana.garcia@gmail.com that her DNI is missing.")
    block = tool_results_sent(reqs[-1])[0]
    assert block["is_error"] is True
    sent = json.loads(result_text(block))
    assert sent["ok"] is False and sent["error"] == "permission_denied"
    assert out.result.final_output == "Email to ana.garcia@gmail.com: permission_denied."
    # The CLI counts our denial as one of its permission_denials.
    assert (
        of(out, "run.completed")[0].provider_details["permission_denials"][0]["tool_name"]
        == "mcp__portagent__send_email"
    )


# --- approvals -----------------------------------------------------------------------------------


def test_approval_approve_and_reject(emu):
    before = len(handlers.SENT_EMAILS)
    out = go(emu, EMAIL_INSIDE, approver="auto-approve")
    assert len(handlers.SENT_EMAILS) == before + 1
    assert [e.status for e in of(out, "approval.resolved")] == ["approved"]
    assert of(out, "tool.result")[0].ok

    out = go(emu, EMAIL_INSIDE, approver="auto-deny")
    assert len(handlers.SENT_EMAILS) == before + 1  # not sent again
    res = of(out, "tool.result")[0]
    assert res.ok is False and res.error == "approval_rejected"
    sent = json.loads(result_text(tool_results_sent(requests_for(emu, EMAIL_INSIDE)[-1])[0]))
    assert sent["error"] == "approval_rejected"


def test_approval_edit_is_revalidated_and_returned_as_updated_input(emu):
    before = len(handlers.SENT_EMAILS)
    edited = {"to": "ana.garcia@uni.example", "subject": "Your DNI", "body": "Please upload your DNI today."}
    out = go(
        emu,
        EMAIL_INSIDE,
        approver={
            "type": "scripted",
            "decisions": [{"tool": "send_email", "decision": "edit", "args": edited}],
        },
    )
    assert handlers.SENT_EMAILS[before:] == [edited]  # the handler ran once, with the edited input
    assert of(out, "approval.resolved")[0].effective_args == edited
    assert of(out, "tool.call")[0].args["subject"] == "Missing DNI"  # the model's proposal stays in the trace

    # An edit the policy denies (outside the university) is refused before the CLI runs anything.
    bad = dict(edited, to="ana@gmail.com")
    out = go(
        emu,
        EMAIL_INSIDE,
        approver={"type": "scripted", "decisions": [{"tool": "send_email", "decision": "edit", "args": bad}]},
    )
    assert len(handlers.SENT_EMAILS) == before + 1
    res = of(out, "tool.result")[0]
    assert res.ok is False and res.error == "approval_rejected" and res.output["details"]["edit_refused"]


def test_defer_waits_then_resumes_with_exactly_one_effect(emu, tmp_path):
    from portagent.tools.approvals import ApprovalStore

    key = "claude:ana:missing-dni-email"
    before = len(handlers.SENT_EMAILS)
    out = go(emu, EMAIL_INSIDE, approver="defer", key=key, out=tmp_path / "run")
    r = out.result
    assert r.status == "waiting_approval" and r.stop_reason == "approval_pending"
    assert len(r.pending_approvals) == 1 and len(handlers.SENT_EMAILS) == before
    assert of(out, "tool.result")[0].error == "approval_required"

    ApprovalStore().approve(r.pending_approvals[0], reviewer="lead")
    again = go(emu, EMAIL_INSIDE, approver="defer", key=key)
    assert (
        again.result.status == "completed" and again.result.run_id == r.run_id and again.result.attempt == 2
    )
    assert len(handlers.SENT_EMAILS) == before + 1
    assert of(again, "approval.resolved")[0].status == "approved"
    third = go(emu, EMAIL_INSIDE, approver="defer", key=key)
    assert third.result.status == "duplicate" and len(handlers.SENT_EMAILS) == before + 1


# --- budgets -------------------------------------------------------------------------------------


def test_max_turns_stops_before_the_extra_model_call(emu2):
    out = go(emu2, "Keep looking it up.", DATA / "budget_agent.yaml")
    r = out.result
    assert r.status == "budget_exhausted" and r.stop_reason == "max_turns"
    assert r.usage.model_calls == 2 and len(requests_for(emu2, "Keep looking it up.")) == 2
    exceeded = of(out, "budget.exceeded")[0]
    assert (exceeded.limit, exceeded.limit_value, exceeded.observed) == ("max_turns", 2, 3)


def test_max_cost_stops_the_run_before_the_tool_runs(emu2):
    out = go(emu2, "Search the handbook, whatever it costs.", DATA / "budget_agent.yaml")
    r = out.result
    assert r.status == "budget_exhausted" and r.stop_reason == "max_cost_usd"
    assert of(out, "budget.exceeded")[0].observed == pytest.approx(3.00015)
    assert of(out, "tool.call") == []  # the call the expensive turn asked for never reached the gateway
    assert len(requests_for(emu2, "Search the handbook, whatever it costs.")) == 1


def test_max_tool_calls_rejects_the_seventh_parallel_call(emu):
    out = go(emu, "Search the handbook for everything about fees.")
    results = of(out, "tool.result")
    assert [e.call_id for e in of(out, "tool.call")] == [f"call_{i}" for i in range(1, 8)]
    assert [e.ok for e in results] == [True] * 6 + [False] and results[-1].error == "budget_exhausted"
    r = out.result
    assert r.status == "budget_exhausted" and r.stop_reason == "max_tool_calls"
    ex = of(out, "budget.exceeded")[0]
    assert (ex.limit, ex.limit_value, ex.observed) == ("max_tool_calls", 6, 7)
    assert r.usage.model_calls == 1  # the CLI was stopped before answering the 7th refusal


def test_cli_retry_after_429_is_visible(emu):
    out = go(emu, "Are you there?")
    assert out.result.status == "completed" and out.result.final_output == "Yes, the desk is open."
    retry = of(out, "error")[0]
    assert (
        retry.error_type == "api_retry" and retry.retryable and retry.provider_details["error_status"] == 429
    )
    assert [r["status"] for r in requests_for(emu, "Are you there?")] == [429, 200]


# --- malformed model output ----------------------------------------------------------------------


def test_schema_invalid_arguments_reach_the_model_as_validation_error(emu):
    q = "Look up case 42 with payments."
    out = go(emu, q)
    first = of(out, "tool.result")[0]
    assert first.ok is False and first.error == "validation_error"
    # The gateway answered in can_use_tool, before the SDK's own MCP validation could.
    sent = json.loads(result_text(tool_results_sent(requests_for(emu, q)[1])[0]))
    assert sent["error"] == "validation_error"
    assert out.result.final_output == "Case EXP-42 owes 180 EUR."


def test_malformed_json_and_unknown_tool_are_answered_by_the_cli_itself(emu2):
    # Pinned (Claude Code 2.1.332): both are refused inside the CLI before any hook runs, so the gateway
    # never sees the call (no tool.call event) and the model reads the CLI's own <tool_use_error>.
    out = go(emu2, "Look up EXP-42, quickly.")
    assert of(out, "tool.call") == [] and out.result.status == "completed"
    assert "could not be parsed as JSON" in out.result.final_output
    out = go(emu2, "Delete everything about EXP-42.")
    assert of(out, "tool.call") == [] and out.result.status == "completed"
    assert "No such tool available: delete_everything" in out.result.final_output


def test_builtin_tool_not_granted_is_unavailable_and_the_run_continues(emu2):
    q = "Run ls in the shared folder."
    out = go(emu2, q)
    assert out.result.status == "completed" and of(out, "tool.call") == []
    assert "No such tool available: Bash" in out.result.final_output
    assert "Bash" not in {t["name"] for t in requests_for(emu2, q)[0]["body"]["tools"]}


# --- built-in tools: governed, not executed ------------------------------------------------------


def test_granted_builtins_are_decided_by_the_policy_and_observed(tmp_path):
    work = tmp_path / "scratch"
    victim = work / "keep"
    victim.mkdir(parents=True)
    (victim / "important.txt").write_text("do not delete")
    (work / "notes.txt").write_text("alpha\nbeta\n")
    q = "Tidy the scratch folder."
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "defaults": {"usage": {"input_tokens": 100, "output_tokens": 10}},
        "conversations": [
            {
                "name": "shell",
                "match": {"first_user": q},
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "Bash",
                                "arguments": {
                                    "command": f"rm -rf {victim}",
                                    "description": "Remove old files",
                                },
                            }
                        ]
                    },
                    {
                        "tool_calls": [
                            {"name": "Bash", "arguments": {"command": "echo tidy", "description": "Say"}}
                        ]
                    },
                    {"tool_calls": [{"name": "Read", "arguments": {"file_path": str(work / "notes.txt")}}]},
                    {
                        "tool_calls": [
                            {
                                "name": "Write",
                                "arguments": {"file_path": str(work / "summary.txt"), "content": "draft"},
                            }
                        ]
                    },
                    {"text": "Done."},
                ],
            }
        ],
    }
    approver = {
        "type": "scripted",
        "decisions": [
            {
                "tool": "Write",
                "decision": "edit",
                "args": {"file_path": str(work / "summary.txt"), "content": "reviewed summary"},
            }
        ],
    }
    with serve(script) as e:
        out = go(
            e,
            q,
            DATA / "shell_agent.yaml",
            approver=approver,
            options=RunOptions(workdir=tmp_path / "runs", extra={"cwd": str(work)}),
        )
        reqs = requests_for(e, q)
    assert out.result.status == "completed", out.result.error
    assert victim.exists() and (victim / "important.txt").read_text() == "do not delete"  # never executed
    calls = of(out, "tool.call")
    assert [(c.tool, c.via) for c in calls] == [
        ("Bash", "builtin"),
        ("Bash", "builtin"),
        ("Read", "builtin"),
        ("Write", "builtin"),
    ]
    decisions = of(out, "permission.decision")
    assert [(d.decision, d.rule) for d in decisions] == [
        ("deny", "no-rm"),
        ("allow", "shell-allowed"),
        ("allow", "default:read"),
        ("approval_required", "default:reversible_write"),
    ]
    results = {r.call_id: r for r in of(out, "tool.result")}
    assert results["call_1"].error == "permission_denied"
    assert (
        results["call_2"].ok and results["call_2"].output["stdout"].strip() == "tidy"
    )  # seen via PostToolUse
    assert results["call_3"].ok and "alpha" in json.dumps(results["call_3"].output)
    assert (work / "summary.txt").read_text() == "reviewed summary"  # the edit went back as updatedInput
    card = of(out, "approval.requested")[0].card
    assert (
        card["args"] == {"file_path": str(work / "summary.txt"), "content": "draft"}
        and card["effect"] == "reversible_write"
    )
    assert card["context"] == {"cwd": str(work)}  # where the built-in runs, beside (not in) its arguments
    # Only the granted built-ins were declared, and the denial reached the model as an observation.
    assert {t["name"] for t in reqs[0]["body"]["tools"]} == {"Bash", "Read", "Write"}
    assert json.loads(result_text(tool_results_sent(reqs[1])[0]))["error"] == "permission_denied"


# --- isolation -----------------------------------------------------------------------------------


def test_isolated_home_is_removed_and_the_users_config_never_leaks_in(emu, tmp_path, monkeypatch):
    fake_home = tmp_path / "user-home"
    (fake_home / ".claude").mkdir(parents=True)
    (fake_home / ".claude" / "CLAUDE.md").write_text("LEAKED-USER-MEMORY")
    (fake_home / ".claude" / "settings.json").write_text(json.dumps({"model": "claude-opus-4-6"}))
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(fake_home / ".claude"))
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-opus-4-6")
    runs = tmp_path / "runs"
    q = "What is the refund deadline?"
    seen: list[Path] = []
    out = go(emu, q, options=RunOptions(workdir=runs, extra={"claude_transport_factory": _spy_factory(seen)}))
    assert out.result.status == "completed"
    assert seen and not seen[0].exists()  # the run's HOME existed during the run and is gone now
    assert list(runs.iterdir()) == []
    for r in requests_for(emu, q):
        assert r["body"]["model"] == "claude-sonnet-4-6"
        assert "LEAKED-USER-MEMORY" not in json.dumps(r["body"])
    assert sorted(p.name for p in (fake_home / ".claude").iterdir()) == ["CLAUDE.md", "settings.json"]


def _spy_factory(seen: list[Path]) -> Any:
    from portagent.adapters.claude.transport import subprocess_transport

    def factory(prompt: Any, cli_options: Any) -> Any:
        seen.append(Path(cli_options.env["HOME"]))
        assert Path(cli_options.env["HOME"]).is_dir()
        return subprocess_transport(prompt, cli_options)

    return factory


def test_transport_seam_gets_the_stdio_permission_flag_and_sees_every_line(emu):
    from claude_agent_sdk import Transport

    from portagent.adapters.claude.transport import subprocess_transport

    lines: list[dict[str, Any]] = []
    options_seen: list[Any] = []

    class Recording(Transport):  # what a cassette recorder will look like
        def __init__(self, inner: Transport) -> None:
            self.inner = inner

        async def connect(self) -> None:
            await self.inner.connect()

        async def write(self, data: str) -> None:
            lines.append({"dir": "sdk->cli", **json.loads(data)})
            await self.inner.write(data)

        async def _read(self) -> Any:
            async for m in self.inner.read_messages():
                lines.append({"dir": "cli->sdk", **m})
                yield m

        def read_messages(self) -> Any:
            return self._read()

        async def close(self) -> None:
            await self.inner.close()

        def is_ready(self) -> bool:
            return self.inner.is_ready()

        async def end_input(self) -> None:
            await self.inner.end_input()

    def factory(prompt: Any, cli_options: Any) -> Any:
        options_seen.append(cli_options)
        return Recording(subprocess_transport(prompt, cli_options))

    out = go(
        emu, "What is the refund deadline?", options=RunOptions(extra={"claude_transport_factory": factory})
    )
    assert out.result.status == "completed"
    opts = options_seen[0]
    assert opts.permission_prompt_tool_name == "stdio" and opts.permission_mode == "default"
    assert opts.setting_sources == [] and opts.extra_args["no-session-persistence"] is None
    subtypes = [(m.get("request") or {}).get("subtype") for m in lines if m.get("type") == "control_request"]
    assert "can_use_tool" in subtypes and "mcp_message" in subtypes and "initialize" in subtypes


# --- structured output, subagents, multi-turn ----------------------------------------------------


def test_structured_output_is_validated_by_the_cli_then_by_portagent(emu2):
    q = "Report EXP-42 as JSON."
    out = go(emu2, q, DATA / "structured_agent.yaml")
    r = out.result
    assert r.status == "completed" and r.output_valid is True
    assert r.final_output == {"case_id": "EXP-42", "balance_due": 180}
    reqs = requests_for(emu2, q)
    declared = {t["name"]: t for t in reqs[0]["body"]["tools"]}
    assert declared["StructuredOutput"]["input_schema"]["properties"] == {
        "case_id": {"type": "string"},
        "balance_due": {"type": "integer"},
    }
    # Pinned: the CLI checks the first (invalid) attempt itself and tells the model to try again.
    assert "does not match required schema" in result_text(tool_results_sent(reqs[1])[0])
    assert of(out, "tool.call") == []  # StructuredOutput is the output channel, not a tool call


def test_agent_as_tool_subagent(emu2):
    q = "How much does case EXP-42 still owe?"
    out = go(emu2, q)
    r = out.result
    assert r.status == "completed" and r.final_output == "Billing answered; EXP-42 owes 180 EUR."
    handoff = of(out, "handoff")[0]
    assert (handoff.from_agent, handoff.to_agent, handoff.kind) == (
        "support_desk",
        "billing_specialist",
        "agent_as_tool",
    )
    assert [(c.agent, c.provider_details["usage_source"]) for c in of(out, "model.call")] == [
        ("support_desk", "stream"),
        ("billing_specialist", "message_start"),
        ("billing_specialist", "agent_result"),
        ("support_desk", "stream"),
    ]
    call = of(out, "tool.call")[0]
    assert call.tool == "get_student_record" and call.args["include_payments"] is True
    assert of(out, "tool.result")[0].output["balance_due"] == 180
    assert types(out).index("handoff") < types(out).index("tool.call")
    # Each agent saw only its own tools; the subagent got its own instructions.
    reqs = emu2.requests()
    sub = [x for x in reqs if "Billing question: balance of EXP-42" in json.dumps(x["body"]["messages"][0])]
    assert {t["name"] for t in sub[0]["body"]["tools"]} == {"mcp__portagent__get_student_record"}
    assert any("You are the billing specialist." in b["text"] for b in sub[0]["body"]["system"])
    root = requests_for(emu2, q)[0]
    assert "Agent" in {t["name"] for t in root["body"]["tools"]}


def test_a_subagent_whose_model_request_fails_leaves_an_error_event(emu2):
    """The subagent's request is refused (400: the emulator has no conversation for it). Claude Code hands
    the API error to the coordinator as the Agent tool's result and the coordinator answers, so the run
    completes — and the trace says what failed, under the subagent's name, as any adapter's failed
    request does (it said nothing: a completed run with no error event)."""
    out = go(emu2, "Ask billing something nobody scripted.")
    sub = [
        x
        for x in emu2.requests()
        if "A billing question with no script" in json.dumps(x["body"]["messages"][0])
    ]
    assert sub and {x["status"] for x in sub} == {400}  # what the CLI sent for the subagent, and got
    assert out.result.status == "completed" and "API Error: 400" in (out.result.final_output or "")
    (err,) = of(out, "error")
    assert (err.agent, err.error_type, err.retryable) == ("billing_specialist", "http_400", False)
    assert "billing_specialist's model request failed" in err.message and "API Error: 400" in err.message
    assert err.provider_details["parent_tool_use_id"]  # the Agent call it ran for
    assert [c.agent for c in of(out, "model.call")] == ["support_desk", "support_desk"]  # no call from it


def test_delegation_outside_the_spec_is_refused(emu2):
    out = go(emu2, "Ask a general agent about EXP-42.")
    assert out.result.status == "completed" and of(out, "handoff") == []
    assert "may only delegate to: billing_specialist" in out.result.final_output


def test_multi_turn_input_is_one_conversation(emu2):
    out = go(emu2, ["Hello desk.", "What is the refund deadline?"])
    r = out.result
    assert r.status == "completed" and r.final_output == "Refunds are requested within 30 days of payment."
    assert r.usage.model_calls == 3 and [c.tool for c in of(out, "tool.call")] == ["search_policy"]
    # Usage in OTel semantics: Anthropic's input_tokens (200) excludes the cache buckets (150 + 50).
    first, second, _ = of(out, "model.call")
    assert (first.input_tokens, first.cache_read_tokens, first.cache_write_tokens) == (400, 150, 50)
    assert second.reasoning_tokens == 12 and second.output_tokens == 40  # a thinking block is no extra call
    last = requests_for(emu2, "Hello desk.")[-1]["body"]["messages"]
    texts = json.dumps(last)
    assert "Hello! What do you need?" in texts and "What is the refund deadline?" in texts


# --- determinism and errors ----------------------------------------------------------------------


def test_same_script_twice_gives_the_same_normalized_trace(emu, tmp_path):
    from portagent.tracing.recorder import read_trace

    for name in ("a", "b"):
        go(emu, TWO_TOOLS, out=tmp_path / name, clock=FixedClock(), ids=IdFactory("seed"))
    a = read_trace(tmp_path / "a" / "trace.jsonl")
    b = read_trace(tmp_path / "b" / "trace.jsonl")
    assert normalized_jsonl(a) == normalized_jsonl(b)


def test_cli_error_fails_the_run_with_the_cli_message(emu):
    out = go(emu, "What is the refund deadline?", api_key="")
    r = out.result
    assert r.status == "failed" and r.stop_reason == "provider_error"
    err = of(out, "error")[0]
    assert "Not logged in" in err.message and "Not logged in" in (r.error or "")


def test_unreachable_endpoint_fails_after_the_clis_retries(tmp_path):
    class Nowhere:  # port 9 (discard): nothing listens, the connection is refused at once
        base_url = "http://127.0.0.1:9"

    out = go(Nowhere(), "What is the refund deadline?")
    r = out.result
    assert r.status == "failed" and r.stop_reason == "provider_error" and "ECONNREFUSED" in (r.error or "")
    retries = [e for e in of(out, "error") if e.error_type == "api_retry"]
    assert len(retries) == 2  # CLAUDE_CODE_MAX_RETRIES=2 (the CLI's default of 10 takes minutes)
    assert of(out, "run.completed")[0].status == "failed"


def test_cli_path_missing_or_not_executable_is_a_usage_error(emu, tmp_path):
    with pytest.raises(UsageError, match=r"cli_path .*no such file"):
        go(
            emu,
            "What is the refund deadline?",
            options=RunOptions(extra={"cli_path": str(tmp_path / "nope")}),
        )
    plain = tmp_path / "claude"
    plain.write_text("not a binary")
    with pytest.raises(UsageError, match=r"cli_path .*not executable"):
        go(emu, "What is the refund deadline?", options=RunOptions(extra={"cli_path": str(plain)}))


def test_timeout_stops_the_cli_at_once_and_cleans_up(emu2, tmp_path):
    import time

    runs = tmp_path / "runs"
    t0 = time.monotonic()
    out = go(emu2, "Take your time.", DATA / "slow_agent.yaml", options=RunOptions(workdir=runs))
    elapsed = time.monotonic() - t0
    r = out.result
    assert r.status == "budget_exhausted" and r.stop_reason == "timeout_s"
    assert elapsed < 6  # timeout_s is 1.5; the CLI is terminated, not awaited for 5 s more (>= 6.5 s)
    assert list(runs.iterdir()) == []


EQUIVALENCE_QUESTIONS = (
    TWO_TOOLS,
    "Email ana.garcia@gmail.com that her DNI is missing.",
    "Look up case 42 with payments.",
    "Search the handbook for everything about fees.",
)


def _equivalence_trace(emu: Any, provider: str, q: str) -> Any:
    # (A ticket's effect_id comes from the id factory, whose draw count differs between SDKs.)
    req = RunRequest(input=q, provider=provider, scopes=["tickets:write", "email:send"])
    cfg = RunConfig(
        endpoint=Endpoint(base_url=emu.base_url, api_key="sk-dummy"),
        approver="auto-approve",
        clock=FixedClock(),
        ids=IdFactory("seed"),
        scope=f"equivalence:{provider}:{q}",
    )
    return asyncio.run(arun_full(AGENT, req, cfg)).events


@pytest.fixture(scope="module")
def claude_equivalence_traces(emu: Any) -> dict[str, Any]:
    """Claude's trace of each question, made once and compared with each other provider's (its run is the
    same for every comparison: same question, clock, id seed and emulator scope)."""
    return {q: _equivalence_trace(emu, "claude", q) for q in EQUIVALENCE_QUESTIONS}


@pytest.mark.parametrize("other", ["openai", "adk"])
def test_same_script_gives_equivalent_traces_across_providers(
    emu: Any, claude_equivalence_traces: dict[str, Any], other: str
) -> None:
    from portagent.tracing.compare import equivalent

    for q in EQUIVALENCE_QUESTIONS:
        traces = {"claude": claude_equivalence_traces[q], other: _equivalence_trace(emu, other, q)}
        verdict = equivalent(traces["claude"], traces[other])
        assert verdict, f"{q!r}:\n{verdict.report()}"


def test_replay_without_a_transport_cassette_is_refused(emu):
    req = RunRequest(input="What is the refund deadline?", provider="claude")
    cfg = RunConfig(
        endpoint=Endpoint(source="emulator", mode="replay", base_url=emu.base_url, api_key="sk-ant-dummy")
    )
    before = len(emu.requests())
    with pytest.raises(UsageError, match="transport cassette"):
        asyncio.run(arun_full(AGENT, req, cfg))
    assert len(emu.requests()) == before  # refused before the CLI started


@pytest.mark.parametrize("alias", ["opus", "sonnet"])
def test_a_model_alias_whose_requests_carry_a_system_message_runs(
    emu: Any, tmp_path: Path, alias: str
) -> None:
    """For the aliases ``opus``/``sonnet`` the CLI sends its environment notes as a message of role
    ``system`` among the turns; the emulator refused it (``messages[1].role must be 'user' or 'assistant'``)
    and the run failed with provider_error. It is read as instructions, not as a turn."""
    import shutil

    folder = tmp_path / "desk"
    shutil.copytree(SUPPORT, folder, ignore=shutil.ignore_patterns("__pycache__"))
    spec = folder / "agent.yaml"
    spec.write_text(spec.read_text().replace("claude: claude-sonnet-4-6", f"claude: {alias}"))
    before = len(emu.requests())
    out = go(emu, TWO_TOOLS, agent=spec)
    assert out.result.status == "completed", out.result.error
    sent = emu.requests()[before:]
    assert sent and all(r["body"]["model"] != "claude-sonnet-4-6" for r in sent)
    roles = [m.get("role") for r in sent for m in r["body"]["messages"]]
    assert "system" in roles  # what the CLI really sent: the case this test is about
    assert of(out, "tool.result")  # the scripted conversation went on past the first reply
