"""Claude cassettes: the transport cassette (record with the real CLI, replay with no CLI, no socket),
drift, approvals, secrets, corrupt files, the CLI's --replay, and the recording proxy.

Recording needs the real Claude Code CLI against the emulator (~1.5 s each: marked slow); every replay
here runs without it, and the test proving that forbids starting any process or opening any socket.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from _support import EXAMPLES, REPO, run_cli

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRecord, RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.record import record_run
from portagent.runtime.replay import replay_config, replay_folder, replay_ids, version_changes
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tracing.compare import normalized_jsonl
from portagent.tracing.recorder import read_trace

SUPPORT = EXAMPLES / "support_desk"
AGENT = SUPPORT / "agent.yaml"
SCRIPT = SUPPORT / "emulator.yaml"
DATA = REPO / "tests" / "recording" / "data"
TWO_TOOLS = "Case EXP-42: what is missing and what do the rules say about documents?"
EMAIL_INSIDE = "Email ana.garcia@uni.example that her DNI is missing."
REFUND = "What is the refund deadline?"
PARALLEL = "Search the handbook for everything about fees."

sys.path.insert(0, str(SUPPORT))
import support_desk_handlers as handlers  # noqa: E402

# --- audit: no socket, no process --------------------------------------------------------------------

_SEEN: list[tuple[str, Any]] = []
_WATCH = {"on": False}
_EVENTS = ("socket.connect", "socket.getaddrinfo", "subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _WATCH["on"] and event in _EVENTS:
        _SEEN.append((event, args[1] if event.startswith("socket") and len(args) > 1 else args[:1]))


sys.addaudithook(_audit)


@contextmanager
def nothing_started() -> Any:
    """Records every socket connection and process start inside the block."""
    _SEEN.clear()
    _WATCH["on"] = True
    try:
        yield _SEEN
    finally:
        _WATCH["on"] = False


# --- recording helpers -------------------------------------------------------------------------------


@contextmanager
def own_home(path: Path) -> Any:
    """Record in a PORTAGENT_HOME of its own: a replay must not find the recording's approval cards."""
    with mock.patch.dict(os.environ, {"PORTAGENT_HOME": str(path)}):
        yield


def record(
    folder: Path,
    question: str | list[str],
    *,
    agent: Path = AGENT,
    script: Path = SCRIPT,
    approver: Any = "auto-deny",
    source: str = "emulator",
    key: str = "sk-ant-dummy",
    extra: dict[str, Any] | None = None,
    case: str = "c1",
) -> Any:
    """Record one Claude run against the emulator (which is gone once this returns)."""
    bundle = load_agent(agent)

    ids = replay_ids(bundle.root, bundle.spec.version, case, "claude", 0)

    async def go() -> Any:
        with serve(load_script(script)) as emu:
            req = RunRequest(
                input=question, provider="claude", case_id=case, scopes=["tickets:write", "email:send"]
            )
            if extra:  # adapter options: record_run has none, so the runner is called as record_run does
                ep = Endpoint(
                    source=source, mode="record", base_url=emu.base_url, api_key=key, cassette_dir=folder
                )
                return await arun_full(
                    bundle,
                    req,
                    RunConfig(
                        endpoint=ep,
                        approver=approver,
                        out_dir=folder,
                        ids=ids,
                        options=RunOptions(extra=extra),
                    ),
                )
            ep = Endpoint(source=source, base_url=emu.base_url, api_key=key)
            return await record_run(bundle, req, folder, ep, approver=approver, ids=ids)

    return asyncio.run(go())


def normalized(path: Path) -> list[str]:
    """The normalized trace with the run mode and provenance left out (a recording says ``record`` and its
    source; its replay says ``replay``, ``source: replay`` and the recording's source)."""
    out = []
    for line in normalized_jsonl(read_trace(path)).splitlines():
        event = json.loads(line)
        if event.get("type") == "run.started":
            event["mode"] = "replay"
            event.pop("source", None)
            event.pop("recorded_source", None)
        out.append(json.dumps(event, sort_keys=True))
    return out


def lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "transport.jsonl").read_text().splitlines()]


