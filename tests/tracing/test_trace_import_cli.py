"""``portagent trace import FILE [--out trace.jsonl] [--agent NAME]``: output, exit codes, messages."""

from __future__ import annotations

import json
from pathlib import Path

from _support import run_cli
from _tracing_helpers import DATA

from portagent.contracts.trace import parse_event
from portagent.tracing.importer import import_cassette, trace_jsonl
from portagent.tracing.recorder import read_trace


def test_jsonl_on_stdout_without_out() -> None:
    code, out, err = run_cli("trace", "import", str(DATA / "chat_sse_gzip.yaml"))
    assert (code, err) == (0, "")
    events = [parse_event(json.loads(line)) for line in out.splitlines()]
    assert [e.type for e in events][0::7] == ["run.started", "run.completed"]
    assert out == trace_jsonl(import_cassette(DATA / "chat_sse_gzip.yaml"))


def test_out_writes_the_trace_replacing_an_old_file(tmp_path: Path) -> None:
    out_file = tmp_path / "runs" / "trace.jsonl"
    out_file.parent.mkdir()
    out_file.write_text("stale\n")
    code, out, err = run_cli(
        "trace",
        "import",
        str(DATA / "responses_retry_reasoning.yaml"),
        "--out",
        str(out_file),
        "--agent",
        "calculator",
    )
    assert (code, err) == (0, "")
    assert "2 model calls, 1 tool calls, status completed" in out
    events = read_trace(out_file)
    assert events[0].type == "run.started" and {e.agent for e in events} == {"calculator"}
    code, shown, _ = run_cli("trace", "show", str(out_file))
    assert code == 0 and "calc" in shown and "Rate limit reached" in shown


def test_summary_counts_calls_without_result(tmp_path: Path) -> None:
    code, out, _ = run_cli(
        "trace", "import", str(DATA / "chat_unanswered_call.yaml"), "--out", str(tmp_path / "t.jsonl")
    )
    assert code == 0 and "1 tool calls (1 without result), status cancelled" in out


def test_a_missing_file_exits_2_and_a_corrupt_one_exits_1_without_traceback(tmp_path: Path) -> None:
    code, out, err = run_cli("trace", "import", str(tmp_path / "absent.yaml"))
    assert (code, out) == (2, "") and err == f"portagent: {tmp_path / 'absent.yaml'}: no such cassette file\n"
    cut = tmp_path / "cut.yaml"
    cut.write_text("interactions:\n- request: {uri: 'https://api.openai.com/v1/responses")
    code, out, err = run_cli("trace", "import", str(cut), "--out", str(tmp_path / "t.jsonl"))
    assert (code, out) == (1, "") and err.startswith(f"portagent: {cut}:") and "Traceback" not in err
    assert not (tmp_path / "t.jsonl").exists()


def test_unwritable_out_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("trace", "import", str(DATA / "chat_sse_gzip.yaml"), "--out", str(tmp_path))
    assert code == 2 and err.startswith(f"portagent: {tmp_path}: exists and is not a regular file")
    assert not [p for p in tmp_path.parent.iterdir() if p.name.startswith(f".{tmp_path.name}.")]


def test_import_is_listed_in_help() -> None:
    code, out, _ = run_cli("trace", "--help")
    assert code == 0 and "import" in out
