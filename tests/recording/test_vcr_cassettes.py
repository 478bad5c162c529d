"""vcrpy cassettes for the Python SDKs: record → offline replay, drift, secrets, corrupt input."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from _support import EXAMPLES, REPO, folder_module, run_cli

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.record import record_run
from portagent.runtime.replay import replay_folder

SUPPORT = EXAMPLES / "support_desk"
AGENT = SUPPORT / "agent.yaml"
DATA = REPO / "tests" / "recording" / "data"
Q = "Case EXP-42: what is missing and what do the rules say about documents?"

_NET: list[tuple[str, object]] = []
_WATCH = {"on": False}


def _audit(event: str, args: tuple) -> None:
    if _WATCH["on"] and event in ("socket.connect", "socket.getaddrinfo"):
        _NET.append((event, args[1] if len(args) > 1 else args))


sys.addaudithook(_audit)


def record(
    folder: Path,
    question: str = Q,
    agent: Path = AGENT,
    script: Path = SUPPORT / "emulator.yaml",
    approver: object = "auto-deny",
) -> object:
    async def go() -> object:
        with serve(load_script(script)) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-test-dummy")
            return await record_run(
                agent,
                RunRequest(input=question, provider="openai", case_id="c1"),
                folder,
                ep,
                approver=approver,
            )

    return asyncio.run(go())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cass") / "two_tools" / "openai" / "r0"
    record(folder)
    return folder


def test_record_writes_the_layout_and_no_key(recorded):
    assert sorted(p.name for p in recorded.iterdir()) == ["cassette.yaml", "run.json", "trace.jsonl"]
    text = (recorded / "cassette.yaml").read_text()
    assert "sk-test-dummy" not in text and "authorization" not in text.lower()
    data = yaml.safe_load(text)
    assert len(data["interactions"]) == 3
    manifest = json.loads((recorded / "run.json").read_text())["manifest"]
    assert manifest["source"] == "emulator" and manifest["mode"] == "record"
    assert manifest["request"]["input"] == Q and manifest["sdk_version"]


def test_replay_offline_no_network_and_byte_identical(recorded, tmp_path):
    # No server runs now: the emulator of the fixture is gone. The audit hook proves no socket opens.
    _NET.clear()
    _WATCH["on"] = True
    try:
        a = asyncio.run(replay_folder(AGENT, recorded, out_dir=tmp_path / "a"))
        asyncio.run(replay_folder(AGENT, recorded, out_dir=tmp_path / "b"))
    finally:
        _WATCH["on"] = False
    assert _NET == []
    assert a.result.status == "completed" and a.result.final_output.startswith("Your case lacks the DNI.")
    for name in ("trace.jsonl", "run.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    rec = json.loads((tmp_path / "a" / "run.json").read_text())
    orig = json.loads((recorded / "run.json").read_text())
    assert rec["result"]["duration_ms"] == orig["result"]["duration_ms"]  # timing from the recording
    assert rec["manifest"]["cassette"] == {"played": 3, "recorded": 3}


def test_drift_changed_tool_description(recorded, tmp_path):
    work = tmp_path / "agent"
    shutil.copytree(SUPPORT, work)
    tools = (
        (work / "tools.yaml")
        .read_text()
        .replace("Search the student-services policy handbook", "Search the NEW handbook")
    )
    (work / "tools.yaml").write_text(tools)
    out = asyncio.run(replay_folder(load_agent(work / "agent.yaml"), recorded))
    assert out.result.status == "failed" and out.result.stop_reason == "cassette_drift"
    assert "Search the NEW handbook" in out.result.error and "recorded" in out.result.error


def test_drift_changed_tool_result(recorded, tmp_path, monkeypatch):
    h = folder_module("support_desk_handlers", SUPPORT)
    monkeypatch.setitem(h.RECORDS["EXP-42"], "balance_due", 999)
    monkeypatch.setitem(h.RECORDS["EXP-42"], "missing_documents", ["passport"])
    out = asyncio.run(replay_folder(AGENT, recorded))
    assert out.result.stop_reason == "cassette_drift"
    assert "passport" in out.result.error


def test_unplayed_interactions_are_reported(recorded, tmp_path):
    folder = tmp_path / "extra"
    shutil.copytree(recorded, folder)
    data = yaml.safe_load((folder / "cassette.yaml").read_text())
    data["interactions"].append(data["interactions"][-1])
    (folder / "cassette.yaml").write_text(yaml.safe_dump(data))
    out = asyncio.run(replay_folder(AGENT, folder))
    assert out.result.status == "completed"
    assert out.record.manifest.cassette["unplayed"] == ["POST /v1/responses"]


def test_secret_in_a_tool_result_refuses_the_recording(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    folder = tmp_path / "leak" / "openai" / "r0"
    with pytest.raises(RecordingError, match="secret survived scrubbing"):
        record(folder, "Show me the API config.", DATA / "leaky.yaml", DATA / "leaky_script.yaml")
    assert not folder.exists()
    assert not [p for p in folder.parent.glob("*") if p.name.startswith(".")]  # no half-written temp folder


def test_planted_env_keys_never_reach_the_cassette(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-PLANTEDKEYPLANTEDKEY123456")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaPLANTEDPLANTEDPLANTEDPLANTED12345")
    folder = tmp_path / "env" / "r0"
    record(folder)
    for f in folder.iterdir():
        text = f.read_text()
        assert "PLANTED" not in text, f.name


def test_scrubbing_of_urls_and_headers():
    from portagent.recording.scrub import find_secret, scrub_headers, scrub_url

    assert (
        scrub_url("https://x.test/v1beta/models/g:generateContent?key=AIzaSECRET&alt=sse")
        == "https://x.test/v1beta/models/g:generateContent?alt=sse"
    )
    assert scrub_headers(
        {"Authorization": "Bearer x", "X-Goog-Api-Key": "k", "Cookie": "c", "Accept": "*/*"}
    ) == {"Accept": "*/*"}
    assert (
        find_secret({"a": ["ok", {"b": "Bearer abcdefghijklmnopqrstuvwxyz"}]})
        == "a.1.b (looks like a secret: bearer-token)"
    )


def test_corrupt_cassettes_name_the_file(recorded, tmp_path):
    trunc = tmp_path / "trunc"
    shutil.copytree(recorded, trunc)
    text = (trunc / "cassette.yaml").read_text()
    (trunc / "cassette.yaml").write_text(text[: len(text) // 3] + "\n  - [unclosed")
    with pytest.raises(RecordingError, match="cassette.yaml"):
        asyncio.run(replay_folder(AGENT, trunc))
    badver = tmp_path / "badver"
    shutil.copytree(recorded, badver)
    rec = json.loads((badver / "run.json").read_text())
    rec["schema_version"] = 99
    (badver / "run.json").write_text(json.dumps(rec))
    with pytest.raises(RecordingError, match="run.json"):
        asyncio.run(replay_folder(AGENT, badver))
    with pytest.raises(RecordingError, match="no such cassette folder"):
        asyncio.run(replay_folder(AGENT, tmp_path / "nothing"))


def test_cli_replay_and_wrong_provider(recorded, tmp_path):
    code, out, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--replay", str(recorded), "--out", str(tmp_path / "o")
    )
    assert code == 0, err
    assert "status     completed" in out
    code, _, err = run_cli("run", str(AGENT), "--provider", "adk", "--replay", str(recorded))
    assert code == 2 and "recorded with provider 'openai'" in err
    code, _, err = run_cli("run", str(AGENT), "--provider", "openai", "--replay", str(tmp_path / "missing"))
    assert code == 2 and "no such cassette folder" in err  # a folder named on the command line: usage
    (tmp_path / "afile").write_text("")
    code, _, err = run_cli("run", str(AGENT), "--provider", "openai", "--replay", str(tmp_path / "afile"))
    assert code == 2 and "is a file, not a cassette folder" in err
