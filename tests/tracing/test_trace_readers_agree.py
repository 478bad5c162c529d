"""The three trace commands agree on what is not a trace: an empty file (or one of blank lines) is refused
by ``trace show`` as by ``diff`` and ``export`` (``show`` printed "(empty trace)" with exit 0), and a trace
with several damaged lines names each of them (it named the first only, so mending it took one run per
bad line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_cli
from test_trace_format_version import EVENT

from portagent.tracing.timeline import MAX_PROBLEMS_SHOWN


@pytest.mark.parametrize("content", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_every_trace_command_refuses_a_file_without_events(tmp_path: Path, content: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text(content)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(EVENT) + "\n")
    out_file = tmp_path / "out.json"
    for argv in (
        ("trace", "show", str(empty)),
        ("trace", "diff", str(good), str(empty)),
        ("trace", "export", str(empty), "--otel-json", str(out_file)),
    ):
        code, out, err = run_cli(*argv)
        assert code == 2, (argv, out, err)
        assert f"{empty}: no trace events (empty file)" in err and "Traceback" not in err, (argv, err)
    assert not out_file.exists()


def test_a_trace_with_several_bad_lines_names_each(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    lines = [
        json.dumps(EVENT),
        '{"cut": ',  # line 2: not JSON
        json.dumps({**EVENT, "seq": 1}),
        json.dumps({**EVENT, "seq": 2, "type": "no.such.event"}),  # line 4: not a trace event
        json.dumps({**EVENT, "seq": 3, "schema_version": 7}),  # line 5: another format version
    ]
    trace.write_text("\n".join(lines) + "\n")
    code, _, err = run_cli("trace", "show", str(trace))
    assert code == 1 and "3 problems found" in err, err
    for n, said in ((2, "line is not JSON"), (4, "not a trace event"), (5, "trace format version 7")):
        assert any(f"{trace}:{n}" in row and said in row for row in err.splitlines()), (n, said, err)


def test_a_trace_full_of_bad_lines_names_the_first_ones_and_counts_the_rest(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("not json\n" * (MAX_PROBLEMS_SHOWN + 5))
    code, _, err = run_cli("trace", "show", str(trace))
    assert code == 1 and f"{MAX_PROBLEMS_SHOWN + 5} problems found" in err, err
    assert f"{trace}:{MAX_PROBLEMS_SHOWN}:" in err and f"{trace}:{MAX_PROBLEMS_SHOWN + 1}:" not in err, err
    assert "… and 5 more not shown" in err, err
