"""MCP servers as tool sources: an in-test stdio server (data/tools_server.py) provides tools to an
agent that runs on every provider against the emulator, through portagent's gateway.

These are emulator runs, not replays: the point is that the real SDKs declare and call MCP-sourced
ToolSpecs like any other, and that the gateway (schema, policy, approvals) governs every call.
"""

from __future__ import annotations

import pytest
from _mcp_helpers import DATA, of_type, outputs, run_agent, server, server_log, write_agent

from portagent.adapters.base import get_adapter
from portagent.contracts.bundle import load_agent
from portagent.tracing.compare import equivalent


def _available(provider: str) -> bool:
    try:
        get_adapter(provider)
    except Exception:
        return False
    return True


PROVIDERS = [p for p in ("openai", "adk", "claude") if _available(p)]


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "emulator.yaml")) as running:
        yield running


def _desk(tmp_path):
    return write_agent(tmp_path / "agent", [server("weather"), server("glossary", allow=["lookup", "fail"])])


def test_mcp_tools_run_on_every_provider_with_equivalent_traces(emu, tmp_path, _mcp_log):
    assert {"openai", "adk"} <= set(PROVIDERS)
    agent = load_agent(_desk(tmp_path))
    runs = {p: run_agent(agent, p, "What is the weather in Paris?", emu, tmp_path) for p in PROVIDERS}
    reference = runs[PROVIDERS[0]]
    for provider, out in runs.items():
        assert out.result.status == "completed", (provider, out.result)
        assert out.result.final_output == "Paris: sunny."
        calls = of_type(out.events, "tool.call")
        assert [(c.tool, c.via) for c in calls] == [
            ("weather_get_forecast", "mcp"),
            ("glossary_lookup", "mcp"),
        ]
        assert outputs(out.events)["weather_get_forecast"] == {
            "ok": True,
            "city": "Paris",
            "forecast": "sunny",
            "server": "weather",
        }
        started = out.events[0]
        assert started.type == "run.started"
        mcp = started.provider_details["mcp"]
        assert mcp["weather"]["fingerprint"].startswith("sha256:")
        assert mcp["weather"]["server"]["version"] == "1.2.0"
        assert mcp["glossary"]["tools"] == ["glossary_fail", "glossary_lookup"]
        assert mcp == reference.events[0].provider_details["mcp"]  # one listing, whatever the provider
        assert out.record is not None and "weather_get_forecast" in out.record.manifest.tool_hashes
        same = equivalent(reference.events, out.events)
        assert same, f"{provider} vs {PROVIDERS[0]}:\n{same.report()}"
    # every provider's calls reached the servers, and nothing else did
    log = server_log(_mcp_log)
    assert [(c["server"], c["tool"]) for c in log] == [
        ("weather", "get_forecast"),
        ("glossary", "lookup"),
    ] * len(PROVIDERS)


def test_two_servers_exposing_the_same_tool_name_stay_unambiguous(emu, tmp_path, _mcp_log):
    out = run_agent(load_agent(_desk(tmp_path)), "openai", "Look up fog in both glossaries.", emu, tmp_path)
    assert out.result.status == "completed"
    got = outputs(out.events)
    assert got["weather_lookup"] == {"ok": True, "text": "weather: fog means x"}
    assert got["glossary_lookup"] == {"ok": True, "text": "glossary: fog means x"}
    assert [(c["server"], c["tool"]) for c in server_log(_mcp_log)] == [
        ("weather", "lookup"),
        ("glossary", "lookup"),
    ]


def test_arguments_are_validated_against_the_listed_schema_before_any_call(emu, tmp_path, _mcp_log):
    out = run_agent(load_agent(_desk(tmp_path)), "adk", "Weather for X?", emu, tmp_path)
    results = of_type(out.events, "tool.result")
    assert [r.error for r in results] == [
        "validation_error",
        "validation_error",
    ]  # minLength 2; unknown 'town'
    assert "city" in str(results[1].output["details"])
    assert server_log(_mcp_log) == []  # the server never saw an invalid call


