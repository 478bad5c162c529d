"""The transport-level cassette player (recording/player.py) replays openai, adk, anthropic and langgraph
(OpenAI/Anthropic chat models) runs without vcrpy, and reports drift exactly as the vcrpy replay does."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _support import EXAMPLES

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.recording import player as player_module
from portagent.runtime import runner
from portagent.runtime.record import record_run
from portagent.runtime.replay import replay_folder

SUPPORT = EXAMPLES / "support_desk"
Q = "Case EXP-42: what is missing and what do the rules say about documents?"
KEYS = {
    "openai": "sk-test-dummy",
    "adk": "test-dummy-key",
    "anthropic": "sk-ant-test-dummy",
    "langgraph": "sk-test-dummy",
}
PROVIDERS = ("openai", "adk", "anthropic", "langgraph")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: Any) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("player")

    async def go() -> None:
        with serve(load_script(SUPPORT / "emulator.yaml")) as emu:
            for provider in PROVIDERS:
                ep = Endpoint(source="emulator", base_url=emu.base_url, api_key=KEYS[provider])
                await record_run(
                    SUPPORT / "agent.yaml",
                    RunRequest(input=Q, provider=provider, case_id="c1"),
                    root / provider,
                    ep,
                    approver="auto-deny",
                )

    asyncio.run(go())
    return {p: root / p for p in PROVIDERS}


def _watch_vcrpy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts vcrpy's patcher builds and cassette loads (both happen on every vcrpy replay)."""
    import vcr.cassette
    import vcr.patch

    seen: list[str] = []
    build = vcr.patch.CassettePatcherBuilder.build
    load = vcr.cassette.Cassette._load

    def watched_build(self: Any) -> Any:
        seen.append("patch")
        return build(self)

    def watched_load(self: Any) -> Any:
        seen.append("load")
        return load(self)

    monkeypatch.setattr(vcr.patch.CassettePatcherBuilder, "build", watched_build)
    monkeypatch.setattr(vcr.cassette.Cassette, "_load", watched_load)
    return seen


