"""How an ``mcp serve`` session ends and what its trace and results say, with real MCP clients:

- a stdio client that goes away mid-call (its process killed) used to crash the server with an
  ExceptionGroup (BrokenPipeError in stdout_writer) and exit 1, leaving a trace whose in-flight call had
  no tool.result and whose run.completed said ``completed``;
- a tool returning NaN / Infinity got a text content that is not JSON (``NaN``) while the structured
  content and the trace said null;
- ``--trace FILE`` naming an existing trace appended a second session to it, which then exported as
  one trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from _support import REPO, run_cli

from portagent.tracing.recorder import read_trace

TOOLS = {
    "kind": "tools",
    "schema_version": 1,
    "tools": [
        {
            "name": "slow",
            "version": "1.0.0",
            "owner": "qa",
            "description": "Sleeps for s seconds.",
            "effect": "read",
            "input_schema": {"type": "object", "properties": {"s": {"type": "number"}}},
            "budgets": {"timeout_ms": 60000},
            "handler": "session_handlers:slow",
        },
        {
            "name": "nan",
            "version": "1.0.0",
            "owner": "qa",
            "description": "Returns numbers JSON cannot hold.",
            "effect": "read",
            "input_schema": {"type": "object", "properties": {}},
            "handler": "session_handlers:nan",
        },
    ],
}
HANDLERS = """
import pathlib
import time

def slow(s=1):
    pathlib.Path(__file__).with_name("started").touch()  # the trace is flushed only after a call
    time.sleep(float(s))
    return {"slept": s}

def nan():
    return {"v": float("nan"), "w": [float("inf"), -float("inf"), 1.5]}
"""


def _spec(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "session_handlers.py").write_text(HANDLERS, encoding="utf-8")
    path = folder / "tools.yaml"
    path.write_text(yaml.safe_dump(TOOLS, sort_keys=False), encoding="utf-8")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PORTAGENT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}


# The server is started through a wrapper that records its pid and exit code (a killed client cannot
# report them).
WRAPPER = """
import subprocess, sys
proc = subprocess.Popen([sys.executable, "-m", "portagent", "mcp", "serve", *sys.argv[2:]])
open(sys.argv[1] + ".pid", "w").write(str(proc.pid))
open(sys.argv[1], "w").write(str(proc.wait()))
"""
CLIENT = """
import asyncio, json, sys
from mcp import Client, StdioServerParameters

async def main():
    params = StdioServerParameters(command=sys.executable, args=json.loads(sys.argv[1]), cwd=sys.argv[2])
    async with Client(params) as client:
        await client.list_tools()
        print("calling", flush=True)
        await client.call_tool("slow", {"s": 3})
        print("answered", flush=True)