@pytest.mark.parametrize("approver,expect", [("auto-deny", "approval_rejected"), ("auto-approve", None)])
def test_unannotated_tool_is_an_external_effect_that_needs_approval(
    emu, tmp_path, _mcp_log, approver, expect
):
    agent = load_agent(_desk(tmp_path))
    assert agent.node.tools["echo_text"].effect == "compute"
    out = run_agent(agent, "openai", "Book a table for two at Chez Max.", emu, tmp_path, approver=approver)
    decision = of_type(out.events, "permission.decision")[0]
    assert decision.decision == "approval_required"
    result = of_type(out.events, "tool.result")[0]
    assert result.error == expect
    booked = [c for c in server_log(_mcp_log) if c["tool"] == "book_table"]
    if expect:
        assert booked == []  # rejected: never sent to the server
    else:
        assert booked == [
            {"server": "weather", "tool": "book_table", "args": {"restaurant": "Chez Max", "people": 2}}
        ]
        assert result.output["booking"] == "B-1" and result.effect_id  # idempotent effect, in the ledger


def test_policy_can_allow_a_non_destructive_write_by_name(emu, tmp_path, _mcp_log):
    folder = tmp_path / "agent"
    path = write_agent(folder, [server("weather")])
    (folder / "policy.yaml").write_text(
        "kind: policy\nschema_version: 1\nname: p\nversion: '2'\nrules:\n"
        "  - {id: notes-ok, decision: allow, reason: notes are harmless, tool: weather_add_note}\n",
        encoding="utf-8",
    )
    out = run_agent(load_agent(path), "openai", "Note that Paris is rainy.", emu, tmp_path)
    assert load_agent(path).node.spec.mcp_servers[0].name == "weather"
    decision = of_type(out.events, "permission.decision")[0]
    assert (decision.decision, decision.rule) == ("allow", "notes-ok")
    assert outputs(out.events)["weather_add_note"]["text"] == "noted for Paris"


def test_an_mcp_error_result_reaches_the_model_as_a_handler_error(emu, tmp_path):
    out = run_agent(load_agent(_desk(tmp_path)), "openai", "Use the failing tool.", emu, tmp_path)
    result = of_type(out.events, "tool.result")[0]
    assert (result.ok, result.error, result.output["message"]) == (
        False,
        "handler_error",
        "the glossary is offline",
    )
    assert out.result.final_output == "It said: the glossary is offline"


@pytest.mark.parametrize("provider", ["openai", "adk"])
def test_a_server_that_dies_mid_run_gives_a_clear_error_event(emu, tmp_path, provider):
    out = run_agent(load_agent(_desk(tmp_path)), provider, "Crash the weather server.", emu, tmp_path)
    assert out.result.status == "completed"  # the model is told, the run goes on
    errors = of_type(out.events, "error")
    assert errors and errors[0].error_type == "McpServerError"
    assert "'weather'" in errors[0].message and "closed the connection" in errors[0].message
    assert "crashing on purpose" in errors[0].message  # the server's own last words
    first, second = of_type(out.events, "tool.result")
    assert first.error == "handler_error" and "closed the connection" in first.output["message"]
    assert second.error == "handler_error" and "later calls to it fail" in second.output["message"]
    assert out.result.final_output.startswith("After the crash: handler_error")


