"""MCP tool calls are recorded with the run (mcp.json beside the vendor cassette), so a replay needs no
MCP server; answers that changed show up as drift when compared with a live server."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from _mcp_helpers import DATA, home, of_type, server, server_log, write_agent

from portagent.adapters.base import get_adapter
from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRequest
from portagent.runtime.record import record_run
from portagent.runtime.replay import replay_folder, replay_ids
from portagent.tracing.compare import normalized_jsonl

Q = "What is the weather in Paris?"


def _available(provider: str) -> bool:
    try:
        get_adapter(provider)
    except Exception:
        return False
    return True


def _agent(tmp_path):
    mode = {"MCP_TEST_MODE": "${MCP_TEST_MODE}", "MCP_TEST_FORECAST": "${MCP_TEST_FORECAST}"}
    return load_agent(
        write_agent(tmp_path / "agent", [server("weather", env=mode), server("glossary", allow=["lookup"])])
    )


def _record(agent, folder, provider, tmp_path):
    from portagent.emulator import load_script, serve

    async def go():
        with serve(load_script(DATA / "emulator.yaml")) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-test-dummy")
            ids = replay_ids(agent.root, agent.spec.version, "c1", provider, 0)
            return await record_run(
                agent, RunRequest(input=Q, provider=provider, case_id="c1"), folder, ep, ids=ids
            )

    with home(tmp_path / "home-record"):
        return asyncio.run(asyncio.wait_for(go(), 120))


def _replay(agent, folder, tmp_path, name="replay"):
    with home(tmp_path / f"home-{name}"):
        return asyncio.run(asyncio.wait_for(replay_folder(agent, folder, out_dir=tmp_path / name), 120))


@pytest.fixture(scope="module")
def sunny(tmp_path_factory):
    """One openai recording made while the weather server answers "sunny", shared by the tests that only
    start from such a recording (was one recording each); each works on its own copy of the folder."""
    tmp = tmp_path_factory.mktemp("sunny")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCP_TEST_LOG", str(tmp / "mcp-calls.jsonl"))
        mp.setenv("MCP_TEST_MODE", "")
        mp.setenv("MCP_TEST_FORECAST", "sunny")
        agent = _agent(tmp)
        recorded = _record(agent, tmp / "cass" / "openai" / "r0", "openai", tmp)
    assert recorded.result.status == "completed" and recorded.result.final_output == "Paris: sunny."
    return tmp


def _sunny_copy(sunny, tmp_path):
    """The shared agent and a copy of its openai recording in ``tmp_path`` (the same path below it)."""
    folder = tmp_path / "cass" / "openai" / "r0"
    shutil.copytree(sunny / "cass" / "openai" / "r0", folder)
    return load_agent(sunny / "agent" / "weather_desk.yaml"), folder


@pytest.fixture
def forecast(monkeypatch):
    monkeypatch.setenv("MCP_TEST_FORECAST", "sunny")


@pytest.mark.parametrize("provider", [p for p in ("openai", "adk", "claude") if _available(p)])
def test_a_replay_needs_no_mcp_server_and_reproduces_the_recording(
    tmp_path, monkeypatch, _mcp_log, forecast, provider
):
    agent = _agent(tmp_path)
    folder = tmp_path / "cass" / provider / "r0"
    recorded = _record(agent, folder, provider, tmp_path)
    assert recorded.result.status == "completed" and recorded.result.final_output == "Paris: sunny."
    data = json.loads((folder / "mcp.json").read_text())
    assert sorted(data["servers"]) == ["glossary", "weather"]
    assert (
        data["servers"]["weather"]["fingerprint"]
        == recorded.events[0].provider_details["mcp"]["weather"]["fingerprint"]
    )
    assert [(c["server"], c["tool"], c["args"]) for c in data["calls"]] == [
        ("weather", "get_forecast", {"city": "Paris"}),
        ("glossary", "lookup", {"word": "drizzle"}),
    ]
    assert data["calls"][0]["result"]["structuredContent"]["forecast"] == "sunny"
    calls_when_recorded = len(server_log(_mcp_log))

    # Were the server started now, it would exit at once ("exit" mode): the replay never starts it.
    monkeypatch.setenv("MCP_TEST_MODE", "exit")
    out = _replay(agent, folder, tmp_path)
    assert out.result.status == "completed", out.result.error
    assert out.result.final_output == "Paris: sunny."
    assert len(server_log(_mcp_log)) == calls_when_recorded
    assert out.events[0].provider_details["mcp"]["weather"]["listing"] == "recording"
    assert [(c.tool, c.via) for c in of_type(out.events, "tool.call")] == [
        ("weather_get_forecast", "mcp"),
        ("glossary_lookup", "mcp"),
    ]
    again = _replay(agent, folder, tmp_path, "again")
    assert normalized_jsonl(out.events) == normalized_jsonl(
        again.events
    )  # (ADK's vendor call ids are random)
    assert normalized_jsonl(out.events[1:]) == normalized_jsonl(recorded.events[1:]).replace(
        '"record"', '"replay"'
    )


def test_a_changed_server_answer_shows_up_as_drift(tmp_path, monkeypatch, _mcp_log, forecast, sunny):
    agent, folder = _sunny_copy(sunny, tmp_path)  # recorded while the server answered "sunny"
    monkeypatch.setenv("MCP_TEST_FORECAST", "rainy")  # the server now answers differently

    plain = _replay(agent, folder, tmp_path, "plain")  # recorded answers: still the recording
    assert plain.result.status == "completed" and plain.result.final_output == "Paris: sunny."

    monkeypatch.setenv("PORTAGENT_MCP_REPLAY", "live")  # ask the real servers, compare with the recording
    out = _replay(agent, folder, tmp_path, "live")
    drift = [e for e in of_type(out.events, "error") if e.error_type == "McpDrift"]
    assert len(drift) == 1
    assert "'weather' answered 'get_forecast' differently from the recording" in drift[0].message
    assert '"forecast": "rainy"' in drift[0].message and '"forecast": "sunny"' in drift[0].message
    # the changed result reached the model: the vendor cassette no longer matches either
    assert out.result.status == "failed" and out.result.stop_reason == "cassette_drift"
    assert "rainy" in (out.result.error or "")


def test_re_recording_over_a_folder_compares_the_new_answers(tmp_path, monkeypatch, forecast, sunny):
    agent, folder = _sunny_copy(sunny, tmp_path)  # recorded while the server answered "sunny"
    monkeypatch.setenv("MCP_TEST_FORECAST", "rainy")
    from portagent.emulator import load_script, serve

    async def go():  # record_mode "once" keeps the folder's files while recording: mcp.json is compared
        with serve(load_script(DATA / "emulator.yaml")) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-test-dummy")
            return await record_run(
                agent,
                RunRequest(input=Q, provider="openai", case_id="c1"),
                folder,
                ep,
                record_mode="new_episodes",
            )

    with home(tmp_path / "home-rerecord"):
        out = asyncio.run(asyncio.wait_for(go(), 120))
    drift = [e for e in of_type(out.events, "error") if e.error_type == "McpDrift"]
    assert len(drift) == 1 and "rainy" in drift[0].message
    assert (
        json.loads((folder / "mcp.json").read_text())["calls"][0]["result"]["structuredContent"]["forecast"]
        == "rainy"
    )


def test_replay_without_the_mcp_recording_or_with_a_call_it_never_made(tmp_path, forecast, sunny):
    agent, folder = _sunny_copy(sunny, tmp_path)

    missing = tmp_path / "missing"
    shutil.copytree(folder, missing)
    (missing / "mcp.json").unlink()
    with pytest.raises(RecordingError, match=r"mcp\.json: missing from the cassette folder"):
        _replay(agent, missing, tmp_path, "m")

    edited = tmp_path / "edited"
    shutil.copytree(folder, edited)
    data = json.loads((edited / "mcp.json").read_text())
    data["calls"][0]["args_hash"] = "000000000000"
    (edited / "mcp.json").write_text(json.dumps(data))
    out = _replay(agent, edited, tmp_path, "e")
    drift = [e for e in of_type(out.events, "error") if e.error_type == "McpCassetteDrift"]
    assert drift and "weather.get_forecast" in drift[0].message
    assert out.result.stop_reason == "cassette_drift"

    corrupt = tmp_path / "corrupt"
    shutil.copytree(folder, corrupt)
    (corrupt / "mcp.json").write_text("{not json")
    with pytest.raises(RecordingError, match="corrupt MCP cassette"):
        _replay(agent, corrupt, tmp_path, "c")


def test_a_secret_in_an_mcp_answer_refuses_the_recording(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_TEST_FORECAST", "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3)
    agent = _agent(tmp_path)
    folder = tmp_path / "cass" / "openai" / "r0"
    with pytest.raises(RecordingError, match="refusing to write"):
        _record(agent, folder, "openai", tmp_path)
    assert not folder.exists()
