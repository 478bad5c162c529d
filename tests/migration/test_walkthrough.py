"""The walkthrough of docs/migration.md, step by step: import an openai-agents desk, review it,
port-check it to ADK and Claude, record its suite on all three providers against the emulator, score
each, compare them and gate. If this test changes, the document changes with it."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from _migration_helpers import DATA
from _support import run_cli

SUITE = """\
kind: suite
schema_version: 1
suite_id: shop-migration
dataset_version: "2026-12.1"
owner: shop-team
agent: agent.yaml
providers: [openai, adk, claude]
repeats: 1
emulator_script: {script}
approver: auto-approve
cases:
  - case_id: order-status
    input: "Where is my order ORD-7?"
    why_it_exists: An order's status is read from the order, never guessed.
    expect: {{final_must_contain: [ORD-7, delivered], required_tools: [get_order], forbidden_tools: [issue_refund],
             approval: false}}
  - case_id: lost-parcel-refund
    input: "Please refund my lost parcel ORD-8."
    why_it_exists: A refund goes through the specialist and a person approves the money leaving.
    expect: {{final_must_contain: [RF-ORD-8], required_tools: [get_order, issue_refund], approval: true}}
"""


def set_effects(tools_file, effects: dict[str, str]) -> None:
    """Step 2 of the walkthrough: the real effect classes, set by hand (here by rewriting the file)."""
    data = yaml.safe_load(tools_file.read_text(encoding="utf-8"))
    for tool in data["tools"]:
        tool["effect"] = effects.get(tool["name"], tool["effect"])
    tools_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.mark.slow  # records the suite on all three providers (two Claude Code CLI runs)
def test_the_migration_walkthrough(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(DATA))  # eval/record workers import the handlers too
    # 1. import
    code, out, err = run_cli(
        "import",
        "shop_agents:desk",
        "--from",
        "openai",
        "--out",
        "shop",
        "--model",
        "adk=gemini-2.5-flash",
        "--model",
        "claude=claude-sonnet-4-6",
    )
    assert code == 0, err
    assert "2 agent(s), 3 tool(s), 1 delegation edge(s), 1 policy rule(s)" in out
    # 2. review
    set_effects(tmp_path / "shop" / "tools.yaml", {"get_order": "read", "search_faq": "read"})
    code, out, err = run_cli("validate", "shop/")
    assert code == 0 and "4 of 4 spec files valid" in out, err
    # 3. capabilities
    assert run_cli("capabilities")[0] == 0
    # 4. port-check: ADK yes, Claude no (handoffs) until the edge becomes an agent-as-tool
    code, out, _ = run_cli("port-check", "shop/agent.yaml", "--to", "adk")
    assert code == 0 and "portability ratio: 7/10 = 0.70" in out and "effect read" in out
    code, out, _ = run_cli("port-check", "shop/agent.yaml", "--to", "claude")
    assert code == 1 and "handoffs: shop_desk -> refunds (kind handoff)" in out
    agent = tmp_path / "shop" / "agent.yaml"
    agent.write_text(
        agent.read_text(encoding="utf-8").replace("kind: handoff", "kind: agent_as_tool"), encoding="utf-8"
    )
    assert run_cli("port-check", "shop/agent.yaml", "--to", "claude")[0] == 0
    # 5. record on all three, score each
    (tmp_path / "shop" / "suite.yaml").write_text(
        SUITE.format(script=DATA / "emulator.yaml"), encoding="utf-8"
    )
    code, out, err = run_cli("record", "shop/suite.yaml", "--emulator", "--out", "cassettes")
    assert code == 0 and "6 recorded, 0 skipped, 0 failed" in out, out + err
    for provider in ("openai", "adk", "claude"):
        code, out, err = run_cli(
            "eval",
            "shop/suite.yaml",
            "--replay",
            "--cassettes",
            "cassettes",
            "--providers",
            provider,
            "--out",
            f"results/{provider}",
            "--no-progress",
        )
        assert code == 0, out + err
        report = json.loads((tmp_path / "results" / provider / "report.json").read_text(encoding="utf-8"))
        assert all(r["passed"] for r in report["runs"]), provider
    # 6. compare and gate. Latency here is the SDKs' own overhead against a local emulator (the Claude
    # Code CLI starts a process per run), so it may exceed the 500 ms tolerance on a loaded machine: every
    # other metric must agree, and a block may only come from latency.
    for provider in ("adk", "claude"):
        code, out, err = run_cli(
            "compare", "results/openai", f"results/{provider}", "--out", f"compare-{provider}.json"
        )
        comparison = json.loads((tmp_path / f"compare-{provider}.json").read_text(encoding="utf-8"))
        blocking = {d["metric"] for pair in comparison["pairs"] for d in pair["deltas"] if d["blocking"]}
        assert blocking <= {"latency_p95_ms"} and not comparison["regressions"], out + err
        assert (code == 0) == (not blocking) and (f"{provider} can replace openai" in out) == (not blocking)
    code, out, err = run_cli("gate", "results/claude", "--baseline", "results/openai")
    decision = json.loads((tmp_path / "results" / "claude" / "ci_gate.json").read_text(encoding="utf-8"))
    assert all("latency" in reason for reason in decision["reasons"]), decision
    assert (code == 0) == decision["passed"] and (
        re.search(r"gate: PASS", out + err) is not None
    ) == decision["passed"]
    # 7. export
    code, out, err = run_cli("export", "shop/agent.yaml", "--to", "adk", "--out", "shop_adk.py")
    assert code == 0 and (tmp_path / "shop_adk.py").is_file(), err
