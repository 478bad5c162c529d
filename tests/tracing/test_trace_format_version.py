"""Every trace reader refuses a trace of another format version, naming it: ``trace show`` and ``trace
export`` read ``schema_version: 99`` as version 1 (exit 0), and ``trace diff`` reported the version on every
event as a difference. A folder given as a trace file is named as a folder."""

from __future__ import annotations

import json
from pathlib import Path

from _support import run_cli

EVENT = {
    "schema_version": 1,
    "run_id": "run_0000000000000001",
    "trace_id": "0" * 31 + "1",
    "span_id": "0" * 15 + "1",
    "parent_span_id": None,
    "seq": 0,
    "ts": "2026-01-01T00:00:00.000Z",
    "provider": "openai",
    "agent": "desk",
    "type": "run.started",
    "agent_version": "1.0.0",
    "spec_hash": "sha256:0",
    "policy_hash": "sha256:0",
    "sdk": "openai-agents",
    "sdk_version": "0",
    "model": "gpt-4.1-mini",
    "source": "emulator",
    "mode": "direct",
}


def test_a_trace_of_another_format_version_is_refused_by_every_reader(tmp_path: Path) -> None:
    current = tmp_path / "current.jsonl"
    current.write_text(json.dumps(EVENT) + "\n")
    assert run_cli("trace", "show", str(current))[0] == 0  # the fixture is a readable version-1 trace
    future = tmp_path / "future.jsonl"
    future.write_text(json.dumps({**EVENT, "schema_version": 99}) + "\n")
    for argv in (
        ("trace", "show", str(future)),
        ("trace", "export", str(future), "--otel-json", str(tmp_path / "out.json")),
        ("trace", "diff", str(current), str(future)),
    ):
        code, out, err = run_cli(*argv)
        assert code == 1 and "trace format version 99" in err and "Traceback" not in err, (argv, out, err)
    assert not (tmp_path / "out.json").exists()


def test_a_folder_given_as_a_trace_file_is_named_as_one(tmp_path: Path) -> None:
    code, _, err = run_cli("trace", "show", str(tmp_path))
    assert code == 2 and "a folder, not a trace file" in err


def test_an_event_holding_a_line_separator_is_read_whole(tmp_path: Path) -> None:
    """A JSON string may hold U+2028 (or U+0085) unescaped, as the recorder writes non-ASCII text; reading
    lines with splitlines() cut such an event in two and refused a valid trace."""
    from portagent.tracing.recorder import read_trace

    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        json.dumps({**EVENT, "model": "gpt\u2028x\u0085y"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    assert [e.model for e in read_trace(trace)] == ["gpt\u2028x\u0085y"]
    code, out, err = run_cli("trace", "show", str(trace))
    assert code == 0 and "run started" in out, err