def test_a_tool_gone_since_the_last_run_is_reported_and_never_declared(emu, tmp_path, monkeypatch, _mcp_log):
    path = write_agent(tmp_path / "agent", [server("weather", env={"MCP_TEST_TOOLS": "${MCP_TEST_TOOLS}"})])
    monkeypatch.setenv("MCP_TEST_TOOLS", "get_forecast,add_note")
    first = run_agent(load_agent(path), "openai", "What is the weather in Paris?", emu, tmp_path)
    monkeypatch.setenv("MCP_TEST_TOOLS", "get_forecast")  # same state folder: the listing memory is shared
    second = run_agent(load_agent(path), "openai", "Note that Paris is rainy.", emu, tmp_path)
    assert "weather_add_note" not in str(of_type(first.events, "error"))
    removed = [e for e in of_type(second.events, "error") if e.error_type == "McpToolRemoved"]
    assert len(removed) == 1 and "'add_note'" in removed[0].message
    assert second.events[0].provider_details["mcp"]["weather"]["removed_since_last_run"] == ["add_note"]
    # not declared, so never called blindly: openai-agents refuses the model's call to an undeclared tool
    assert not [e for e in of_type(second.events, "tool.result") if e.ok]
    assert "weather_add_note not found" in (second.result.error or "")
    assert [c["tool"] for c in server_log(_mcp_log)] == ["get_forecast"]  # the first run's call only


def test_a_streamable_http_source_served_by_portagent_itself(emu, tmp_path, _mcp_log):
    """Chained governance: the agent's MCP source is another ``portagent mcp serve`` (HTTP). The exact
    effect classes come through ``_meta``; the call is traced on both sides; recording a run keeps the
    MCP traffic out of the vendor cassette (it goes to mcp.json)."""
    import asyncio
    import json
    import os
    import subprocess
    import sys

    from _mcp_helpers import home
    from _support import EXAMPLES, REPO
    from test_mcp_serve import _wait_for_url

    from portagent.adapters.port import Endpoint
    from portagent.contracts.run import RunRequest
    from portagent.runtime.record import record_run
    from portagent.tracing.recorder import read_trace

    desk = EXAMPLES / "support_desk"
    serve_trace = tmp_path / "serve.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portagent",
            "mcp",
            "serve",
            str(desk / "tools.yaml"),
            "--policy",
            str(desk / "policy.yaml"),
            "--transport",
            "streamable-http",
            "--port",
            "0",
            "--trace",
            str(serve_trace),
        ],
        env={**os.environ, "PORTAGENT_HOME": str(tmp_path / "serve-home"), "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = _wait_for_url(proc)
        path = write_agent(
            tmp_path / "agent", [{"name": "desk", "url": url, "allow": ["search_policy", "send_email"]}]
        )
        agent = load_agent(path)
        out = run_agent(agent, "openai", "What does the handbook say about refunds?", emu, tmp_path)
        assert out.result.status == "completed", out.result.error
        assert out.result.final_output == "Refunds are requested within 30 days of payment."
        assert out.events[0].provider_details["mcp"]["desk"]["transport"] == "streamable-http"
        folder = tmp_path / "cass"
        with home(tmp_path / "home-record"):
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-test-dummy")
            asyncio.run(
                asyncio.wait_for(
                    record_run(
                        agent,
                        RunRequest(input="What does the handbook say about refunds?", provider="openai"),
                        folder,
                        ep,
                    ),
                    120,
                )
            )
        import yaml

        interactions = yaml.safe_load((folder / "cassette.yaml").read_text())["interactions"]
        assert {i["request"]["uri"].split("/v1/")[-1] for i in interactions} == {
            "responses"
        }  # model calls only
        assert [c["tool"] for c in json.loads((folder / "mcp.json").read_text())["calls"]] == [
            "search_policy"
        ]
        wrapped = {t.name: t for t in _tools_of(agent)}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    assert (wrapped["desk_search_policy"].effect, wrapped["desk_send_email"].effect) == (
        "read",
        "external_effect",
    )
    served = [e for e in read_trace(serve_trace) if e.type == "tool.call"]
    assert [(e.tool, e.via) for e in served] == [("search_policy", "mcp")] * 2  # the run, then the recording


def _tools_of(agent):
    import asyncio

    from portagent.tools.mcp.sources import open_sources

    async def go():
        async with open_sources(agent) as sources:
            return list(sources.bundle.node.tools.values())

    return asyncio.run(asyncio.wait_for(go(), 60))
