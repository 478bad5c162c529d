"""``portagent capabilities``, and every capability flag driven against what the adapters really do.

Each drive observes one flag on each provider (a run against the emulator, a refusal, the request log,
or the SDK's own API) and asserts ``observed == PROFILES[provider].<flag>``, so the table printed by
``portagent capabilities`` cannot drift from the code. ``DRIVES`` maps every flag to its test; a test
checks that it covers ``CAPABILITY_FLAGS`` exactly, so a new flag fails until it is driven.

A refusal (``UnsupportedFeatureError``) comes from the runner's check, which reads the profile; where
a refusal alone would be circular, the drive also shows the adapter or SDK itself cannot do it (ADK
builds no agent tree with a cycle, Claude refuses nested delegation, openai/ADK declare no built-in
tool even when the runner's check is bypassed).

The Claude Code CLI is started four times in this file (agents as tools; structured output with
streaming and vendor cost; a two-message session; built-in + MCP tools), about a second each.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from importlib.metadata import version

import pytest
from _migration_helpers import DATA, DUMMY_KEYS, SCRIPT, mcp_server, of, run_spec, write_spec
from _support import REPO, run_cli

from portagent.contracts.capabilities import CAPABILITY_FLAGS, PROFILES
from portagent.contracts.errors import UnsupportedFeatureError
from portagent.emulator import load_script, serve

PROVIDERS = ("openai", "adk", "claude")
SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "status": {"type": "string"}},
    "required": ["order_id", "status"],
    "additionalProperties": False,
}

DRIVES = {
    "handoffs": "test_handoffs",
    "agents_as_tools": "test_agents_as_tools",
    "handoff_cycles": "test_handoff_cycles",
    "structured_output": "test_structured_output",
    "sessions": "test_sessions",
    "streaming": "test_streaming",
    "mcp": "test_mcp",
    "native_tracing": "test_native_tracing",
    "vendor_cost": "test_vendor_cost",
    "builtin_tools": "test_builtin_tools",
    "approvals_resume": "test_approvals_resume",
}


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


def refused(feature: str, fn, *args, **kw) -> bool:
    """True when the run is refused naming ``feature``; False when it ran."""
    try:
        fn(*args, **kw)
    except UnsupportedFeatureError as e:
        assert feature in str(e), str(e)
        return True
    return False


def assert_profile(flag: str, observed: dict[str, bool]) -> None:
    expected = {p: getattr(PROFILES[p], flag) for p in observed}
    assert observed == expected, f"{flag}: adapters do {observed}, the profile says {expected}"


# --- the command ---------------------------------------------------------------------------------


def test_capabilities_json_is_the_profiles_with_installed_versions():
    from claude_agent_sdk._cli_version import __cli_version__

    from portagent.adapters.base import REGISTRY, get_adapter

    code, out, _ = run_cli("capabilities", "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data["flags"]) == list(CAPABILITY_FLAGS) and all(data["flags"].values())
    for provider in PROVIDERS:
        entry = data["providers"][provider]
        assert entry["capabilities"] == PROFILES[provider].model_dump()
        assert get_adapter(provider).capabilities == PROFILES[provider]
        assert entry["sdk"] == REGISTRY[provider].package
        assert entry["sdk_version"] == version(REGISTRY[provider].package) and entry["installed"] is True
    assert data["providers"]["claude"]["cli_version"] == __cli_version__
    code, table, _ = run_cli("capabilities")
    assert (
        code == 0
        and f"claude: claude-agent-sdk {version('claude-agent-sdk')}, Claude Code (bundled)" in table
    )
    # two columns per provider: what the SDK offers, what portagent uses (issue 15)
    assert "openai SDK  openai portagent  claude SDK  claude portagent  adk SDK  adk portagent" in table
    assert (
        "sessions           yes         no                yes         no                yes      no" in table
    )
    assert (
        "approvals_resume   yes         no                no          no                yes      no" in table
    )
    assert (
        "handoff_cycles     yes         yes               no          no                no       no" in table
    )
    for provider in PROVIDERS:
        uses = data["providers"][provider]["portagent_uses"]
        offered = data["providers"][provider]["capabilities"]
        assert set(uses) == set(offered) and all(offered[f] for f, used in uses.items() if used)
        assert uses["sessions"] is False and uses["approvals_resume"] is False
    assert set(data["portagent"]) == set(data["flags"])


def test_a_missing_sdk_is_shown_as_not_installed(monkeypatch):
    from portagent.migration import capabilities

    monkeypatch.setattr(capabilities, "_package_version", lambda package: None)
    data = capabilities.matrix()
    assert data["providers"]["adk"]["sdk_version"] == "not installed"
    assert data["providers"]["claude"]["cli_version"] == "not installed"
    assert "(pip install 'portagent[adk]')" in capabilities.render_table(data)


def test_every_flag_has_a_drive():
    assert set(DRIVES) == set(CAPABILITY_FLAGS)
    assert all(callable(globals()[name]) for name in DRIVES.values())


# --- delegation ----------------------------------------------------------------------------------


def test_handoffs(emu, tmp_path):
    """openai-agents ``handoffs`` and ADK ``sub_agents`` let the specialist take over; Claude Code's
    subagents always report back to the parent (agent-as-tool), so a handoff spec is refused."""
    write_spec(tmp_path, "refunds_specialist", instructions="You handle refund disputes.")
    spec = write_spec(tmp_path, delegation=[{"agent": "refunds_specialist.yaml", "kind": "handoff"}])
    observed = {}
    for p in PROVIDERS:
        if refused("handoffs", run_spec, spec, p, "My parcel ORD-8 never arrived.", emu, tmp_path):
            observed[p] = False
            continue
        run = run_spec(spec, p, "My parcel ORD-8 never arrived.", emu, tmp_path, tag="-2")
        observed[p] = (
            run.result.status == "completed"
            and [(e.kind, e.to_agent) for e in of(run.events, "handoff")]
            == [("handoff", "refunds_specialist")]
            and of(run.events, "run.completed")[0].agent == "refunds_specialist"
        )
    assert_profile("handoffs", observed)


@pytest.mark.slow
def test_agents_as_tools(emu, tmp_path):
    write_spec(tmp_path, "faq_expert", instructions="You interpret the FAQ.", tools=("search_faq",))
    spec = write_spec(
        tmp_path,
        delegation=[
            {"agent": "faq_expert.yaml", "kind": "agent_as_tool", "description": "Interprets the FAQ."}
        ],
    )
    observed = {}
    for p in PROVIDERS:
        run = run_spec(spec, p, "How fast do you ship? Ask the expert.", emu, tmp_path)
        inner = [e for e in of(run.events, "tool.call") if e.agent == "faq_expert"]
        observed[p] = (
            run.result.status == "completed"
            and [(e.kind, e.to_agent) for e in of(run.events, "handoff")] == [("agent_as_tool", "faq_expert")]
            and [e.tool for e in inner] == ["search_faq"]  # the subagent's own tool, its own gateway
            and of(run.events, "run.completed")[0].agent == "shop_desk"
        )  # the coordinator kept control
    assert_profile("agents_as_tools", observed)


def cycle(folder, kind: str):
    write_spec(
        folder,
        "pong_agent",
        instructions="You answer pong.",
        tools=(),
        delegation=[{"agent": "ping_agent.yaml", "kind": kind}],
    )
    return write_spec(
        folder,
        "ping_agent",
        instructions="Hand over to pong_agent.",
        tools=(),
        delegation=[{"agent": "pong_agent.yaml", "kind": kind}],
    )


def test_handoff_cycles(emu, tmp_path, monkeypatch):
    """A delegation graph with a cycle (ping_agent ↔ pong_agent): handoff edges, except on Claude, which
    has no handoffs at all and gets the same cycle made of agent-as-tool edges."""
    specs = {
        "handoff": cycle(tmp_path / "handoff", "handoff"),
        "agent_as_tool": cycle(tmp_path / "tool", "agent_as_tool"),
    }
    observed = {}
    for p in PROVIDERS:
        spec = specs["agent_as_tool" if p == "claude" else "handoff"]
        if refused(
            "cycle: ping_agent -> pong_agent -> ping_agent", run_spec, spec, p, "Ping me.", emu, tmp_path
        ):
            observed[p] = False
            continue
        run = run_spec(spec, p, "Ping me.", emu, tmp_path, tag="-2")
        observed[p] = run.result.status == "completed" and run.result.final_output == "pong"
    assert_profile("handoff_cycles", observed)
    # Not only the profile: with the runner's check bypassed, the adapters refuse the graph themselves
    # before anything runs, with their vendor's part of the verdict (adk/rules.py, claude/rules.py).
    from portagent.runtime import runner

    monkeypatch.setattr(runner, "check_runnable", lambda bundle, provider: None)
    assert refused(
        "a handoff tree",
        run_spec,
        specs["handoff"],
        "adk",
        "Ping me.",
        emu,
        tmp_path,
        tag="-3",
    )
    assert refused(
        "nested delegation", run_spec, specs["agent_as_tool"], "claude", "Ping me.", emu, tmp_path, tag="-3"
    )


# --- output, sessions, streaming, cost -----------------------------------------------------------


@pytest.fixture(scope="module")
def structured(emu, tmp_path_factory):
    """'Summarise order ORD-7.' with an output_schema, streamed, on every provider (one Claude run)."""
    tmp = tmp_path_factory.mktemp("structured")
    spec = write_spec(tmp, output_schema=SUMMARY_SCHEMA)
    out = {}
    for p in PROVIDERS:
        before = len(emu.requests())
        run = run_spec(spec, p, "Summarise order ORD-7.", emu, tmp, streaming=True)
        out[p] = (run, emu.requests()[before:])
    return out


@pytest.mark.slow
def test_structured_output(structured):
    assert_profile(
        "structured_output",
        {
            p: run.result.output_valid is True
            and run.result.final_output == {"order_id": "ORD-7", "status": "delivered"}
            for p, (run, _) in structured.items()
        },
    )


@pytest.mark.slow
def test_streaming(structured):
    """Run with ``RunOptions(streaming=True)``: the model requests the SDK sent were streaming ones (the
    Claude Code CLI always streams)."""
    observed = {
        p: bool(requests) and all(r.get("stream") for r in requests)
        for p, (_, requests) in structured.items()
    }
    assert_profile("streaming", observed)


@pytest.mark.slow
def test_vendor_cost(structured):
    """Only Claude's runtime reports the run's cost itself (``total_cost_usd``); the others' cost is
    computed by portagent from token counts."""
    observed = {p: run.result.cost_source == "vendor" for p, (run, _) in structured.items()}
    assert_profile("vendor_cost", observed)
    assert {run.result.cost_source for p, (run, _) in structured.items() if p != "claude"} == {"computed"}


@pytest.mark.slow
def test_sessions(emu, tmp_path):
    """A conversation of two user messages in one run: the second model request carries the first
    exchange (the emulator's cursor counts the assistant turns already in it). Persisting a session
    across runs (``RunRequest.session_id``) is not implemented by any adapter."""
    spec = write_spec(tmp_path)
    observed = {}
    for p in PROVIDERS:
        run = run_spec(spec, p, ["Hi, I have a question about ORD-7.", "Has it arrived?"], emu, tmp_path)
        observed[p] = run.result.status == "completed" and run.result.final_output == "It is delivered."
    assert_profile("sessions", observed)


# --- tools ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tool_runs(emu, tmp_path_factory):
    """'Forecast for Paris, please.' with an MCP server on every provider; Claude is also granted Read
    (its script reads notes.txt first). One Claude run."""
    tmp = tmp_path_factory.mktemp("tools")
    out = {}
    for p in PROVIDERS:
        fields = {"builtin_tools": ["Read"]} if p == "claude" else {}
        spec = write_spec(tmp / p, mcp_servers=[mcp_server()], **fields)
        out[p] = run_spec(spec, p, "Forecast for Paris, please.", emu, tmp)
    return out


@pytest.mark.slow
def test_mcp(tool_runs):
    observed = {}
    for p, run in tool_runs.items():
        calls = [(e.tool, e.via) for e in of(run.events, "tool.call") if e.via == "mcp"]
        observed[p] = (
            run.result.status == "completed"
            and calls == [("weather_get_forecast", "mcp")]
            and run.result.final_output == "Paris: sunny."
        )
    assert_profile("mcp", observed)


@pytest.mark.slow
def test_builtin_tools(emu, tool_runs, tmp_path, monkeypatch):
    """Claude Code runs its built-ins, decided by the policy (``via: builtin``); openai-agents and ADK
    have none: the spec is refused, and even with the runner's check bypassed they declare no such tool."""
    claude = tool_runs["claude"]
    read = [e for e in of(claude.events, "tool.call") if e.tool == "Read"]
    results = {e.call_id: e for e in of(claude.events, "tool.result")}
    observed = {
        "claude": bool(read)
        and read[0].via == "builtin"
        and results[read[0].call_id].ok
        and "ORD-7 was a gift." in json.dumps(results[read[0].call_id].output)
    }
    spec = write_spec(tmp_path, builtin_tools=["Read"], mcp_servers=[mcp_server()])
    for p in ("openai", "adk"):
        observed[p] = not refused(
            "built-in tools", run_spec, spec, p, "Forecast for Paris, please.", emu, tmp_path
        )
    assert_profile("builtin_tools", observed)
    from portagent.runtime import runner

    monkeypatch.setattr(runner, "check_runnable", lambda bundle, provider: None)
    for p in ("openai", "adk"):
        before = len(emu.requests())
        run_spec(spec, p, "Forecast for Paris, please.", emu, tmp_path, tag="-bypass")
        declared = json.dumps([r["body"].get("tools") for r in emu.requests()[before:]])
        assert "weather_get_forecast" in declared and '"Read"' not in declared, p


# --- tracing and native approval resume ----------------------------------------------------------

TRACING = """
import asyncio, json, sys
provider_name, spec, base_url = sys.argv[1:4]
spans = []
if provider_name == "adk":  # ADK traces through OpenTelemetry's global tracer provider
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
else:  # openai-agents has tracing of its own: a processor added beside portagent's (which drops spans)
    import agents
    from portagent.adapters.openai import agent  # installs portagent's processor first

    class Collect(agents.TracingProcessor):
        def on_trace_start(self, trace): ...
        def on_trace_end(self, trace): ...
        def on_span_start(self, span): ...
        def on_span_end(self, span): spans.append(type(span.span_data).__name__)
        def shutdown(self): ...
        def force_flush(self): ...

    agents.add_trace_processor(Collect())
from portagent.contracts.run import RunRequest
from portagent.runtime.runner import RunConfig, arun_full
from portagent.adapters.port import Endpoint
out = asyncio.run(arun_full(spec, RunRequest(input="Summarise order ORD-7.", provider=provider_name),
                            RunConfig(endpoint=Endpoint(base_url=base_url, api_key="k"))))
if provider_name == "adk":
    spans = [s.name for s in exporter.get_finished_spans()]
print(json.dumps({"status": out.result.status, "spans": sorted(set(spans))}))
"""


def test_native_tracing(emu, tmp_path):
    """openai-agents has its own tracing (portagent replaces its exporter and never uploads): spans reach a
    processor added to it. ADK traces through OpenTelemetry: spans reach a tracer provider installed
    globally. Both run in a subprocess, so this process's global tracing state stays as it is (and no
    other test's switch changes the result). claude-agent-sdk has no tracing API (the Claude Code CLI's
    own OTel telemetry is not an SDK feature portagent drives)."""
    import claude_agent_sdk

    spec = write_spec(tmp_path, output_schema=SUMMARY_SCHEMA)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(DATA), str(REPO)])}
    spans = {}
    for provider in ("openai", "adk"):
        env["PORTAGENT_HOME"] = str(tmp_path / f"home-{provider}")
        proc = subprocess.run(
            [sys.executable, "-c", TRACING, provider, str(spec), emu.base_url],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["status"] == "completed", provider
        spans[provider] = result["spans"]
    observed = {
        "openai": {"AgentSpanData", "FunctionSpanData", "ResponseSpanData"} <= set(spans["openai"]),
        "adk": any(name.startswith(("invoke_agent", "call_llm", "execute_tool")) for name in spans["adk"]),
        "claude": any("trac" in name.lower() or "span" in name.lower() for name in claude_agent_sdk.__all__),
    }
    assert_profile("native_tracing", observed)


def test_approvals_resume(emu, tmp_path):
    """openai-agents pauses a run on ``needs_approval`` and resumes it from its ``RunState`` (the SDK's
    own mechanism, driven here directly against the emulator). claude-agent-sdk has no such state: a
    permission is answered while the CLI waits. portagent itself resumes by re-running on every provider
    (ADR 0007); no adapter uses a native resume."""
    import claude_agent_sdk
    import openai
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool

    done: list[str] = []

    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount_eur: float) -> dict:
        """Refund an order."""
        done.append(order_id)
        return {"refund_id": f"RF-{order_id}", "status": "refunded"}

    async def go() -> tuple[int, str]:
        client = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key=DUMMY_KEYS["openai"])
        agent = Agent(
            name="desk",
            instructions="Refund when asked.",
            tools=[issue_refund],
            model=OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client),
        )
        config = RunConfig(tracing_disabled=True)
        first = await Runner.run(agent, "Refund 30 EUR for ORD-7.", run_config=config)
        paused = len(first.interruptions)
        state = first.to_state()
        state.approve(first.interruptions[0])
        resumed = await Runner.run(agent, state, run_config=config)
        await client.close()
        return paused, str(resumed.final_output)

    paused, final = asyncio.run(go())
    observed = {
        "openai": paused == 1 and done == ["ORD-7"] and "refunded" in final,
        "claude": any(
            n.endswith("RunState") or "resume_approval" in n.lower() for n in claude_agent_sdk.__all__
        ),
    }
    assert_profile("approvals_resume", observed)


def test_approvals_resume_adk():
    from google.adk.apps import ResumabilityConfig
    from google.adk.tools.tool_context import ToolContext

    sdk_has_it = "is_resumable" in ResumabilityConfig.model_fields and hasattr(
        ToolContext, "request_confirmation"
    )
    assert_profile("approvals_resume", {"adk": sdk_has_it})
