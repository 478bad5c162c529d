"""``portagent export --to anthropic|langgraph``: the exported native program's trace is ``equivalent()``
to portagent's own run of the same spec against the emulator (the contract of tests/migration/test_export.py).

The anthropic runtime has no handoffs (the verdict refuses them), so its desk delegates to the specialist
as a tool. LangGraph's OpenAI-model runs are in test_export.py's shared equivalence test (handoff, structured
output, agent-as-tool and sub-agent); here it runs the desk's handoff on an Anthropic chat model.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
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
def desks(tmp_path_factory):
    """The native openai-agents desk imported once; a copy whose specialist is an agent-as-tool."""
    out = tmp_path_factory.mktemp("export-new") / "desk"
    code, _, stderr = import_cli("native_openai:desk", "openai", out)
    assert code == 0, stderr
    spec = out / "agent.yaml"
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    for edge in data["delegation"]:
        edge["kind"] = "agent_as_tool"
    tooled = out / "tooled.yaml"
    tooled.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["models"]["langgraph"] = "anthropic:claude-sonnet-4-6"  # the chat model vendor is the spec's choice
    claude = out / "on_claude.yaml"
    claude.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    data["models"]["langgraph"] = "google_genai:gemini-2.5-flash"
    gemini = out / "on_gemini.yaml"
    gemini.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return {"handoff": spec, "tooled": tooled, "on_claude": claude, "on_gemini": gemini}


def export(spec, target, path, *extra):
    code, _out, err = run_cli("export", str(spec), "--to", target, "--out", str(path), *extra)
    assert code == 0, err
    return path


CASES = [
    ("anthropic", "tooled", "Summarise order ORD-7."),
    ("anthropic", "tooled", "Ask the specialist about ORD-8."),
    ("anthropic", "tooled", "Summarise order ORD-7 with an odd call first."),
    ("langgraph", "on_claude", "My parcel ORD-8 never arrived."),
    ("langgraph", "on_gemini", "Summarise order ORD-7."),
]


@pytest.mark.parametrize(
    ("target", "desk", "text"),
    CASES,
    ids=[
        "anthropic-structured_output",
        "anthropic-agent_as_tool",
        "anthropic-undeclared_tool",
        "langgraph-anthropic_model-handoff",
        "langgraph-gemini_model-structured_output",
    ],
)
def test_exported_module_trace_equals_portagents_run(emu, desks, tmp_path, target, desk, text):
    spec = desks[desk]
    module = export(spec, target, tmp_path / f"desk_{target}.py")
    source = module.read_text(encoding="utf-8")
    assert "await run.call_tool(" in source or "await self.run.call_tool(" in source  # the gateway, explicit
    ours = run_spec(spec, target, text, emu, tmp_path)
    assert ours.result.status == "completed" and ours.result.output_valid, ours.result.error
    theirs = run_exported(module, target, text, emu, tmp_path)
    assert of(theirs, "run.completed")[0].final_output == ours.result.final_output
    assert of(theirs, "tool.call"), "the scripted turns call tools"
    if "ORD-8" in text:
        assert of(theirs, "handoff")
    if "odd call" in text:  # a tool nobody declared: traced by both, answered unknown_tool
        assert [e.tool for e in of(theirs, "tool.call")] == ["launch_rocket"]
        assert [e.error for e in of(theirs, "tool.result")] == ["unknown_tool"]
    assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()
    strict = equivalent(ours.events, theirs, across_providers=False)
    assert strict, strict.report()


def test_the_policy_still_applies_in_an_exported_anthropic_module(emu, desks, tmp_path):
    """auto-deny: the imported tools need approval, so the refusal shows in both traces and is sent back as
    an ``is_error`` tool result (what the emulator's request log shows)."""
    module = export(desks["tooled"], "anthropic", tmp_path / "desk_anthropic.py")
    text = "Summarise order ORD-7."
    ours = run_spec(desks["tooled"], "anthropic", text, emu, tmp_path, approver="auto-deny")
    before = len(emu.requests())
    theirs = run_exported(module, "anthropic", text, emu, tmp_path, approver="auto-deny")
    result = of(theirs, "tool.result")[0]
    assert result.ok is False and result.error == "approval_rejected"
    assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()
    sent = [r for r in emu.requests()[before:] if "/v1/messages" in r.get("path", "")]
    answers = [
        b
        for m in sent[-1]["body"]["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result"
    ]
    assert answers and answers[0]["is_error"] is True and "approval_rejected" in answers[0]["content"]


@pytest.mark.slow  # a fresh interpreter importing the anthropic SDK (several seconds on a shared machine)
def test_an_exported_anthropic_module_runs_as_a_program(emu, desks, tmp_path):
    module = export(desks["tooled"], "anthropic", tmp_path / "desk_anthropic.py")
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
            DUMMY_KEYS["anthropic"],
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
    events = read_trace(trace)
    assert events[0].type == "run.started" and events[0].sdk == "anthropic"
    assert events[-1].final_output == {"order_id": "ORD-7", "status": "delivered"}


def test_anthropic_export_refuses_a_handoff_and_writes_nothing(desks, tmp_path):
    out = tmp_path / "x.py"
    code, _, err = run_cli("export", str(desks["handoff"]), "--to", "anthropic", "--out", str(out))
    assert code == 1 and "does not support this spec" in err and "handoffs" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("target", ["anthropic", "langgraph"])
def test_exported_modules_use_no_adapter(desks, tmp_path, target):
    spec = desks["tooled" if target == "anthropic" else "handoff"]
    source = export(spec, target, tmp_path / f"m_{target}.py").read_text(encoding="utf-8")
    assert not [line for line in source.splitlines() if "portagent.adapters" in line and "import" in line]
    compile(source, str(tmp_path / f"m_{target}.py"), "exec")


@pytest.mark.parametrize("target", ["anthropic", "langgraph"])
def test_a_budget_stop_matches(emu, desks, tmp_path, target):
    """max_turns 1: the tool call runs, the second model call is refused before it is sent, on both sides."""
    data = yaml.safe_load(desks["tooled"].read_text(encoding="utf-8"))
    data["budget"] = {"max_turns": 1}
    spec = desks["tooled"].with_name(f"tight_{target}.yaml")
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    module = export(spec, target, tmp_path / f"tight_{target}.py")
    ours = run_spec(spec, target, "Summarise order ORD-7.", emu, tmp_path)
    assert ours.result.status == "budget_exhausted", ours.result
    theirs = run_exported(module, target, "Summarise order ORD-7.", emu, tmp_path)
    done = of(theirs, "run.completed")[0]
    assert (done.status, done.stop_reason, done.model_calls) == ("budget_exhausted", "max_turns", 1)
    assert equivalent(ours.events, theirs), equivalent(ours.events, theirs).report()
    strict = equivalent(ours.events, theirs, across_providers=False)
    assert strict, strict.report()


@pytest.mark.parametrize("target", ["openai", "anthropic", "langgraph"])
def test_an_exported_program_names_itself_and_refuses_a_mistake_in_one_line(desks, tmp_path, target):
    """The docstring's command names the file that was written (--out), and an approver the program does
    not keep (defer: nothing here holds a paused run) is one argparse error, exit 2, no traceback."""
    spec = desks["tooled"] if target == "anthropic" else desks["handoff"]
    module = export(spec, target, tmp_path / "my_program.py")
    assert "python my_program.py" in module.read_text(encoding="utf-8")
    env = {"PYTHONPATH": str(DATA), "PORTAGENT_HOME": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, str(module), "Hello.", "--approver", "defer"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "--approver" in proc.stderr and "defer" in proc.stderr
