"""``report`` and ``gate`` refuse a results folder whose run trace has a line that is not a trace event.

They used to skip such a line, so report.html showed the run without the events it held (its tool
calls, its end) or "no trace in this results folder" although the file was there. Now: one message
naming the file and the line, exit 2, and every file of the folder as it was (no report re-rendered,
no gate setting recorded). Driven through the CLI on a copy of the support-desk example, replayed from
the repository's cassettes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, portagent_home, run_cli

SUITE = """kind: suite
schema_version: 1
suite_id: support-desk
dataset_version: "2026-11.1"
owner: tests
agent: agent.yaml
providers: [openai]
repeats: 1
thresholds: {final: 0.5}
emulator_script: emulator.yaml
approver: scripted
cases:
  - case_id: email-outside-denied
    input: "Email ana.garcia@gmail.com that her DNI is missing."
    why_it_exists: a run with a tool call, for the report's timeline
    expect:
      final_must_contain: [ana.garcia@gmail.com, permission_denied]
      required_tools: [send_email]
    context: {scopes: ["email:send"]}
"""
REPLAY = ("--replay", "--cassettes", str(REPO / "cassettes"), "--no-progress", "--workers", "1")


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damaged")
    work = root / "work"
    shutil.copytree(
        EXAMPLES / "support_desk", work, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    (work / "suite.yaml").write_text(SUITE)
    with portagent_home(root / "home"):
        code, _, err = run_cli("eval", str(work / "suite.yaml"), *REPLAY, "--out", str(work / "res"))
    assert code == 0, err
    return work / "res"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda line: line[: len(line) // 2], "not JSON"),  # a line cut short (a disk full, a copy)
        (lambda line: json.dumps({**json.loads(line), "type": "tool.cal"}), "no event type 'tool.cal'"),
    ],
    ids=["truncated", "unknown-type"],
)
@pytest.mark.parametrize("command", ["report", "gate"])
def test_a_damaged_trace_line_is_refused_and_nothing_is_written(
    evaluated: Path, tmp_path: Path, command: str, damage: Callable[[str], str], reason: str
) -> None:
    res = tmp_path / "res"
    shutil.copytree(evaluated, res)
    (trace,) = res.glob("runs/*/*/*/r0/trace.jsonl")
    lines = trace.read_text().splitlines()
    n = next(i for i, x in enumerate(lines, 1) if json.loads(x)["type"] == "tool.call")
    lines[n - 1] = damage(lines[n - 1])
    trace.write_text("\n".join(lines) + "\n")
    before = _snapshot(res)

    with portagent_home(tmp_path / "home"):
        code, out, err = run_cli(command, str(res))
    assert code == 2, (out, err)
    assert f"{trace}: line {n} is not a trace event" in err and reason in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert _snapshot(res) == before  # report.md / report.html / ci_gate.json / eval.json as they were


def test_an_intact_folder_still_renders_its_tool_calls(evaluated: Path, tmp_path: Path) -> None:
    res = tmp_path / "res"
    shutil.copytree(evaluated, res)
    # A line separator inside a JSON string (written raw, as pydantic writes it) is not a line break.
    (trace,) = res.glob("runs/*/*/*/r0/trace.jsonl")
    rows = [json.loads(x) for x in trace.read_text().splitlines()]
    rows[-1]["final_output"] = "sent\u2028done"
    trace.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    with portagent_home(tmp_path / "home"):
        code, _, err = run_cli("report", str(res))
    assert code == 0, err
    html = (res / "report.html").read_text()
    assert "send_email" in html and "no trace in this results folder" not in html
