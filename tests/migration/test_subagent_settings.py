"""Each agent runs with its own spec's shared settings (temperature, max_tokens), never the root's.

``portagent import`` writes a sub-agent's own ``models.temperature``/``max_tokens`` (with
``force_shared_settings``), but every adapter and exported program read only the root spec's: the root's
settings went out on every agent's requests (openai-agents: a handoff target natively at 1.5 sent 0.0 and
the root's output limit; ADK: a sub-agent's ``generate_content_config`` became ``{}``). These tests run the
real SDKs against the emulator and read its request log: each request's temperature and output limit, per
agent, the agent told apart by its instructions. Where the runtime cannot express a sub-agent's own
settings (Claude Code: no temperature, one output limit per process), the verdict says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _migration_helpers import import_cli, run_exported, run_spec
from _support import run_cli

from portagent.adapters.anthropic.rules import DEFAULT_MAX_TOKENS
from portagent.emulator import load_script, serve

ROOT_TEXT, SUB_TEXT = "Route.", "Write poems."

SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "subagent_settings",
    "conversations": [
        {
            "name": "handoff",
            "match": {"first_user": "poem please"},
            "turns": [{"handoff": "creative"}, {"text": "a poem"}],
        },
        {
            "name": "as_tool",
            "match": {"first_user": "poem tool please"},
            "turns": [
                {"tool_calls": [{"name": "creative", "arguments": {"input": "Write one."}}]},
                {"text": "done"},
            ],
        },
        {"name": "sub_thread", "match": {"first_user": "Write one."}, "turns": [{"text": "a poem"}]},
    ],
}

MODELS = {
    "openai": "gpt-4.1",
    "adk": "gemini-2.5-flash",
    "anthropic": "claude-sonnet-4-6",
    "langgraph": "openai:gpt-4.1",
}


@pytest.fixture
def emu(tmp_path):
    path = tmp_path / "emu.yaml"
    path.write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
    with serve(load_script(path)) as running:
        yield running


def bundle(folder: Path, kind: str, *, sub_models: dict[str, Any] | None = None) -> Path:
    """desk (temperature 0.0, max_tokens 50, forced) delegating to creative (temperature 1.5, forced, no
    output limit of its own) by ``kind``."""
    folder.mkdir(parents=True, exist_ok=True)
    sub = {"temperature": 1.5, "force_shared_settings": True} if sub_models is None else sub_models
    (folder / "creative.yaml").write_text(
        yaml.safe_dump(
            {
                "kind": "agent",
                "schema_version": 1,
                "name": "creative",
                "instructions": SUB_TEXT,
                "models": sub,
            }
        ),
        encoding="utf-8",
    )
    root = {
        "kind": "agent",
        "schema_version": 1,
        "name": "desk",
        "instructions": ROOT_TEXT,
        "models": {**MODELS, "temperature": 0.0, "max_tokens": 50, "force_shared_settings": True},
        "delegation": [{"agent": "creative.yaml", "kind": kind, "description": "Writes poems."}],
    }
    (folder / "agent.yaml").write_text(yaml.safe_dump(root), encoding="utf-8")
    return folder / "agent.yaml"


def settings_by_agent(requests: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    """(temperature, output limit) of each request, keyed by the agent's instructions; every request of one
    agent must agree."""
    out: dict[str, tuple[Any, Any]] = {}
    for entry in requests:
        body, api = entry["body"], entry["api"]
        if api == "gemini.generate_content":
            config = body.get("generationConfig") or {}
            parts = (body.get("systemInstruction") or {}).get("parts") or [{}]
            instructions = parts[0].get("text", "")
            found = (config.get("temperature"), config.get("maxOutputTokens"))
        elif api == "anthropic.messages":
            system = body.get("system")
            instructions = system if isinstance(system, str) else system[0]["text"]
            found = (body.get("temperature"), body.get("max_tokens"))
        elif api == "openai.responses":
            first = (body.get("input") or [{}])[0]  # langchain-openai sends them as a system message
            instructions = body.get("instructions") or (
                first.get("content") if first.get("role") == "system" else ""
            )
            found = (body.get("temperature"), body.get("max_output_tokens"))
        else:  # openai.chat
            instructions = body["messages"][0]["content"]
            found = (body.get("temperature"), body.get("max_completion_tokens", body.get("max_tokens")))
        agent = (
            "desk" if ROOT_TEXT in instructions else "creative" if SUB_TEXT in instructions else instructions
        )
        assert out.setdefault(agent, found) == found, (agent, out[agent], found)
    return out


# --- portagent's own runs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "kind", "text", "sub_limit"),
    [
        ("openai", "handoff", "poem please", None),
        ("openai", "agent_as_tool", "poem tool please", None),
        ("adk", "handoff", "poem please", None),
        ("adk", "agent_as_tool", "poem tool please", None),
        ("langgraph", "handoff", "poem please", None),
        # the Messages API requires max_tokens: the sub-agent's own limit is the default, not the root's 50
        ("anthropic", "agent_as_tool", "poem tool please", DEFAULT_MAX_TOKENS),
    ],
)
def test_each_agent_runs_with_its_own_settings(emu, tmp_path, provider, kind, text, sub_limit):
    spec = bundle(tmp_path / "spec", kind)
    run = run_spec(spec, provider, text, emu, tmp_path)
    assert run.result.status == "completed", run.result.error
    seen = settings_by_agent(emu.requests())
    assert seen == {"desk": (0.0, 50), "creative": (1.5, sub_limit)}


def test_an_unforced_sub_agent_sends_no_temperature_of_the_roots(emu, tmp_path):
    """A sub-agent whose spec does not force settings runs as an unforced root does: no temperature, no
    limit (before, it ran at the root's)."""
    spec = bundle(tmp_path / "spec", "handoff", sub_models={})
    run = run_spec(spec, "openai", "poem please", emu, tmp_path)
    assert run.result.status == "completed", run.result.error
    assert settings_by_agent(emu.requests()) == {"desk": (0.0, 50), "creative": (None, None)}


def test_anthropic_sub_agent_without_its_own_settings_keeps_the_roots_required_limit(emu, tmp_path):
    """Unforced, a sub-agent without a limit of its own still sends the root's max_tokens (the Messages API
    requires one), as before."""
    spec = bundle(tmp_path / "spec", "agent_as_tool", sub_models={})
    run = run_spec(spec, "anthropic", "poem tool please", emu, tmp_path)
    assert run.result.status == "completed", run.result.error
    assert settings_by_agent(emu.requests()) == {"desk": (0.0, 50), "creative": (None, 50)}


# --- the exported programs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "kind", "text", "sub_limit"),
    [
        ("openai", "handoff", "poem please", None),
        ("adk", "handoff", "poem please", None),
        ("langgraph", "handoff", "poem please", None),
        ("anthropic", "agent_as_tool", "poem tool please", DEFAULT_MAX_TOKENS),
    ],
)
def test_exported_programs_give_each_agent_its_own_settings(emu, tmp_path, target, kind, text, sub_limit):
    spec = bundle(tmp_path / "spec", kind)
    module = tmp_path / f"desk_{target}.py"
    code, _, err = run_cli("export", str(spec), "--to", target, "--out", str(module))
    assert code == 0, err
    events = run_exported(module, target, text, emu, tmp_path)
    assert [e.status for e in events if e.type == "run.completed"] == ["completed"]
    assert settings_by_agent(emu.requests()) == {"desk": (0.0, 50), "creative": (1.5, sub_limit)}


