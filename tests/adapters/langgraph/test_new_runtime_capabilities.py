"""Every capability flag of the two newest runtimes (``anthropic``, ``langgraph``) driven against what their
adapters and SDKs really do, as ``tests/migration/test_capabilities.py`` does for openai, claude and adk
(same drives, same specs and emulator script): ``observed == PROFILES[provider].<flag>`` for each flag."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "migration"))
import _migration_helpers as helpers
from _migration_helpers import SCRIPT, mcp_server, of, run_spec, write_spec

from portagent.contracts.capabilities import CAPABILITY_FLAGS, PROFILES
from portagent.contracts.errors import UnsupportedFeatureError
from portagent.emulator import load_script, serve

NEW = ("anthropic", "langgraph")
helpers.DUMMY_KEYS.update({"anthropic": "sk-ant-portagent-dummy", "langgraph": "sk-portagent-dummy"})
SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "status": {"type": "string"}},
    "required": ["order_id", "status"],
    "additionalProperties": False,
}
DRIVEN: set[str] = set()


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


def refused(feature: str, *args, **kw) -> bool:
    try:
        run_spec(*args, **kw)
    except UnsupportedFeatureError as e:
        assert feature in str(e), str(e)
        return True
    return False


def assert_profile(flag: str, observed: dict[str, bool]) -> None:
    DRIVEN.add(flag)
    expected = {p: getattr(PROFILES[p], flag) for p in observed}
    assert observed == expected, f"{flag}: adapters do {observed}, the profile says {expected}"


def test_delegation_flags(emu, tmp_path):
    write_spec(tmp_path, "refunds_specialist", instructions="You handle refund disputes.")
    write_spec(tmp_path, "faq_expert", instructions="You interpret the FAQ.", tools=("search_faq",))
    handoff = write_spec(tmp_path, delegation=[{"agent": "refunds_specialist.yaml", "kind": "handoff"}])
    tool = write_spec(
        tmp_path / "tool",
        delegation=[
            {"agent": "../faq_expert.yaml", "kind": "agent_as_tool", "description": "Interprets the FAQ."}
        ],
    )
    handoffs, agents = {}, {}
    for p in NEW:
        if refused("handoffs", handoff, p, "My parcel ORD-8 never arrived.", emu, tmp_path):
            handoffs[p] = False
        else:
            run = run_spec(handoff, p, "My parcel ORD-8 never arrived.", emu, tmp_path, tag="-h")
            handoffs[p] = [(e.kind, e.to_agent) for e in of(run.events, "handoff")] == [
                ("handoff", "refunds_specialist")
            ] and of(run.events, "run.completed")[0].agent == "refunds_specialist"
        run = run_spec(tool, p, "How fast do you ship? Ask the expert.", emu, tmp_path, tag="-t")
        inner = [e.tool for e in of(run.events, "tool.call") if e.agent == "faq_expert"]
        agents[p] = run.result.status == "completed" and inner == ["search_faq"]
    assert_profile("handoffs", handoffs)
    assert_profile("agents_as_tools", agents)


def cycle(folder: Path, kind: str) -> Path:
    write_spec(
        folder, "pong_agent", instructions="You answer pong.", tools=(),
        delegation=[{"agent": "ping_agent.yaml", "kind": kind}],
    )  # fmt: skip
    return write_spec(
        folder, "ping_agent", instructions="Hand over to pong_agent.", tools=(),
        delegation=[{"agent": "pong_agent.yaml", "kind": kind}],
    )  # fmt: skip


def test_handoff_cycles(emu, tmp_path):
    """anthropic has no handoffs, so it gets the cycle made of agent-as-tool edges (as claude does)."""
    observed = {}
    for p in NEW:
        spec = cycle(tmp_path / p, "agent_as_tool" if p == "anthropic" else "handoff")
        if refused("cycle: ping_agent -> pong_agent -> ping_agent", spec, p, "Ping me.", emu, tmp_path):
            observed[p] = False
            continue
        run = run_spec(spec, p, "Ping me.", emu, tmp_path, tag="-2")
        observed[p] = run.result.status == "completed" and run.result.final_output == "pong"
    assert_profile("handoff_cycles", observed)


def test_output_streaming_cost_sessions(emu, tmp_path):
    spec = write_spec(tmp_path, output_schema=SUMMARY_SCHEMA)
    structured, streaming, vendor_cost, sessions = {}, {}, {}, {}
    for p in NEW:
        before = len(emu.requests())
        run = run_spec(spec, p, "Summarise order ORD-7.", emu, tmp_path, streaming=True)
        sent = emu.requests()[before:]
        structured[p] = run.result.output_valid is True and run.result.final_output == {
            "order_id": "ORD-7",
            "status": "delivered",
        }
        streaming[p] = bool(sent) and all(r.get("stream") for r in sent)
        vendor_cost[p] = run.result.cost_source == "vendor"
        two = run_spec(
            write_spec(tmp_path / "plain"),
            p,
            ["Hi, I have a question about ORD-7.", "Has it arrived?"],
            emu,
            tmp_path,
        )
        sessions[p] = two.result.status == "completed" and two.result.final_output == "It is delivered."
    assert_profile("structured_output", structured)
    assert_profile("streaming", streaming)
    assert_profile("vendor_cost", vendor_cost)
    assert_profile("sessions", sessions)


def test_tool_sources(emu, tmp_path):
    """MCP tools through the gateway on both; neither runtime has built-in tools (the spec is refused)."""
    mcp, builtin = {}, {}
    for p in NEW:
        spec = write_spec(tmp_path / p, mcp_servers=[mcp_server()])
        run = run_spec(spec, p, "Forecast for Paris, please.", emu, tmp_path)
        calls = [(e.tool, e.via) for e in of(run.events, "tool.call") if e.via == "mcp"]
        mcp[p] = run.result.status == "completed" and calls == [("weather_get_forecast", "mcp")]
        granted = write_spec(tmp_path / f"{p}-read", builtin_tools=["Read"], mcp_servers=[mcp_server()])
        builtin[p] = not refused("built-in tools", granted, p, "Forecast for Paris, please.", emu, tmp_path)
    assert_profile("mcp", mcp)
    assert_profile("builtin_tools", builtin)


def test_native_tracing_and_resume():
    """anthropic 2.14 makes OpenTelemetry spans of its calls (spans reach a tracer provider given to the
    client; the adapter passes ``open_telemetry=False``); LangGraph traces through LangChain's callbacks
    (LangSmith). LangGraph resumes an interrupted thread natively (``Command(resume=…)``, shown below on a
    graph without a model); the anthropic SDK has no paused-run state to resume."""
    import asyncio
    from typing import TypedDict

    import anthropic
    from langchain_core.tracers import BaseTracer
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = anthropic.Anthropic(
        base_url="http://127.0.0.1:9", api_key="sk-ant-portagent-dummy", max_retries=0,
        open_telemetry={"tracer_provider": provider},
    )  # fmt: skip
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    tracing = {"anthropic": bool(exporter.get_finished_spans()), "langgraph": issubclass(BaseTracer, object)}
    assert_profile("native_tracing", tracing)

    class S(TypedDict):
        done: bool

    def ask(state: S) -> S:
        return {"done": bool(interrupt("approve?"))}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    app = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def go() -> bool:
        first = await app.ainvoke({"done": False}, config)
        second = await app.ainvoke(Command(resume=True), config)
        return bool(first.get("__interrupt__")) and second["done"] is True

    runner_api = {n for n in dir(anthropic.lib.tools) if "approv" in n.lower() or "resume" in n.lower()}
    assert_profile("approvals_resume", {"anthropic": bool(runner_api), "langgraph": asyncio.run(go())})


@pytest.mark.slow  # reads DRIVEN, which the other tests of this module fill: it needs all of them, slow ones too
def test_every_flag_was_driven():
    assert set(CAPABILITY_FLAGS) == DRIVEN, set(CAPABILITY_FLAGS) - DRIVEN
