"""``portagent init DIR``: a minimal project that validates, runs on the emulator on every provider,
records and evals as written — tried through the CLI, the way a new user would, by running the commands
its README lists, in order. Bad input is one clear message, exit 2, and nothing on disk."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from _support import run_cli


def readme_commands(project: Path) -> list[list[str]]:
    """The ``portagent …`` commands of the README's first bash block, as argv lists."""
    text = (project / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    commands = []
    for line in block.group(1).splitlines():
        argv = shlex.split(line, comments=True)
        if argv and argv[0] == "portagent":
            commands.append(argv[1:])
    return commands


def without_claude(argv: list[str]) -> list[str] | None:
    """The same command without Claude (the Claude Code CLI runs in the slow tests)."""
    if "--provider" in argv and argv[argv.index("--provider") + 1] == "claude":
        return None
    out = [",".join(p for p in a.split(",") if p != "claude") if "," in a else a for a in argv]
    if out[0] == "eval" and "--providers" not in out:  # the suite lists all three
        out += ["--providers", "openai,adk"]
    return out


def init(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    code, out, err = run_cli("init", str(tmp_path / name))
    assert code == 0, err
    assert f"next: cd {tmp_path / name}" in out
    return tmp_path / name


def run_readme(project: Path, monkeypatch: pytest.MonkeyPatch, *, claude: bool) -> dict[str, str]:
    monkeypatch.chdir(project)
    outputs = {}
    for argv in readme_commands(project):
        cmd = argv if claude else without_claude(argv)
        if cmd is None:
            continue
        code, out, err = run_cli(*cmd)
        assert code == 0, (cmd, out, err)
        assert "Traceback" not in err
        outputs[" ".join(cmd[:1] + cmd[-2:])] = out
    return outputs


def test_init_writes_a_project_whose_readme_commands_all_work(tmp_path, monkeypatch):
    project = init(tmp_path, "first_agent", monkeypatch)
    assert sorted(p.name for p in project.iterdir()) == sorted(
        [
            "README.md",
            "agent.yaml",
            "emulator.yaml",
            "first_agent_handlers.py",
            "policy.yaml",
            "suite.yaml",
            "tools.yaml",
        ]
    )
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    run_readme(project, monkeypatch, claude=False)
    # what the commands left: a run per provider, cassettes that replay, a scored result that passes
    recorded = sorted(p.parent.parent.name for p in (project / "cassettes").rglob("run.json"))
    assert recorded == ["adk", "openai"]
    report = json.loads((project / "results" / "report.json").read_text(encoding="utf-8"))
    runs = report["runs"]
    assert {r["provenance"]["provider"] for r in runs} == {"openai", "adk"}
    assert all(r["passed"] for r in runs) and {r["provenance"]["source"] for r in runs} == {"replay"}
    gate = json.loads((project / "results" / "ci_gate.json").read_text(encoding="utf-8"))
    assert gate["passed"] is True


@pytest.mark.parametrize(
    "provider", ["openai", "adk", "anthropic", "langgraph", pytest.param("claude", marks=pytest.mark.slow)]
)
def test_the_agent_reads_its_tool_on_every_provider(tmp_path, monkeypatch, provider):
    """The handler really runs (found next to the spec) and its result reaches the model's answer."""
    project = init(tmp_path, f"orders_{provider}", monkeypatch)
    monkeypatch.chdir(tmp_path)  # not the project folder: the handler is found next to the spec
    code, out, err = run_cli(
        "run",
        str(project / "agent.yaml"),
        "--provider",
        provider,
        "--emulator",
        str(project / "emulator.yaml"),
        "--input",
        "Where is my order ORD-7?",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0, err
    record = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert record["result"]["status"] == "completed"
    assert record["result"]["final_output"] == "Order ORD-7 is shipped with DHL."
    trace = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    results = [e for e in trace if e["type"] == "tool.result"]
    assert [(e["tool"], e["ok"]) for e in results] == [("get_order", True)]


@pytest.mark.slow  # the Claude Code CLI starts for each Claude run
def test_the_readme_as_written_with_claude(tmp_path, monkeypatch):
    project = init(tmp_path, "all_three", monkeypatch)
    run_readme(project, monkeypatch, claude=True)
    recorded = sorted(p.parent.parent.name for p in (project / "cassettes").rglob("run.json"))
    assert recorded == ["adk", "claude", "openai"]


# --- refusals: one message, exit 2, nothing written -----------------------------------------------


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_non_empty_folder_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    code, out, err = run_cli("init", str(target))
    assert code == 2 and "not empty" in err and "nothing was written" in err
    assert "Traceback" not in err and out == ""
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["busy"]


def test_an_empty_folder_is_used(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    code, _, err = run_cli("init", str(tmp_path / "empty"), "--name", "desk")
    assert code == 0, err
    assert (tmp_path / "empty" / "desk_handlers.py").is_file()
    code, _, err = run_cli("validate", str(tmp_path / "empty" / "agent.yaml"))
    assert code == 0, err


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        ("file", [], "exists and is not a folder"),
        ("no-parent", [], "does not exist"),
        ("none", ["--name", "9lives"], "an agent name is an identifier"),
    ],
)
def test_bad_targets_are_usage_errors(tmp_path, setup, extra, message):
    target = tmp_path / "proj"
    if setup == "file":
        target.write_text("x")
    elif setup == "no-parent":
        target = tmp_path / "missing" / "proj"
    before = snapshot(tmp_path)
    code, out, err = run_cli("init", str(target), *extra)
    assert code == 2 and message in err and "Traceback" not in err
    assert snapshot(tmp_path) == before
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_a_reader_that_goes_away_is_no_traceback(tmp_path: Path) -> None:
    """``portagent … | head -1``: the pipe closes before portagent is done writing."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PORTAGENT_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "portagent", "capabilities"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err, err