def write_lines(folder: Path, rows: list[dict[str, Any]]) -> None:
    (folder / "transport.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: Any) -> Path:
    folder = tmp_path_factory.mktemp("cass") / "two_tools" / "claude" / "r0"
    with own_home(tmp_path_factory.mktemp("home")):
        out = record(folder, TWO_TOOLS)
    assert out.result.status == "completed"
    return folder


@pytest.fixture(scope="module")
def approved(tmp_path_factory: Any) -> Path:
    folder = tmp_path_factory.mktemp("cass") / "email" / "claude" / "r0"
    with own_home(tmp_path_factory.mktemp("home")):
        out = record(folder, EMAIL_INSIDE, approver="auto-approve")
    assert out.result.status == "completed" and out.record.manifest.approvals
    return folder


@pytest.fixture(scope="module")
def with_http(tmp_path_factory: Any) -> Path:
    folder = tmp_path_factory.mktemp("cass") / "refund" / "claude" / "r0"
    with own_home(tmp_path_factory.mktemp("home")):
        out = record(folder, REFUND, extra={"claude_http_cassette": True})
    assert out.result.status == "completed"
    return folder


# --- record -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_record_writes_a_transport_cassette_both_ways(recorded):
    from claude_agent_sdk._cli_version import __cli_version__

    assert sorted(p.name for p in recorded.iterdir()) == ["run.json", "trace.jsonl", "transport.jsonl"]
    header, *rows = lines(recorded)
    assert (
        header["kind"] == "portagent-claude-transport"
        and header["version"] == 1
        and header["provider"] == "claude"
    )
    assert header["cli_version"] == __cli_version__
    # The options query() would have given the CLI: the permission prompt goes over stdio (SDK_NOTES §4.6).
    opts = header["options"]
    assert opts["permission_prompt_tool_name"] == "stdio" and opts["permission_mode"] == "default"
    assert opts["model"] == "claude-sonnet-4-6" and "search_policy" in opts["system_prompt"]
    assert "env" in opts and not any("API_KEY" in k or "BASE_URL" in k for k in opts["env"])
    assert {r["dir"] for r in rows} == {"sdk->cli", "cli->sdk"}
    asked = [
        (r["msg"]["request"]["subtype"], r["dir"])
        for r in rows
        if r.get("msg", {}).get("type") == "control_request"
    ]
    assert ("initialize", "sdk->cli") in asked
    assert {("can_use_tool", "cli->sdk"), ("hook_callback", "cli->sdk"), ("mcp_message", "cli->sdk")} <= set(
        asked
    )
    run = json.loads((recorded / "run.json").read_text())
    assert run["manifest"]["cli_version"] == __cli_version__ and run["manifest"]["mode"] == "record"
    assert run["manifest"]["cassette"] == {"played": 0, "recorded": len(rows)}
    assert "sk-ant-dummy" not in (recorded / "transport.jsonl").read_text()


# --- replay -------------------------------------------------------------------------------------------


def test_replay_starts_no_cli_opens_no_socket_and_is_byte_identical(recorded, tmp_path, monkeypatch):
    import subprocess

    import anyio

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("a replay must not start a process")

    monkeypatch.setattr(anyio, "open_process", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    with nothing_started() as seen:
        a = asyncio.run(replay_folder(AGENT, recorded, out_dir=tmp_path / "a"))
        asyncio.run(replay_folder(AGENT, recorded, out_dir=tmp_path / "b"))
    assert seen == []
    assert a.result.status == "completed", a.result.error
    assert a.result.final_output.startswith("Your case lacks the DNI.")
    for name in ("trace.jsonl", "run.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert normalized(tmp_path / "a" / "trace.jsonl") == normalized(recorded / "trace.jsonl")
    rec = json.loads((tmp_path / "a" / "run.json").read_text())
    orig = json.loads((recorded / "run.json").read_text())
    assert rec["result"]["duration_ms"] == orig["result"]["duration_ms"]  # timing from the recording
    assert rec["manifest"]["cassette"] == {
        "played": orig["manifest"]["cassette"]["recorded"],
        "recorded": orig["manifest"]["cassette"]["recorded"],
    }
    latencies = [e.latency_ms for e in read_trace(tmp_path / "a" / "trace.jsonl") if e.type == "model.call"]
    assert latencies == [e.latency_ms for e in read_trace(recorded / "trace.jsonl") if e.type == "model.call"]


def test_drift_changed_tool_result(recorded, monkeypatch):
    monkeypatch.setitem(handlers.RECORDS["EXP-42"], "missing_documents", ["passport"])
    out = asyncio.run(replay_folder(AGENT, recorded))
    r = out.result
    assert r.status == "failed" and r.stop_reason == "cassette_drift"
    assert "tools/call get_student_record" in r.error and "passport" in r.error and "recorded" in r.error
    assert out.record.manifest.cassette["drift"].startswith("cassette drift:")
    assert any(e.type == "error" and e.error_type == "CassetteDrift" for e in out.events)


def test_drift_changed_tool_description(recorded, tmp_path):
    work = tmp_path / "agent"
    shutil.copytree(SUPPORT, work, ignore=shutil.ignore_patterns("__pycache__"))
    tools = (work / "tools.yaml").read_text()
    (work / "tools.yaml").write_text(
        tools.replace("Search the student-services policy handbook", "Search the NEW handbook")
    )
    out = asyncio.run(replay_folder(load_agent(work / "agent.yaml"), recorded))
    assert out.result.stop_reason == "cassette_drift"
    assert "tools/list" in out.result.error and "Search the NEW handbook" in out.result.error


def test_drift_changed_instructions_is_found_in_the_cli_options(recorded, tmp_path):
    work = tmp_path / "agent"
    shutil.copytree(SUPPORT, work, ignore=shutil.ignore_patterns("__pycache__"))
    spec = (work / "agent.yaml").read_text()
    (work / "agent.yaml").write_text(spec.replace("You are the student-services desk.", "You are a pirate."))
    out = asyncio.run(replay_folder(load_agent(work / "agent.yaml"), recorded))
    assert out.result.stop_reason == "cassette_drift"
    assert "CLI options" in out.result.error and "You are a pirate." in out.result.error
    assert [e.type for e in out.events if e.type in ("model.call", "tool.call")] == []  # nothing ran


def test_unplayed_lines_are_reported(recorded, tmp_path):
    folder = tmp_path / "extra"
    shutil.copytree(recorded, folder)
    rows = lines(folder)
    rows.append(
        {
            "dir": "sdk->cli",
            "msg": {
                "type": "user",
                "message": {"role": "user", "content": "one more"},
                "parent_tool_use_id": None,
                "session_id": "default",
            },
        }
    )
    write_lines(folder, rows)
    out = asyncio.run(replay_folder(AGENT, folder))
    assert out.result.status == "completed"
    cassette = out.record.manifest.cassette
    assert cassette["unplayed"] == [f"sdk->cli user (transport.jsonl line {len(rows)})"]
    assert cassette["played"] == cassette["recorded"] - 1


def test_an_answer_that_never_comes_is_drift_after_the_stall_timeout(recorded, tmp_path):
    from portagent.adapters.claude.session import STALL_KEY
    from portagent.runtime.replay import load_recorded

    folder = tmp_path / "stall"
    shutil.copytree(recorded, folder)
    rows = lines(folder)
    first_user = next(i for i, r in enumerate(rows) if r.get("msg", {}).get("type") == "user")
    rows.insert(
        first_user + 1,
        {
            "dir": "sdk->cli",
            "msg": {
                "type": "user",
                "message": {"role": "user", "content": "never sent"},
                "parent_tool_use_id": None,
                "session_id": "default",
            },
        },
    )
    write_lines(folder, rows)
    config, request = replay_config(folder, load_recorded(folder))
    config.options = RunOptions(extra={STALL_KEY: 0.3})
    t0 = time.monotonic()
    out = asyncio.run(arun_full(AGENT, request, config))
    assert time.monotonic() - t0 < 10
    assert out.result.stop_reason == "cassette_drift"
    assert "nothing within 0.3 s" in out.result.error and "never sent" in out.result.error


def test_an_answer_the_recording_lacks_is_drift(recorded, tmp_path):
    folder = tmp_path / "lacks"
    shutil.copytree(recorded, folder)
    rows = lines(folder)
    hook_answers = [
        i
        for i, r in enumerate(rows)
        if r.get("dir") == "sdk->cli"
        and r["msg"]["type"] == "control_response"
        and "PreToolUse" in json.dumps(r)
    ]
    del rows[hook_answers[0]]
    write_lines(folder, rows)
    out = asyncio.run(replay_folder(AGENT, folder))
    assert out.result.stop_reason == "cassette_drift"
    assert (
        "hook_callback PreToolUse" in out.result.error
        and "transport.jsonl has no such line" in out.result.error
    )


@pytest.mark.slow
def test_parallel_calls_and_a_budget_stop_replay_deterministically(tmp_path):
    folder = tmp_path / "parallel" / "claude" / "r0"
    with own_home(tmp_path / "home"):
        rec = record(folder, PARALLEL)
    assert rec.result.status == "budget_exhausted" and rec.result.stop_reason == "max_tool_calls"
    outs = [asyncio.run(replay_folder(AGENT, folder, out_dir=tmp_path / n)) for n in ("a", "b")]
    assert [(o.result.status, o.result.stop_reason) for o in outs] == [
        ("budget_exhausted", "max_tool_calls")
    ] * 2
    for name in ("trace.jsonl", "run.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert normalized(tmp_path / "a" / "trace.jsonl") == normalized(folder / "trace.jsonl")
    assert "unplayed" not in outs[0].record.manifest.cassette


# --- approvals ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_approval_flow_replays_with_the_recorded_decision(approved, tmp_path):
    before = len(handlers.SENT_EMAILS)
    # a replay re-decides every card (issue 14): the recorded approval is compared, the approver decides
    out = asyncio.run(replay_folder(AGENT, approved, out_dir=tmp_path / "a", approver="auto-approve"))
    assert out.result.status == "completed", out.result.error
    assert out.notes == []  # the same decision as the recording's
    assert len(handlers.SENT_EMAILS) == before + 1  # the tool really ran again, after the approval
    resolved = [e for e in out.events if e.type == "approval.resolved"]
    # The recorded decision replays as recorded, reviewer and note included (the note reaches the model).
    assert [(e.status, e.reviewer) for e in resolved] == [("approved", "auto-approve")]
    again = asyncio.run(replay_folder(AGENT, approved, out_dir=tmp_path / "b", approver="auto-approve"))
    assert again.result.status == "completed", again.result.error
    for name in ("trace.jsonl", "run.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.slow
def test_a_run_waiting_for_approval_replays_waiting(tmp_path):
    folder = tmp_path / "defer" / "claude" / "r0"
    with own_home(tmp_path / "home"):
        rec = record(folder, EMAIL_INSIDE, approver="defer")
    assert rec.result.status == "waiting_approval"
    out = asyncio.run(replay_folder(AGENT, folder))
    assert (out.result.status, out.result.stop_reason) == ("waiting_approval", "approval_pending"), (
        out.result.error
    )
    assert "unplayed" not in out.record.manifest.cassette


# --- secrets ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_secret_in_a_tool_result_refuses_the_recording(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    folder = tmp_path / "leak" / "claude" / "r0"
    with pytest.raises(RecordingError, match=r"transport\.jsonl \(line \d+\): a secret survived scrubbing"):
        record(
            folder, "Show me the API config.", agent=DATA / "leaky.yaml", script=DATA / "leaky_script.yaml"
        )
    assert not folder.exists()
    assert not [p for p in folder.parent.glob("*") if p.name.startswith(".")]  # no half-written temp folder


@pytest.mark.slow
def test_planted_keys_never_reach_any_file_of_a_live_recording(tmp_path, monkeypatch):
    # source "live" turns the recording proxy on by default; the emulator stands in for the vendor.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-PLANTEDENVKEYPLANTEDENVKEY0001")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-PLANTEDKEYPLANTEDKEY123456")
    folder = tmp_path / "live" / "claude" / "r0"
    endpoint_key = "sk-ant-api03-PLANTEDENDPOINTKEYPLANTED0002"
    out = record(folder, REFUND, source="live", key=endpoint_key)
    assert out.result.status == "completed"
    assert sorted(p.name for p in folder.iterdir()) == [
        "http.yaml",
        "run.json",
        "trace.jsonl",
        "transport.jsonl",
    ]
    for f in folder.iterdir():
        text = f.read_text()
        assert "PLANTED" not in text and "x-api-key" not in text.lower(), f.name
    assert out.record.manifest.source == "endpoint"  # a live key sent to a local stand-in (issue 15)
    assert out.record.manifest.cassette["http"] == {"file": "http.yaml", "interactions": 2}


# --- corrupt or foreign cassettes ---------------------------------------------------------------------


def test_corrupt_transport_cassettes_name_the_file(recorded, tmp_path):
    def variant(name: str, edit: Any) -> Path:
        folder = tmp_path / name
        shutil.copytree(recorded, folder)
        path = folder / "transport.jsonl"
        path.write_text(edit(path.read_text()))
        return folder

    truncated = variant("trunc", lambda t: t[: len(t) - 40])
    with pytest.raises(RecordingError, match=r"transport\.jsonl: line \d+ is not JSON"):
        asyncio.run(replay_folder(AGENT, truncated))
    version = variant("ver", lambda t: t.replace('"version": 1', '"version": 99', 1))
    with pytest.raises(RecordingError, match=r"transport\.jsonl: transport cassette version 99"):
        asyncio.run(replay_folder(AGENT, version))
    other = variant("other", lambda t: t.replace('"provider": "claude"', '"provider": "openai"', 1))
    with pytest.raises(RecordingError, match=r"transport\.jsonl: a cassette of provider 'openai'"):
        asyncio.run(replay_folder(AGENT, other))
    yaml_cassette = variant("yaml", lambda t: "interactions:\n- request:\n    method: POST\nversion: 1\n")
    with pytest.raises(RecordingError, match=r"transport\.jsonl: line 1 .*vcrpy HTTP cassette"):
        asyncio.run(replay_folder(AGENT, yaml_cassette))
    missing = variant("missing", lambda t: t)
    (missing / "transport.jsonl").unlink()
    with pytest.raises(RecordingError, match=r"transport\.jsonl: cassette not found"):
        asyncio.run(replay_folder(AGENT, missing))


def test_cli_replay_and_a_version_change_is_reported(recorded, tmp_path):
    code, out, err = run_cli(
        "run", str(AGENT), "--provider", "claude", "--replay", str(recorded), "--out", str(tmp_path / "o")
    )
    assert code == 0, err
    assert "status     completed" in out and "note" not in out
    code, _, err = run_cli("run", str(AGENT), "--provider", "openai", "--replay", str(recorded))
    assert code == 2 and "recorded with provider 'claude'" in err

    old = tmp_path / "old"
    shutil.copytree(recorded, old)
    run = json.loads((old / "run.json").read_text())
    run["manifest"]["cli_version"] = "2.0.0"
    (old / "run.json").write_text(json.dumps(run))
    rows = lines(old)
    rows[0]["cli_version"] = "2.0.0"
    write_lines(old, rows)
    changes = version_changes(RunRecord.model_validate(run))
    assert changes and changes[0].startswith("Claude Code CLI 2.0.0 at recording")
    code, out, err = run_cli("run", str(AGENT), "--provider", "claude", "--replay", str(old))
    assert code == 0, err  # reported, and the replay still runs
    assert "Claude Code CLI 2.0.0 at recording" in out and "status     completed" in out
    replayed = asyncio.run(replay_folder(AGENT, old))
    assert replayed.record.manifest.cassette["version_changes"][0].startswith("Claude Code CLI 2.0.0")


def test_record_mode_once_replays_an_existing_transport_cassette(recorded, tmp_path, monkeypatch):
    import anyio

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("record mode 'once' with a cassette must not start the CLI")

    monkeypatch.setattr(anyio, "open_process", refuse)
    folder = tmp_path / "once" / "claude" / "r0"
    shutil.copytree(recorded, folder)
    before = (folder / "transport.jsonl").read_bytes()
    bundle = load_agent(AGENT)
    request = RunRequest(
        input=TWO_TOOLS, provider="claude", case_id="c1", scopes=["tickets:write", "email:send"]
    )
    nowhere = Endpoint(source="emulator", base_url="http://127.0.0.1:9", api_key="sk-ant-dummy")
    out = asyncio.run(
        record_run(
            bundle,
            request,
            folder,
            nowhere,
            record_mode="once",
            ids=replay_ids(bundle.root, bundle.spec.version, "c1", "claude", 0),
        )
    )
    assert out.result.status == "completed", out.result.error
    assert (folder / "transport.jsonl").read_bytes() == before
    assert out.record.manifest.cassette["played"] == out.record.manifest.cassette["recorded"]


def test_replay_without_a_cassette_folder_is_still_refused():
    from portagent.contracts.errors import UsageError

    cfg = RunConfig(endpoint=Endpoint(mode="replay", base_url="http://replay.portagent.invalid", api_key="x"))
    with pytest.raises(UsageError, match="transport cassette"):
        asyncio.run(arun_full(AGENT, RunRequest(input=REFUND, provider="claude"), cfg))


# --- the recording proxy ------------------------------------------------------------------------------


@pytest.mark.slow
def test_http_cassette_through_the_proxy_loads_in_vcrpy(with_http):
    import vcr

    from portagent.tracing.importer import import_cassette

    path = with_http / "http.yaml"
    text = path.read_text()
    assert "x-api-key" not in text.lower() and "sk-ant-dummy" not in text
    with vcr.VCR(record_mode="none").use_cassette(str(path)) as cassette:
        requests = list(cassette.requests)
    assert [(r.method, r.path) for r in requests] == [("POST", "/v1/messages")] * 2
    for r in requests:
        body = json.loads(r.body)
        assert "mcp__portagent__search_policy" in {t["name"] for t in body["tools"]}
        assert body["stream"] is True
    # The same file is a foreign cassette for `portagent trace import`.
    events = import_cassette(path)
    calls = [e for e in events if e.type == "tool.call"]
    assert [(c.tool, c.args) for c in calls] == [("search_policy", {"query": "refund deadline"})]
    assert next(e for e in events if e.type == "run.completed").status == "completed"


@pytest.mark.slow
def test_proxy_replay_drives_the_real_cli_offline(with_http):
    """What checking a new CLI version looks like: the installed CLI against the recorded HTTP traffic."""
    from portagent.adapters.claude.proxy import ClaudeProxy

    proxy = ClaudeProxy(cassette=with_http / "http.yaml", mode="replay")
    with proxy as url:
        out = asyncio.run(
            arun_full(
                AGENT,
                RunRequest(input=REFUND, provider="claude"),
                RunConfig(endpoint=Endpoint(base_url=url, api_key="sk-ant-dummy")),
            )
        )
    assert out.result.status == "completed", out.result.error
    recorded = json.loads((with_http / "run.json").read_text())["result"]["final_output"]
    assert out.result.final_output == recorded
    assert proxy.unmatched == [] and proxy.unplayed == []


class _SlowSSE(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict[str, Any]] = []
    release = threading.Event()
    """Set by the test once it holds the first event: the second is sent only then (no timing involved)."""

    def log_message(self, *a: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _SlowSSE.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Set-Cookie", "session=SECRETCOOKIE")
        self.send_header("anthropic-organization-id", "org-PLANTED")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, event in enumerate((b'event: a\ndata: {"n": 1}\n\n', b'event: b\ndata: {"n": 2}\n\n')):
            if i:
                _SlowSSE.release.wait(10)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


@contextmanager
def slow_upstream() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowSSE)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_proxy_streams_through_without_buffering_and_scrubs_before_writing(tmp_path):
    import vcr

    from portagent.adapters.claude.proxy import ClaudeProxy

    cassette = tmp_path / "http.yaml"
    _SlowSSE.release.clear()
    with slow_upstream() as upstream:
        proxy = ClaudeProxy(upstream=upstream, cassette=cassette, api_key="sk-ant-api03-THEKEYTHEKEYTHEKEY")
        with proxy as url:
            port = int(url.rsplit(":", 1)[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request(
                "POST",
                "/v1/messages?beta=true&key=AIzaPLANTEDPLANTEDPLANTEDPLANTED12345",
                body=b'{"stream": true}',
                headers={
                    "x-api-key": "sk-ant-api03-THEKEYTHEKEYTHEKEY",
                    "Authorization": "Bearer abcdefghijklmnopqrstu",
                    "Cookie": "c=1",
                    "Content-Type": "application/json",
                },
            )
            resp = conn.getresponse()
            # The upstream holds the second event until the first reached us: a buffering proxy would
            # deliver both at once (after the upstream's 10 s wait), so this proves streaming without timing.
            first = resp.read1(65536)
            _SlowSSE.release.set()
            rest = resp.read()
            conn.close()
        proxy.save()
    assert first.startswith(b"event: a") and b"event: b" not in first and b"event: b" in rest
    # What reached the upstream: everything but the encoding the proxy asks for.
    sent = _SlowSSE.seen[-1]
    assert sent["headers"]["Accept-Encoding"] == "identity" and sent["headers"]["x-api-key"]
    text = cassette.read_text()
    for secret in ("THEKEY", "abcdefghijklmnopqrstu", "c=1", "SECRETCOOKIE", "org-PLANTED", "AIzaPLANTED"):
        assert secret not in text, secret
    with vcr.VCR(record_mode="none").use_cassette(str(cassette)) as loaded:
        (request,) = loaded.requests
    assert request.query == [("beta", "true")]
    assert b"event: b" in loaded.responses[0]["body"]["string"]


def test_proxy_refuses_a_recording_holding_a_secret(tmp_path):
    from portagent.adapters.claude.proxy import ClaudeProxy

    cassette = tmp_path / "http.yaml"
    with slow_upstream() as upstream:
        proxy = ClaudeProxy(upstream=upstream, cassette=cassette)
        with proxy as url:
            conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=10)
            conn.request("POST", "/v1/messages", body=b'{"note": "sk-ant-api03-LEAKEDINABODY0123456789"}')
            conn.getresponse().read()
            conn.close()
    with pytest.raises(RecordingError, match=r"http\.yaml: a secret survived scrubbing"):
        proxy.save()
    assert not cassette.exists()


# --- MCP-sourced tools --------------------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_sourced_tools_replay_without_the_cli_or_the_mcp_servers(tmp_path, monkeypatch):
    """An agent whose tools come from MCP servers: mcp.json answers the calls, transport.jsonl the CLI."""
    monkeypatch.syspath_prepend(str(REPO / "tests" / "mcp"))
    from _mcp_helpers import DATA as MCP_DATA
    from _mcp_helpers import server, write_agent

    monkeypatch.setenv("MCP_TEST_LOG", str(tmp_path / "mcp-calls.jsonl"))
    monkeypatch.setenv("MCP_TEST_MODE", "")
    monkeypatch.setenv("MCP_TEST_FORECAST", "sunny")
    mode = {"MCP_TEST_MODE": "${MCP_TEST_MODE}", "MCP_TEST_FORECAST": "${MCP_TEST_FORECAST}"}
    spec = write_agent(
        tmp_path / "agent", [server("weather", env=mode), server("glossary", allow=["lookup"])]
    )
    folder = tmp_path / "weather" / "claude" / "r0"
    with own_home(tmp_path / "home"):
        rec = record(folder, "What is the weather in Paris?", agent=spec, script=MCP_DATA / "emulator.yaml")
    assert rec.result.final_output == "Paris: sunny."
    assert sorted(p.name for p in folder.iterdir()) == [
        "mcp.json",
        "run.json",
        "trace.jsonl",
        "transport.jsonl",
    ]
    monkeypatch.setenv("MCP_TEST_MODE", "exit")  # a server started now would exit at once
    with nothing_started() as seen:
        out = asyncio.run(replay_folder(load_agent(spec), folder, out_dir=tmp_path / "a"))
    assert seen == []
    assert out.result.status == "completed" and out.result.final_output == "Paris: sunny."
    assert normalized(tmp_path / "a" / "trace.jsonl") == normalized(folder / "trace.jsonl")