def _watch_player(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The requests the player answers (method and URL), in order."""
    served: list[str] = []
    respond = player_module.CassettePlayer.respond

    def counted(self: Any, method: str, url: str, body: bytes, headers: Any) -> Any:
        served.append(f"{method} {url}")
        return respond(self, method, url, body, headers)

    monkeypatch.setattr(player_module.CassettePlayer, "respond", counted)
    return served


@pytest.mark.parametrize("provider", PROVIDERS)
def test_player_serves_the_replay_not_vcrpy(
    provider: str, recorded: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _watch_vcrpy(monkeypatch)
    served = _watch_player(monkeypatch)
    out = asyncio.run(replay_folder(load_agent(SUPPORT / "agent.yaml"), recorded[provider], out_dir=tmp_path))
    assert out.result.status == "completed", out.result.error
    assert seen == []  # vcrpy neither patched anything nor loaded the cassette
    manifest = json.loads((tmp_path / "run.json").read_text())["manifest"]["cassette"]
    assert served and manifest == {"played": len(served), "recorded": len(served)}
    original = json.loads((recorded[provider] / "run.json").read_text())
    assert out.result.final_output == original["result"]["final_output"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_player_drift_report_is_vcrpys(
    provider: str, recorded: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "agent"
    shutil.copytree(SUPPORT, work)
    tools = (work / "tools.yaml").read_text()
    (work / "tools.yaml").write_text(
        tools.replace("Search the student-services policy handbook", "Search the NEW handbook")
    )
    bundle = load_agent(work / "agent.yaml")

    def replay(out: Path) -> tuple[Any, dict[str, Any]]:
        res = asyncio.run(replay_folder(bundle, recorded[provider], out_dir=out))
        return res.result, json.loads((out / "run.json").read_text())["manifest"]["cassette"]

    seen = _watch_vcrpy(monkeypatch)
    by_player, player_cassette = replay(tmp_path / "player")
    assert "patch" not in seen
    monkeypatch.setattr(runner, "_player_providers", lambda: frozenset())
    by_vcrpy, vcrpy_cassette = replay(tmp_path / "vcrpy")
    assert "patch" in seen  # the second replay did go through vcrpy

    assert by_player.stop_reason == by_vcrpy.stop_reason == "cassette_drift"
    assert by_player.error == by_vcrpy.error
    assert "Search the NEW handbook" in (by_player.error or "")
    assert player_cassette == vcrpy_cassette
    assert player_cassette["drift"] and player_cassette.get("unplayed")


@pytest.mark.parametrize(
    ("spec_file", "chat_model", "served_by"),
    [
        ("agent.yaml", "anthropic:claude-sonnet-4-6", "player"),
        ("agent.yaml", "google_genai:gemini-2.5-flash", "vcrpy"),
        ("billing_specialist.yaml", "google_genai:gemini-2.5-flash", "vcrpy"),  # a delegated agent only
    ],
)
def test_langgraph_replays_through_the_player_where_its_chat_model_takes_the_transport(
    spec_file: str, chat_model: str, served_by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """langgraph's OpenAI and Anthropic chat models are built on portagent's HTTP client, which takes the
    player's transport; google-genai builds its own client, so a bundle with a Gemini chat model (any agent,
    a delegated one too) replays under vcrpy. Either way the replay answers what the recording did."""
    work = tmp_path / "agent"
    shutil.copytree(SUPPORT, work, ignore=shutil.ignore_patterns("__pycache__"))
    agent = work / "agent.yaml"
    edited = work / spec_file
    edited.write_text(edited.read_text().replace("models:\n", f"models:\n  langgraph: {chat_model}\n", 1))
    folder = tmp_path / "rec"

    async def record() -> None:
        with serve(load_script(SUPPORT / "emulator.yaml")) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-test-dummy")
            await record_run(
                agent,
                RunRequest(input=Q, provider="langgraph", case_id="c1"),
                folder,
                ep,
                approver="auto-deny",
            )

    asyncio.run(record())
    seen = _watch_vcrpy(monkeypatch)
    served = _watch_player(monkeypatch)
    out = asyncio.run(replay_folder(load_agent(agent), folder, out_dir=tmp_path / "out"))
    assert out.result.status == "completed", out.result.error
    original = json.loads((folder / "run.json").read_text())
    assert out.result.final_output == original["result"]["final_output"]
    recorded = original["manifest"]["cassette"]["recorded"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["manifest"]["cassette"] == {
        "played": recorded,
        "recorded": recorded,
    }
    if served_by == "player":
        assert seen == [] and len(served) == recorded
    else:
        assert "patch" in seen and served == []


def test_parsed_cassette_is_cached_per_file_version(recorded: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(recorded["openai"], folder)
    path = folder / "cassette.yaml"
    first = player_module.CassettePlayer(path, True)
    assert player_module.CassettePlayer(path, True).data is first.data  # parsed once
    path.write_text(path.read_text() + "\n")  # an edit (size changes): parsed again
    again = player_module.CassettePlayer(path, True)
    assert again.data is not first.data and len(again.data.requests) == len(first.data.requests)


# -- a replay stays offline (recording/offline.py) ---------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_handler_cannot_reach_the_network_during_a_replay(
    provider: str, recorded: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vcrpy's patches used to stop a handler's own HTTP during a replay; the player answers only the
    SDK's client, so the offline guard must stop the rest. The handler tries a (documentation-range)
    address, then answers as recorded: the replay still matches its cassette."""
    import socket

    import support_desk_handlers

    from portagent.recording.offline import OfflineReplayError
    from portagent.tools import handlers

    refused: list[BaseException] = []
    original = support_desk_handlers.get_student_record

    def calling_out(**kwargs: Any) -> Any:
        try:
            socket.create_connection(("198.51.100.7", 443), timeout=0.5).close()
        except BaseException as e:  # whatever stops it is what the test inspects
            refused.append(e)
        return original(**kwargs)

    monkeypatch.setattr(support_desk_handlers, "get_student_record", calling_out)
    monkeypatch.setattr(handlers, "_CACHE", {})  # resolve the handler again: the wrapper
    monkeypatch.setattr(handlers, "_FOLDER_CACHE", {})  # (a run resolves it in its spec folder)
    out = asyncio.run(replay_folder(load_agent(SUPPORT / "agent.yaml"), recorded[provider], out_dir=tmp_path))
    assert out.result.status == "completed", out.result.error
    assert refused and all(isinstance(e, OfflineReplayError) for e in refused), refused
    assert "198.51.100.7:443" in str(refused[0]) and "cassette.yaml" in str(refused[0])