# --- imported from the native SDKs (the reported case) ----------------------------------------------

NATIVE = {
    "openai": (
        "from agents import Agent, ModelSettings\n"
        "creative = Agent(name='creative', instructions='Write poems.', model='gpt-4.1',\n"
        "                 model_settings=ModelSettings(temperature=1.5))\n"
        "desk = Agent(name='desk', instructions='Route.', model='gpt-4.1',\n"
        "             model_settings=ModelSettings(temperature=0.0, max_tokens=50), handoffs=[creative])\n"
    ),
    "adk": (
        "from google.adk.agents import Agent\n"
        "from google.genai.types import GenerateContentConfig\n"
        "creative = Agent(name='creative', model='gemini-2.5-flash', instruction='Write poems.',\n"
        "                 description='Writes poems.', generate_content_config=GenerateContentConfig(temperature=1.5))\n"
        "desk = Agent(name='desk', model='gemini-2.5-flash', instruction='Route.', sub_agents=[creative])\n"
    ),
}


@pytest.mark.parametrize("sdk", ["openai", "adk"])
def test_an_imported_sub_agents_settings_reach_its_requests(emu, tmp_path, sdk):
    module = f"subagent_settings_{sdk}"
    (tmp_path / f"{module}.py").write_text(NATIVE[sdk], encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = import_cli(f"{tmp_path / module}.py:desk", sdk, out)
    assert code == 0, err
    sys.modules.pop(module, None)
    run = run_spec(out / "agent.yaml", sdk, "poem please", emu, tmp_path)
    assert run.result.status == "completed", run.result.error
    root = (0.0, 50) if sdk == "openai" else (None, None)  # the ADK root sets nothing
    assert settings_by_agent(emu.requests()) == {"desk": root, "creative": (1.5, None)}


# --- where the runtime cannot express it --------------------------------------------------------------


def test_claude_refuses_a_subagent_setting_it_cannot_apply(tmp_path):
    """Claude Code has no temperature and one output limit for the whole process: a subagent's own forced
    temperature, or a limit other than the root's, is reported, never dropped in silence."""
    spec = bundle(
        tmp_path / "temp", "agent_as_tool", sub_models={"max_tokens": 50, "force_shared_settings": True}
    )
    root = yaml.safe_load(spec.read_text(encoding="utf-8"))
    root["models"] = {"claude": "claude-sonnet-4-6", "max_tokens": 50, "force_shared_settings": True}
    spec.write_text(yaml.safe_dump(root), encoding="utf-8")
    code, out, err = run_cli("validate", str(spec), "--provider", "claude")
    assert code == 0, out + err  # the same limit as the root's: the CLI applies it to both

    for sub, words in [
        ({"temperature": 1.5, "force_shared_settings": True}, "temperature"),
        ({"max_tokens": 500, "force_shared_settings": True}, "max_tokens"),
    ]:
        (tmp_path / "temp" / "creative.yaml").write_text(
            yaml.safe_dump(
                {
                    "kind": "agent",
                    "schema_version": 1,
                    "name": "creative",
                    "instructions": SUB_TEXT,
                    "models": sub,
                }
            ),
            encoding="utf-8",
        )
        code, out, err = run_cli("validate", str(spec), "--provider", "claude")
        assert code != 0, out + err
        assert "creative" in out + err and words in out + err


@pytest.mark.slow  # starts the Claude Code CLI
def test_the_exported_claude_program_applies_the_roots_output_limit(emu, tmp_path):
    """Claude Code takes one output limit for the process (CLAUDE_CODE_MAX_OUTPUT_TOKENS): portagent's claude
    adapter sets the root's forced ``max_tokens`` there, and the exported program now does too — it sent
    Claude Code's own default, so the exported agent answered with another limit than the spec's."""
    spec = bundle(
        tmp_path / "spec", "agent_as_tool", sub_models={"max_tokens": 50, "force_shared_settings": True}
    )
    root = yaml.safe_load(spec.read_text(encoding="utf-8"))
    root["models"] = {"claude": "claude-sonnet-4-6", "max_tokens": 50, "force_shared_settings": True}
    spec.write_text(yaml.safe_dump(root), encoding="utf-8")
    module = tmp_path / "desk_claude.py"
    code, _, err = run_cli("export", str(spec), "--to", "claude", "--out", str(module))
    assert code == 0, err
    events = run_exported(module, "claude", "poem tool please", emu, tmp_path)
    assert [e.status for e in events if e.type == "run.completed"] == ["completed"]
    sent = [(json.dumps(r["body"].get("system")), r["body"].get("max_tokens")) for r in emu.requests()]
    assert sent and all(limit == 50 for _, limit in sent), sent  # every request the CLI made
    assert any(ROOT_TEXT in system for system, _ in sent)
