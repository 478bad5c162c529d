"""Emulator scripts: loading, validation errors with YAML paths, and the ``portagent emulate`` CLI."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
from _emulator_helpers import REPO, WEATHER, emulator, run_cli

from portagent.contracts.errors import EmulatorError, SpecError
from portagent.emulator import EmulatorScript, load_script, serve

HEADER = "kind: emulator-script\nschema_version: 1\n"


def write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "script.yaml"
    p.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    return p


def test_example_script_loads() -> None:
    script = load_script(REPO / "examples" / "emulator" / "weather.yaml")
    assert [c.name for c in script.conversations] == ["weather", "billing-handoff", "flaky"]
    assert script.conversations[1].turns[0].handoff is not None
    assert script.conversations[1].turns[0].handoff.agent == "billing"


def test_schema_export_has_field_docs() -> None:
    schema = EmulatorScript.model_json_schema()
    turn = schema["$defs"]["Turn"]["properties"]
    assert "description" in turn["text"] and "description" in turn["latency_ms"]


BAD = [
    (
        "unknown key",
        """
        conversations:
          - name: c
            match: {first_user: hi}
            turns:
              - txt: hello
     """,
        "conversations.0.turns.0.txt",
        8,
        "unknown field 'txt'",
    ),
    (
        "turn with neither text nor tool call",
        """
        conversations:
          - name: c
            match: {first_user: hi}
            turns:
              - usage: {input_tokens: 3}
     """,
        "conversations.0.turns.0",
        8,
        "needs 'text', 'tool_calls' or 'handoff'",
    ),
    (
        "tool call without name",
        """
        conversations:
          - name: c
            match: {first_user: hi}
            turns:
              - tool_calls:
                  - arguments: {city: Paris}
     """,
        "conversations.0.turns.0.tool_calls.0.name",
        9,
        "missing",
    ),
    (
        "bad fault name",
        """
        conversations:
          - name: c
            match: {first_user: hi}
            turns:
              - text: hello
                fault: {type: http_418}
     """,
        "conversations.0.turns.0.fault",
        9,
        "http_418",
    ),
    (
        "negative latency",
        """
        conversations:
          - name: c
            match: {first_user: hi}
            turns:
              - text: hello
                latency_ms: -5
     """,
        "conversations.0.turns.0.latency_ms",
        9,
        "greater than or equal to 0",
    ),
    (
        "bad regex",
        """
        conversations:
          - name: c
            match: {first_user_regex: "(unclosed"}
            turns: [{text: hello}]
     """,
        "conversations.0.match.first_user_regex",
        6,
        "invalid regular expression",
    ),
]


@pytest.mark.parametrize(("case", "body", "path", "line", "fragment"), BAD, ids=[b[0] for b in BAD])
def test_bad_script_names_path_and_line(
    tmp_path: Path, case: str, body: str, path: str, line: int, fragment: str
) -> None:
    file = write(tmp_path, body)
    with pytest.raises(SpecError) as info:
        load_script(file)
    problems = info.value.problems
    assert any(p.path == path for p in problems), [p.render() for p in problems]
    problem = next(p for p in problems if p.path == path)
    assert fragment in problem.message
    assert problem.line == line
    # and through the CLI: exit 1, one clear message, no traceback
    code, _, err = run_cli("emulate", "--script", str(file), "--port", "0")
    assert code == 1
    assert path in err and str(file) in err and "Traceback" not in err


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    file = write(
        tmp_path,
        """
        conversations:
          - {name: c, match: {first_user: a}, turns: [{text: x}]}
          - {name: c, match: {first_user: b}, turns: [{text: y}]}
    """,
    )
    with pytest.raises(SpecError, match="duplicate name 'c'"):
        load_script(file)


def test_handoff_and_tool_calls_exclusive() -> None:
    bad = {
        **WEATHER,
        "conversations": [
            {
                "name": "x",
                "match": {"first_user": "a"},
                "turns": [{"handoff": "b", "tool_calls": [{"name": "t"}]}],
            }
        ],
    }
    with pytest.raises(ValueError, match="both 'handoff' and 'tool_calls'"):
        EmulatorScript.model_validate(bad)


def test_usage_buckets_must_fit() -> None:
    bad = {
        **WEATHER,
        "conversations": [
            {
                "name": "x",
                "match": {"first_user": "a"},
                "turns": [
                    {
                        "text": "t",
                        "usage": {"input_tokens": 10, "cache_read_tokens": 8, "cache_write_tokens": 5},
                    }
                ],
            }
        ],
    }
    with pytest.raises(ValueError, match="cannot exceed input_tokens"):
        EmulatorScript.model_validate(bad)


def test_cli_missing_file_is_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("emulate", "--script", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "not found" in err and "Traceback" not in err


def test_cli_port_in_use_names_the_port(tmp_path: Path) -> None:
    file = REPO / "examples" / "emulator" / "weather.yaml"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, _, err = run_cli("emulate", "--script", str(file), "--port", str(port))
        assert code == 3
        assert f"port {port}" in err and "already in use" in err and "Traceback" not in err
        # the Python API says the same, as EmulatorError (exit code 3)
        with (
            pytest.raises(EmulatorError, match=f"port {port} on 127.0.0.1 is already in use") as info,
            serve(WEATHER, port=port),
        ):
            pass
        assert info.value.exit_code == 3


def test_cli_serves_until_interrupted(tmp_path: Path) -> None:
    """The real command in a subprocess: prints the URLs, answers, stops cleanly on Ctrl-C."""
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portagent",
            "emulate",
            "--script",
            str(REPO / "examples" / "emulator" / "weather.yaml"),
            "--port",
            "0",
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in first, first + (proc.stderr.read() if proc.poll() else "")
        base = first.rsplit("listening on ", 1)[1].strip()
        lines = [proc.stdout.readline() for _ in range(3)]
        assert f"  OPENAI_BASE_URL={base}/v1\n" in lines
        assert f"  ANTHROPIC_BASE_URL={base}\n" in lines
        with urllib.request.urlopen(base + "/_emulator/health", timeout=10) as resp:
            assert b'"status":"ok"' in resp.read()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0
    assert log.exists()


def test_json_script_file_and_subprocess_mode(tmp_path: Path) -> None:
    """A JSON script, served from a separate process; its log is read back from the JSONL file."""
    import json

    from _emulator_helpers import post

    file = tmp_path / "s.json"
    file.write_text(json.dumps(WEATHER), encoding="utf-8")
    with emulator(file, mode="subprocess") as emu:
        status, _, body = post(
            emu.openai_base_url + "/chat/completions",
            {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert status == 200 and b"Hello there!" in body
        deadline = time.monotonic() + 5
        while not emu.requests() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [r["path"] for r in emu.requests()] == ["/v1/chat/completions"]
        emu.reset()


def test_fault_example_loads_and_quickstart_runs() -> None:
    faults = load_script(REPO / "examples" / "emulator" / "faults.yaml")
    assert {t.fault.type for c in faults.conversations for t in c.turns if t.fault} == {
        "http_429",
        "overloaded",
        "slow_first_byte",
        "stall",
        "truncate",
        "malformed_arguments",
        "unknown_tool",
        "huge_text",
    }
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "emulator" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    assert "openai says: It is sunny in Paris." in out.stdout