def test_the_offline_guard_allows_loopback_and_ends_with_the_replay() -> None:
    import socket

    from portagent.recording import offline as guard

    server = socket.create_server(("127.0.0.1", 0))
    try:
        with guard.offline("c.yaml"):
            socket.create_connection(server.getsockname(), timeout=2).close()  # loopback: allowed
            with pytest.raises(guard.OfflineReplayError, match="look up the host 'api.openai.com'"):
                socket.getaddrinfo("api.openai.com", 443)
            with pytest.raises(guard.OfflineReplayError, match=r"reach 2001:db8::1:443"):
                socket.socket(socket.AF_INET6).connect(("2001:db8::1", 443))
        assert guard._active == []
        socket.create_connection(server.getsockname(), timeout=2).close()
        assert (
            guard._is_local("::ffff:127.0.0.1") and guard._is_local("[::1]") and guard._is_local(b"localhost")
        )
        assert not guard._is_local("::ffff:198.51.100.7") and not guard._is_local("api.example.com")
    finally:
        server.close()


def test_a_replay_that_asks_its_mcp_servers_live_is_not_guarded(
    recorded: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from portagent.adapters.port import RunOptions
    from portagent.recording import offline as guard
    from portagent.tools.mcp.sources import live_mcp_in_replay

    with player_module.player_session(recorded["openai"]):
        assert guard._active
    with player_module.player_session(recorded["openai"], offline_guard=False):
        assert not guard._active
    assert not live_mcp_in_replay(RunOptions())
    assert live_mcp_in_replay(RunOptions(extra={"mcp_replay": "live"}))
    monkeypatch.setenv("PORTAGENT_MCP_REPLAY", "live")
    assert live_mcp_in_replay(RunOptions())


# -- a damaged cassette is a recording error naming it, never a run error ----------------------------


def _damage(cassette: Path, how: str) -> None:
    import yaml

    if how == "empty":
        cassette.write_text("")
    elif how == "folder":
        cassette.unlink()
        cassette.mkdir()
    else:
        doc = yaml.safe_load(cassette.read_text())
        if how == "version":
            doc["version"] = 99
        else:
            body = doc["interactions"][-1]["response"]["body"]
            body["string"] = "garbage{" if how == "garbage" else body["string"][: len(body["string"]) // 2]
        cassette.write_text(yaml.safe_dump(doc))


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ("garbage", "the response of interaction 3 is not valid JSON"),
        ("cut", "the response of interaction 3 is not valid JSON"),
        ("empty", "empty cassette"),
        ("folder", "not a cassette file"),
        ("version", "cassette format version 99"),
    ],
)
@pytest.mark.parametrize("provider", ["openai", "adk"])
def test_a_damaged_cassette_is_a_recording_error_naming_it(
    provider: str, how: str, why: str, recorded: dict[str, Path], tmp_path: Path
) -> None:
    """A response body cut short or edited, an emptied file, a folder in its place, another format
    version: replayed, each failed inside the SDK (``JSONDecodeError``, exit 3 — what a CI job retries,
    and an eval blamed the agent for the tools it never called) or was read as drift (or played as if it
    were version 1). Each is one ``RecordingError`` naming the file: exit 1."""
    from _support import run_cli

    folder = tmp_path / provider
    shutil.copytree(recorded[provider], folder)
    cassette = folder / "cassette.yaml"
    _damage(cassette, how)
    code, out, err = run_cli(
        "run", str(SUPPORT / "agent.yaml"), "--provider", provider, "--replay", str(folder),
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 1, out + err
    assert f"{cassette}: {why}" in err and "Traceback" not in err, err
    assert "drift" not in (out + err).lower()