asyncio.run(main())
"""


def _wrapped(tmp_path: Path, spec: Path, trace: Path) -> tuple[list[str], Path]:
    (tmp_path / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    rc_file = tmp_path / "server.rc"
    return [str(tmp_path / "wrapper.py"), str(rc_file), str(spec), "--trace", str(trace)], rc_file


def _wait(what: str, ready) -> None:
    deadline = time.monotonic() + 30
    while not ready():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _called(trace: Path) -> bool:
    """The handler of the call has started (it leaves a file beside its module, in the spec folder)."""
    return (trace.parent / "spec" / "started").exists()


def test_a_client_killed_mid_call_ends_the_session_cleanly_with_a_whole_trace(tmp_path: Path) -> None:
    """The server answers the call into a closed pipe: one line on stderr and exit 0, not a traceback."""
    spec = _spec(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    server_args, rc_file = _wrapped(tmp_path, spec, trace)
    (tmp_path / "client.py").write_text(CLIENT, encoding="utf-8")
    client = subprocess.Popen(
        [sys.executable, str(tmp_path / "client.py"), json.dumps(server_args), str(spec.parent)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stdout is not None and client.stdout.readline() == "calling\n"
        _wait("the call never reached the server", lambda: _called(trace))
        client.kill()  # the client crashes mid-call: its ends of the server's stdin and stdout close
        client.wait(10)
        _wait("the server did not exit", rc_file.exists)
    finally:
        if client.poll() is None:
            client.kill()
    _, stderr = client.communicate(timeout=30)  # the server's stderr (inherited from the client)
    assert rc_file.read_text() == "0", stderr
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr
    events = read_trace(trace)
    types = [e.type for e in events]
    assert types == ["run.started", "tool.call", "permission.decision", "tool.result", "run.completed"]
    result, done = events[3], events[4]
    # the call finished (the client was not there to read it) or was cut off: the trace says which
    if result.ok:
        assert (done.status, done.stop_reason) == ("completed", "server_stopped")
    else:
        assert result.output["details"] == {"interrupted": True}
        assert (done.status, done.stop_reason) == ("cancelled", "interrupted")


def _whole(trace: Path) -> None:
    """One tool.result per tool.call, and a run.completed that says whether a call was cut off."""
    events = read_trace(trace)
    types = [e.type for e in events]
    assert types == ["run.started", "tool.call", "permission.decision", "tool.result", "run.completed"]
    call, result, done = events[1], events[3], events[4]
    assert result.call_id == call.call_id
    if result.ok:
        assert (done.status, done.stop_reason) == ("completed", "server_stopped")
    else:
        assert result.error == "handler_error" and result.output["details"] == {"interrupted": True}
        assert (done.status, done.stop_reason) == ("cancelled", "interrupted")


def test_sigterm_during_a_call_ends_the_session_with_exit_0(tmp_path: Path) -> None:
    """SIGTERM (what an MCP client sends when closing stdin is not enough) used to end the process with
    a CancelledError traceback and exit 1."""
    from mcp import Client, StdioServerParameters

    spec = _spec(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    server_args, rc_file = _wrapped(tmp_path, spec, trace)
    params = StdioServerParameters(
        command=sys.executable, args=server_args, env=_env(tmp_path), cwd=str(spec.parent)
    )

    async def go() -> None:
        async with Client(params) as client:
            call = asyncio.ensure_future(client.call_tool("slow", {"s": 20}))
            while not _called(trace):
                await asyncio.sleep(0.05)
            os.kill(int(Path(f"{rc_file}.pid").read_text()), signal.SIGTERM)
            while not rc_file.exists():
                await asyncio.sleep(0.05)
            call.cancel()
            with contextlib.suppress(BaseException):
                await call

    with contextlib.suppress(Exception):  # the client's session ends with the server gone
        asyncio.run(asyncio.wait_for(go(), 60))
    _wait("the server did not exit", rc_file.exists)
    assert rc_file.read_text() == "0"
    _whole(trace)
    assert not read_trace(trace)[3].ok  # the handler sleeps 20 s: the call was cut off


def test_sigterm_ends_an_idle_session_whose_stdin_is_still_open(tmp_path: Path) -> None:
    """An idle session (no call, the client's end of stdin open) and SIGTERM sent the moment the server
    says it is serving. The server read stdin in a thread SIGTERM could not stop, so it ran on until the
    client wrote or closed stdin (a client waiting for it to end killed it, the trace without
    ``run.completed``); and the handler was installed after that line, so a SIGTERM right then killed
    it (exit -15). Now it ends at once: exit 0, the session recorded."""
    spec = _spec(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "portagent", "mcp", "serve", str(spec), "--trace", str(trace)],
        cwd=spec.parent,
        env=_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    try:
        line = b""
        while b"serving" not in line:
            line = proc.stderr.readline()
            assert line, "the server ended before serving"
        proc.send_signal(signal.SIGTERM)  # stdin stays open: nothing else tells it to stop
        code = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0
    events = read_trace(trace)
    assert [e.type for e in events] == ["run.started", "run.completed"]
    assert (events[-1].status, events[-1].stop_reason) == ("completed", "server_stopped")


def test_a_call_cut_off_when_the_client_leaves_is_recorded_as_interrupted(tmp_path: Path) -> None:
    """A client speaking the 2025-06-18 protocol over raw stdio pipes (the mcp library's Client offers no
    way to leave mid-call without waiting) closes both pipes while a call runs: the server cancels the
    call. The trace used to show its tool.call with no tool.result and a ``completed`` session."""
    spec = _spec(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "portagent", "mcp", "serve", str(spec), "--trace", str(trace)],
        cwd=spec.parent,
        env=_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        proc.stdin.flush()

    try:
        info = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        send({"id": 1, "method": "initialize", "params": info})
        assert json.loads(proc.stdout.readline())["id"] == 1
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {"s": 20}}})
        _wait("the call never reached the server", lambda: _called(trace))
        proc.stdout.close()
        proc.stdin.close()
        rc = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
    assert rc == 0, stderr
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr
    _whole(trace)
    result = read_trace(trace)[3]
    assert not result.ok and "interrupted" in result.output["message"]


def test_a_session_whose_calls_all_finished_still_ends_completed(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    spec = _spec(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "portagent", "mcp", "serve", str(spec), "--trace", str(trace)],
        env=_env(tmp_path),
        cwd=str(spec.parent),
    )

    async def go():
        async with Client(params) as client:
            return await client.call_tool("nan", {})

    result = asyncio.run(asyncio.wait_for(go(), 60))
    assert not result.is_error
    text = json.loads(result.content[0].text, parse_constant=lambda c: math.nan)  # NaN would parse as nan
    expected = {"ok": True, "v": None, "w": [None, None, 1.5]}
    assert text == expected == result.structured_content
    events = read_trace(trace)
    assert events[-2].type == "tool.result" and events[-2].output == expected
    assert (events[-1].status, events[-1].stop_reason) == ("completed", "server_stopped")


def test_an_existing_trace_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    trace.write_text('{"type": "run.started"}\n', encoding="utf-8")
    before = trace.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "portagent", "mcp", "serve", str(spec), "--trace", str(trace)],
        env=_env(tmp_path),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "the file exists and is not empty; one serve session is one trace" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert trace.read_bytes() == before
    # an empty file (e.g. made by mktemp) is a new trace
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    code, _, err = run_cli("mcp", "serve", str(spec), "--trace", str(tmp_path))
    assert code == 2 and "is a folder" in err
    proc = subprocess.run(
        [sys.executable, "-m", "portagent", "mcp", "serve", str(spec), "--trace", str(empty)],
        env=_env(tmp_path),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert [e.type for e in read_trace(empty)] == ["run.started", "run.completed"]
