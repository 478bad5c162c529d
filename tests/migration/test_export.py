"""``portagent export AGENT --to P``: a native module per SDK, run against the emulator, whose trace is
``equivalent()`` to portagent's own run of the same spec.

What is compared: ``equivalent(portagent_events, exported_events)`` with its default cross-provider view
(tool sequence, arguments, results, permission decisions, approvals, handoffs, budgets, route, final
output, status, and the number of model calls). For openai, ADK and LangGraph the exported trace is also
equal with ``across_providers=False`` (every field but the volatile ones, event order included); for Claude
the position of ``model.call`` events may differ (the adapter waits for a model call to be recorded
before deciding its tools; the exported module does not), so only the default view is asserted.
The anthropic runtime (no handoffs) is proved on an agent-as-tool desk in test_export_new_runtimes.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from _migration_helpers import DATA, DUMMY_KEYS, SCRIPT, import_cli, of, run_exported, run_spec
from _support import run_cli

from portagent.emulator import load_script, serve
from portagent.tracing.compare import equivalent
from portagent.tracing.recorder import read_trace


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


@pytest.fixture(scope="module")
def desk(tmp_path_factory):
    """The native openai-agents desk, imported once."""
    out = tmp_path_factory.mktemp("export") / "desk"
    code, _, stderr = import_cli("native_openai:desk", "openai", out)
    assert code == 0, stderr
    return out / "agent.yaml"


def export(spec, target, path, *extra):
    code, _out, err = run_cli("export", str(spec), "--to", target, "--out", str(path), *extra)
    assert code == 0, err
    return path


@pytest.mark.parametrize("target", ["openai", "adk", "langgraph"])
@pytest.mark.parametrize(
    "text", ["My parcel ORD-8 never arrived.", "Summarise order ORD-7."], ids=["handoff", "structured_output"]
)
def test_exported_module_trace_equals_portagents_run(emu, desk, tmp_path, target, text):
    module = export(desk, target, tmp_path / f"desk_{target}.py")
    source = module.read_text(encoding="utf-8")
    assert "await run.call_tool(" in source or "await self.run.call_tool(" in source  # the gateway, explicit
    ours = run_spec(desk, target, text, emu, tmp_path)
    assert ours.result.status == "completed" and ours.result.output_valid, ours.result.error
    theirs = run_exported(module, target, text, emu, tmp_path)
    assert of(theirs, "run.completed")[0].final_output == ours.result.final_output
    assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()
    strict = equivalent(ours.events, theirs, across_providers=False)
    assert strict, strict.report()


@pytest.mark.parametrize("target", ["openai", "adk", "langgraph"])
def test_exported_agent_tool_and_sub_agent_match(emu, tmp_path, target):
    """The ADK import (an AgentTool and a sub-agent): the exported program delegates like portagent does."""
    out = tmp_path / "adk_desk"
    code, _, stderr = import_cli("native_adk:desk", "adk", out)
    assert code == 0, stderr
    module = export(out / "agent.yaml", target, tmp_path / f"adk_desk_{target}.py")
    for text in ("How fast do you ship? Ask the expert.", "My parcel ORD-8 never arrived."):
        ours = run_spec(out / "agent.yaml", target, text, emu, tmp_path, tag=text[:3])
        assert ours.result.status == "completed", ours.result.error
        theirs = run_exported(module, target, text, emu, tmp_path / text[:3].replace(" ", "_"))
        assert of(theirs, "handoff"), text
        assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()


def test_the_policy_still_applies_in_an_exported_module(emu, desk, tmp_path):
    """auto-deny: every imported tool is external_effect (approval required), so the refusal must show in
    the exported module's trace exactly as in portagent's run, and the handler never runs."""
    module = export(desk, "openai", tmp_path / "desk_openai.py")
    ours = run_spec(desk, "openai", "Summarise order ORD-7.", emu, tmp_path, approver="auto-deny")
    theirs = run_exported(module, "openai", "Summarise order ORD-7.", emu, tmp_path, approver="auto-deny")
    result = of(theirs, "tool.result")[0]
    assert result.ok is False and result.error == "approval_rejected"
    assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()


def test_an_exported_module_runs_as_a_program(emu, desk, tmp_path):
    module = export(desk, "openai", tmp_path / "desk_openai.py")
    trace = tmp_path / "trace.jsonl"
    env = {"PYTHONPATH": str(DATA), "PORTAGENT_HOME": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [
            sys.executable,
            str(module),
            "Summarise order ORD-7.",
            "--base-url",
            emu.base_url,
            "--api-key",
            DUMMY_KEYS["openai"],
            "--approver",
            "auto-approve",
            "--trace",
            str(trace),
            "--source",
            "emulator",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"status": "completed"' in proc.stdout
    events = read_trace(trace)
    assert events[0].type == "run.started" and events[0].source == "emulator"
    assert events[-1].final_output == {"order_id": "ORD-7", "status": "delivered"}


@pytest.mark.slow  # a program per runtime, each in its own Python
@pytest.mark.parametrize("target", ["openai", "adk", "langgraph"])
def test_an_exported_program_whose_provider_errs_says_so_in_one_line_and_keeps_its_trace(
    emu, desk, tmp_path, target
):
    """The endpoint answers 400 (the emulator knows no conversation starting so): the program exits 3 with one
    line naming the error, and its trace ends in run.completed ``failed`` — before, a traceback and no trace."""
    module = export(desk, target, tmp_path / f"desk_{target}.py")
    trace = tmp_path / "trace.jsonl"
    env = {"PYTHONPATH": str(DATA), "PORTAGENT_HOME": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, str(module), "A question no conversation starts with.", "--base-url", emu.base_url,
         "--api-key", DUMMY_KEYS[target], "--trace", str(trace), "--source", "emulator"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    if (
        target != "adk"
    ):  # (ADK's own logger prints the node's exception with its stack: the vendor's log, kept)
        assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"{module.name}: the run failed: ")
    lines = [line for line in proc.stderr.splitlines() if line.startswith(module.name)]
    assert len(lines) == 1 and "the run failed: " in lines[0] and "no conversation matches" in lines[0], (
        proc.stderr
    )
    events = read_trace(trace)
    assert events[0].type == "run.started"
    assert (events[-1].type, events[-1].status, events[-1].stop_reason) == (
        "run.completed",
        "failed",
        "provider_error",
    )
    assert [e for e in events if e.type == "error"]


@pytest.mark.slow  # each run starts the Claude Code CLI (about a second)
@pytest.mark.parametrize(
    "text",
    ["How fast do you ship? Ask the expert.", "Read the notes file, then check ORD-7."],
    ids=["subagent_and_mcp_tools", "granted_builtin"],
)
def test_claude_export_trace_equals_portagents_run(emu, tmp_path, text):
    out = tmp_path / "claude_desk"
    code, _, stderr = import_cli("native_claude:options", "claude", out, "--name", "shop_desk")
    assert code == 0, stderr
    module = export(out / "agent.yaml", "claude", tmp_path / "desk_claude.py")
    ours = run_spec(out / "agent.yaml", "claude", text, emu, tmp_path)
    assert ours.result.status == "completed", ours.result.error
    theirs = run_exported(module, "claude", text, emu, tmp_path)
    assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()
    assert of(theirs, "run.completed")[0].cost_source == "vendor"


def test_a_spec_the_target_cannot_run_is_not_exported(desk, tmp_path):
    code, _, err = run_cli("export", str(desk), "--to", "claude", "--out", str(tmp_path / "x.py"))
    assert (
        code == 1
        and "does not support this spec" in err
        and "handoffs: shop_desk -> refunds_specialist" in err
    )
    assert not (tmp_path / "x.py").exists()


def test_an_existing_module_is_refused_unless_overwrite(desk, tmp_path):
    path = tmp_path / "desk_openai.py"
    path.write_text("# mine\n", encoding="utf-8")
    code, _, err = run_cli("export", str(desk), "--to", "openai", "--out", str(path))
    assert code == 2 and "already exists" in err and path.read_text(encoding="utf-8") == "# mine\n"
    export(desk, "openai", path, "--overwrite")
    assert "import openai" in path.read_text(encoding="utf-8")


def test_exported_modules_use_no_adapter(desk, tmp_path):
    """Native SDK code: no portagent adapter is imported (ADK's module uses adk_events' pure helpers)."""
    for target in ("openai", "adk"):
        source = export(desk, target, tmp_path / f"m_{target}.py").read_text(encoding="utf-8")
        adapters = [line for line in source.splitlines() if "portagent.adapters" in line and "import" in line]
        assert adapters == (
            []
            if target == "openai"
            else [
                "from portagent.adapters.adk.events import declare_output_schema, final_text, finish_reason, usage_fields"
            ]
        )
        compile(source, str(tmp_path / f"m_{target}.py"), "exec")
