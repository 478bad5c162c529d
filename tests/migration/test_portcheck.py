"""``portagent port-check AGENT --to P``: what the spec needs that P lacks (exit 1), the portability ratio
and the list that makes it up."""

from __future__ import annotations

import json

from _migration_helpers import import_cli, write_spec
from _support import REPO, run_cli

CYCLE = REPO / "tests" / "adapters" / "adk" / "data" / "cycle_a.yaml"


def check(agent, target, *extra):
    return run_cli("port-check", str(agent), "--to", target, *extra)


def test_a_handoff_cycle_is_named_for_adk_and_claude_but_runs_on_openai():
    code, out, _ = check(CYCLE, "adk")
    assert code == 1
    assert "handoff_cycles: the delegation graph has a cycle: ping_agent -> pong_agent -> ping_agent" in out
    code, out, _ = check(CYCLE, "openai")
    assert code == 0 and "ping_agent → openai: portable" in out
    code, out, _ = check(CYCLE, "claude", "--json")
    data = json.loads(out)
    assert code == 1 and data["portable"] is False
    features = {x["feature"] for x in data["lacks"]}
    # claude: no handoffs, no cycles, subagents cannot delegate, and cycle_a.yaml gives no claude model id
    assert {"handoffs", "handoff_cycles", "nested delegation", "model id"} <= features


def test_the_ratio_counts_own_contracts_and_vendor_dependencies(tmp_path):
    """An imported openai-agents desk: its handlers live in a module that imports openai-agents, so each
    tool is also a dependency on that SDK; moving the functions out is what raises the ratio."""
    code, _, stderr = import_cli("native_openai:desk", "openai", tmp_path / "desk")
    assert code == 0, stderr
    code, out, _ = check(tmp_path / "desk" / "agent.yaml", "adk", "--json")
    data = json.loads(out)
    assert code == 0 and data["portable"] is True
    own = [i["what"] for i in data["own_contracts"]]
    assert own == [
        "agent spec shop_desk@1.0.0",
        "agent spec refunds_specialist@1.0.0",
        "tool get_order@1.0.0",
        "tool issue_refund@1.0.0",
        "tool search_faq@1.0.0",
        "policy shop_desk-imported v1",
        "output schema of shop_desk",
        "delegation shop_desk -> refunds_specialist",
    ]
    deps = data["provider_dependencies"]
    assert [d["vendor"] for d in deps] == ["openai-agents"] * 3
    assert all("native_openai imports openai-agents (agents)" in d["detail"] for d in deps)
    assert data["portability_ratio"] == round(8 / 11, 4)
    code, out, _ = check(tmp_path / "desk" / "agent.yaml", "claude")
    assert code == 1 and "handoffs: shop_desk -> refunds_specialist (kind handoff)" in out
    assert "portability ratio: 8/11 = 0.73" in out


def test_a_spec_with_own_handlers_is_fully_portable_to_every_target(tmp_path):
    spec = write_spec(tmp_path, output_schema={"type": "object", "properties": {"a": {"type": "string"}}})
    for target in ("openai", "adk", "claude"):
        code, out, _ = check(spec, target, "--json")
        data = json.loads(out)
        assert code == 0 and data["portable"] and data["portability_ratio"] == 1.0, (target, out)


def test_builtin_tools_and_vendor_settings_are_dependencies_and_lacks(tmp_path):
    spec = write_spec(
        tmp_path,
        builtin_tools=["Read"],
        models={
            "openai": "gpt-4.1-mini",
            "claude": "claude-sonnet-4-6",
            "adk": "gemini-2.5-flash",
            "openai_api": "chat_completions",
        },
    )
    data = json.loads(check(spec, "claude", "--json")[1])
    assert data["portable"] and [d["vendor"] for d in data["provider_dependencies"]] == ["claude", "openai"]
    code, out, _ = check(spec, "openai")
    assert code == 1 and "builtin_tools: granted: Read (on shop_desk)" in out


def test_gemini_schema_limits_and_a_shared_handoff_target_for_adk(tmp_path):
    tools = tmp_path / "tools.yaml"
    tools.write_text(
        """kind: tools
schema_version: 1
tools:
  - name: pick
    description: Pick one.
    effect: read
    input_schema: {type: object, properties: {v: {const: 3}}, required: [v]}
    handler: x:y
""",
        encoding="utf-8",
    )
    write_spec(tmp_path, "leaf", tools=())
    write_spec(tmp_path, "mid", tools=(), delegation=[{"agent": "leaf.yaml", "kind": "handoff"}])
    spec = write_spec(
        tmp_path,
        "top",
        tools=(),
        tool_files=[str(tools)],
        delegation=[{"agent": "mid.yaml", "kind": "handoff"}, {"agent": "leaf.yaml", "kind": "handoff"}],
    )
    import yaml

    doc = yaml.safe_load(spec.read_text(encoding="utf-8"))
    doc["tools"] = ["pick"]
    spec.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, out, _ = check(spec, "adk")
    assert code == 1
    assert "Gemini schema limits: top: tool pick: input_schema.properties.v.const" in out
    assert "a handoff tree: 'leaf' is a handoff target of both 'top' and 'mid'" in out
    assert check(spec, "openai")[0] == 0


def test_usage_errors(tmp_path):
    code, _, err = check(tmp_path / "missing.yaml", "adk")
    assert code == 2 and "agent spec not found" in err
    code, _, err = run_cli("port-check", str(CYCLE), "--to", "nowhere")
    assert code == 2


def test_a_claude_code_alias_is_not_a_model_id_for_the_messages_api(tmp_path, monkeypatch):
    """A Claude subagent's ``model="opus"`` is imported into models.claude, which provider anthropic falls
    back to: port-check said "portable" and the run sent ``"model": "opus"``, which the Messages API does
    not know. The alias is named, with the field that fixes it; a model id still falls back."""
    (tmp_path / "cl_alias.py").write_text(
        "from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions\n"
        "opts = ClaudeAgentOptions(system_prompt='Coordinate.', model='claude-sonnet-4-6',\n"
        "    agents={'researcher': AgentDefinition(description='Researches', prompt='Research things.',"
        " model='opus')})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("import", "cl_alias:opts", "--from", "claude", "--out", str(out))
    assert code == 0, stdout + stderr
    report = (out / "import-report.md").read_text()
    assert "a Claude Code alias" in report and "set models.anthropic" in report
    code, text, _ = check(out / "agent.yaml", "anthropic")
    assert code == 1, text
    assert "'researcher' would run on anthropic as 'opus'" in text and "set models.anthropic" in text
    code, text, _ = check(out / "agent.yaml", "claude")
    assert code == 0 and "portable" in text  # Claude Code resolves its own aliases
    sub = next(p for p in out.glob("*.yaml") if "researcher" in p.read_text() and p.name != "agent.yaml")
    sub.write_text(sub.read_text().replace("claude: opus", "claude: claude-opus-4-1"))
    code, text, _ = check(out / "agent.yaml", "anthropic")
    assert code == 0 and "portable" in text, text
