"""``portagent mcp serve`` accepts W3C trace context on ``tools/call`` (``_meta.traceparent``).

A call carrying a valid ``traceparent`` joins the caller's trace: its events carry the caller's trace id
and name the caller's span as their parent, and the OTel export starts its ``execute_tool`` span under
that remote span. A malformed value is ignored (W3C: never an error). The calls come from the mcp
package's own ``Client`` (in-process), and end to end from a portagent agent whose MCP source is a real
``portagent mcp serve`` process over stdio.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from _mcp_helpers import DATA, run_agent, write_agent
from _support import REPO, run_cli

from portagent.mcp.server import GovernedServer, load_target
from portagent.tracing.recorder import read_trace

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def _spans(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    return [s for r in data["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def test_a_call_with_traceparent_joins_the_callers_trace_and_a_malformed_one_is_ignored(tmp_path):
    from mcp import Client

    sys.path.insert(0, str(DATA))
    trace = tmp_path / "trace.jsonl"
    governed = GovernedServer(
        load_target(DATA / "sms_tools.yaml", DATA / "sms_policy.yaml"), trace_path=trace
    )
    calls = [
        {"traceparent": f"00-{CALLER_TRACE.upper()}-{CALLER_SPAN}-01"},  # W3C: case-insensitive read
        {"traceparent": f"00-{CALLER_TRACE}-not-a-span-01"},  # malformed: ignored
        {"traceparent": f"00-{'0' * 32}-{CALLER_SPAN}-01"},  # all-zero trace id: invalid, ignored
        {"traceparent": 42},  # not even a string
        None,  # no _meta at all
    ]

    async def go():
        governed.start("in-process")
        try:
            async with Client(governed.build()) as client:
                return [
                    await client.call_tool("echo_text", {"text": f"t{n}"}, meta=meta)
                    for n, meta in enumerate(calls)
                ]
        finally:
            governed.stop()

    results = asyncio.run(asyncio.wait_for(go(), 30))
    assert [r.is_error for r in results] == [False] * 5  # a bad traceparent never fails the call
    assert [r.structured_content["echo"] for r in results] == ["t0", "t1", "t2", "t3", "t4"]

    events = read_trace(trace)
    started, completed = events[0], events[-1]
    assert (started.type, completed.type) == ("run.started", "run.completed")
    session = started.trace_id
    assert session != CALLER_TRACE and completed.trace_id == session  # the session keeps its own trace
    by_call: dict[str, list] = {}
    for e in events[1:-1]:
        by_call.setdefault(e.call_id, []).append(e)
    assert list(by_call) == ["call_1", "call_2", "call_3", "call_4", "call_5"]
    joined = by_call["call_1"]
    assert [e.type for e in joined] == ["tool.call", "permission.decision", "tool.result"]
    assert {(e.trace_id, e.parent_span_id) for e in joined} == {(CALLER_TRACE, CALLER_SPAN)}
    assert joined[0].provider_details == {"mcp": {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}}
    for cid in ("call_2", "call_3", "call_4", "call_5"):
        assert {(e.trace_id, e.parent_span_id) for e in by_call[cid]} == {(session, started.span_id)}
        assert by_call[cid][0].provider_details == {}

    # the OTel export: the joined call's span is in the caller's trace, under the caller's span
    out = tmp_path / "otel.json"
    code, _, err = run_cli("trace", "export", str(trace), "--otel-json", str(out))
    assert code == 0, err
    spans = _spans(out)
    (agent,) = [s for s in spans if s["name"].startswith("invoke_agent")]
    tools = [s for s in spans if s["name"] == "execute_tool echo_text"]
    assert len(tools) == 5
    linked = [s for s in tools if s["traceId"] == CALLER_TRACE]
    assert len(linked) == 1 and linked[0]["parentSpanId"] == CALLER_SPAN
    assert linked[0]["spanId"] == joined[0].span_id
    others = [s for s in tools if s["traceId"] != CALLER_TRACE]
    assert {(s["traceId"], s["parentSpanId"]) for s in others} == {(session, agent["spanId"])}
    assert agent["traceId"] == session and not agent.get("parentSpanId")


HOP_SCRIPT = """kind: emulator-script
schema_version: 1
name: hop
defaults:
  usage: {input_tokens: 200, output_tokens: 20}
conversations:
  - name: hop
    match: {first_user: "Forecast for Paris, through the served desk."}
    turns:
      - tool_calls: [{name: hop_weather_get_forecast, arguments: {city: Paris}}]
      - text: "Paris: {{last_tool_result.forecast}}."
"""


@pytest.mark.slow  # two server processes (portagent mcp serve, and the source server it starts)
def test_one_trace_from_a_portagent_agent_through_mcp_serve_to_its_source_server(tmp_path):
    """Three processes, one trace: a portagent run calls a tool of ``portagent mcp serve`` (stdio), which
    serves an agent whose tool comes from another MCP server (tools_server.py). The served side records
    the caller's trace id on its ``tool.call`` (under the caller's run span), and the source server
    receives the caller's trace id with that ``tool.call`` as parent — read from each server's own side."""
    from _mcp_helpers import server

    from portagent.contracts.bundle import load_agent
    from portagent.emulator import load_script
    from portagent.emulator import serve as emulate

    hops = tmp_path / "source-traceparents.jsonl"
    served_agent = write_agent(
        tmp_path / "served",
        [server("weather", allow=["get_forecast"], env={"MCP_TEST_TRACE_LOG": str(hops)})],
    )
    serve_trace = tmp_path / "serve.jsonl"
    entry = {
        "name": "hop",
        "command": [
            *(sys.executable, "-m", "portagent", "mcp", "serve", str(served_agent)),
            *("--trace", str(serve_trace)),
        ],
        "env": {
            "PORTAGENT_HOME": str(tmp_path / "serve-home"),
            "PYTHONPATH": str(REPO),
            "MCP_TEST_LOG": str(tmp_path / "source-calls.jsonl"),
        },
        "allow": ["weather_get_forecast"],
    }
    caller = load_agent(write_agent(tmp_path / "caller", [entry], name="caller"))
    script = tmp_path / "hop.yaml"
    script.write_text(HOP_SCRIPT)
    with emulate(load_script(script)) as emu:
        out = run_agent(caller, "openai", "Forecast for Paris, through the served desk.", emu, tmp_path)
    assert out.result.status == "completed", out.result.error
    assert out.result.final_output == "Paris: sunny."
    started = out.events[0]
    served = read_trace(serve_trace)
    (call,) = [e for e in served if e.type == "tool.call"]
    sent = f"00-{started.trace_id}-{started.span_id}-01"
    assert call.provider_details["mcp"]["traceparent"] == sent  # what mcp serve received
    assert (call.trace_id, call.parent_span_id) == (started.trace_id, started.span_id)
    (result,) = [e for e in served if e.type == "tool.result"]
    assert result.ok and result.trace_id == started.trace_id
    assert served[0].trace_id != started.trace_id  # the serve session itself is its own trace
    (hop,) = [json.loads(line) for line in hops.read_text().splitlines()]
    assert hop == {
        "server": "weather",
        "tool": "get_forecast",
        "traceparent": f"00-{started.trace_id}-{call.span_id}-01",
    }
