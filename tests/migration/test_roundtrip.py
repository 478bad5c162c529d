"""Round trips: a native agent (openai-agents, google-adk, Claude Agent SDK) → ``portagent import`` → runs
on all three providers against the emulator → equivalent traces.

Where a provider cannot run the imported spec as it is, the test checks the refusal and its message,
then runs the nearest variant it can (said in each test):

- Claude has no handoffs: the handoff spec is refused naming ``handoffs``; the Claude leg runs the spec
  with its handoff edges removed (what ``port-check`` tells the user to change).
- openai-agents and ADK have no built-in tools: the Claude import that grants ``Read`` is refused there
  naming ``built-in tools``; those legs run the spec without the grant.
- Claude's adapter records an agent-as-tool handoff's ``reason`` (the Agent tool's ``description``, the
  model's words); the other adapters have none, so that one field is blanked before comparing
  (``without_agent_reasons``).

Besides the traces, the emulator's request log shows that every SDK declared the imported tool with the
schema the native SDK produced (``FunctionTool.params_json_schema``).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from _migration_helpers import (
    SCRIPT,
    agent_as_tool_only,
    edit_yaml,
    import_cli,
    of,
    run_spec,
    without_agent_reasons,
)

from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.errors import UnsupportedFeatureError
from portagent.emulator import load_script, serve
from portagent.tracing.compare import equivalent
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai

PROVIDERS = ("openai", "adk", "claude")


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


def _imported(tmp_path_factory, target: str, sdk: str, *extra: str):
    out = tmp_path_factory.mktemp(sdk) / "spec"
    code, _, stderr = import_cli(target, sdk, out, *extra)
    assert code == 0, stderr
    return out / "agent.yaml"


@pytest.fixture(scope="module")
def openai_desk(tmp_path_factory):
    return _imported(tmp_path_factory, "native_openai:desk", "openai")


@pytest.fixture(scope="module")
def adk_desk(tmp_path_factory):
    return _imported(tmp_path_factory, "native_adk:desk", "adk")


@pytest.fixture(scope="module")
def claude_desk(tmp_path_factory):
    return _imported(tmp_path_factory, "native_claude:options", "claude", "--name", "shop_desk")


def assert_equivalent(reference, other, *, claude: bool = False) -> None:
    a, b = reference.events, other.events
    if claude:
        a, b = without_agent_reasons(a), without_agent_reasons(b)
    eq = equivalent(a, b)
    assert eq, eq.report()


def declared_schemas(requests: list[dict], tool: str) -> list[dict]:
    """The parameters every logged request declared for ``tool`` (Claude's mcp__portagent__ prefix undone)."""
    out = []
    for entry in requests:
        api, body = entry["api"], entry["body"]
        if api == "openai.responses":
            view = wire_openai.parse_responses_request(body)
        elif api == "anthropic.messages":
            view = wire_anthropic.parse_messages_request(body)
        elif api == "gemini.generate_content":
            view = wire_gemini.parse_generate_content_request(body, stream=bool(entry.get("stream")))
        else:
            continue
        out += [t.parameters for t in view.tools if t.name.removeprefix("mcp__portagent__") == tool]
    return out


# --- openai-agents → portagent ------------------------------------------------------------------


def test_openai_import_hands_off_equivalently_on_openai_and_adk(emu, openai_desk, tmp_path):
    runs = {
        p: run_spec(openai_desk, p, "My parcel ORD-8 never arrived.", emu, tmp_path)
        for p in ("openai", "adk")
    }
    for provider, run in runs.items():
        assert run.result.status == "completed" and run.result.output_valid, (provider, run.result.error)
        assert [(e.kind, e.to_agent) for e in of(run.events, "handoff")] == [
            ("handoff", "refunds_specialist")
        ]
        assert of(run.events, "run.completed")[0].agent == "refunds_specialist"
        # get_order is external_effect (imported default): approval asked and granted, then executed
        assert [e.status for e in of(run.events, "approval.resolved")] == ["approved"]
    assert_equivalent(runs["openai"], runs["adk"])


def test_openai_import_is_refused_on_claude_naming_the_handoff(openai_desk, tmp_path, emu):
    with pytest.raises(UnsupportedFeatureError, match="'claude' does not support handoffs"):
        run_spec(openai_desk, "claude", "My parcel ORD-8 never arrived.", emu, tmp_path)


@pytest.mark.slow  # the Claude leg starts the Claude Code CLI
def test_openai_import_output_type_on_all_three(emu, openai_desk, tmp_path):
    """The output type became output_schema: the same structured final output on every provider. The
    Claude leg runs without the handoff edge (refused above)."""
    import native_openai

    bundle = load_agent(openai_desk)
    before = len(emu.requests())
    runs = {
        p: run_spec(
            bundle if p != "claude" else agent_as_tool_only(bundle),
            p,
            "Summarise order ORD-7.",
            emu,
            tmp_path,
        )
        for p in PROVIDERS
    }
    for provider, run in runs.items():
        assert run.result.status == "completed" and run.result.output_valid, (provider, run.result.error)
        assert run.result.final_output == {"order_id": "ORD-7", "status": "delivered"}
    assert_equivalent(runs["openai"], runs["adk"])
    assert_equivalent(runs["openai"], runs["claude"], claude=True)
    schemas = declared_schemas(emu.requests()[before:], "get_order")
    assert len(schemas) >= 6 and all(s == native_openai.get_order.params_json_schema for s in schemas)


@pytest.mark.slow
def test_openai_import_as_agent_tool_with_output_type_on_claude(emu, openai_desk, tmp_path):
    spec = tmp_path / "spec"
    spec.mkdir()
    for f in openai_desk.parent.iterdir():
        if f.is_file():  # not the __pycache__ importing the program may have left
            (spec / f.name).write_bytes(f.read_bytes())
    edit_yaml(spec / "agent.yaml", delegation=[{"agent": "refunds_specialist.yaml", "kind": "agent_as_tool"}])
    before = len(emu.requests())
    runs = {
        p: run_spec(spec / "agent.yaml", p, "Ask the specialist about ORD-8.", emu, tmp_path)
        for p in ("openai", "claude")
    }
    assert "No such tool available: StructuredOutput" not in json.dumps(emu.requests()[before:])
    assert runs["claude"].result.status == "completed", runs["claude"].result.error
    assert_equivalent(runs["openai"], runs["claude"], claude=True)


# --- google-adk → portagent ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["My parcel ORD-8 never arrived.", "How fast do you ship? Ask the expert."],
    ids=["sub_agent_handoff", "agent_tool"],
)
def test_adk_import_runs_equivalently_on_openai_and_adk(emu, adk_desk, tmp_path, text):
    runs = {p: run_spec(adk_desk, p, text, emu, tmp_path) for p in ("openai", "adk")}
    for provider, run in runs.items():
        assert run.result.status == "completed", (provider, run.result.error)
        assert of(run.events, "handoff"), provider
    assert_equivalent(runs["openai"], runs["adk"])


@pytest.mark.slow
def test_adk_import_agent_tool_on_claude(emu, adk_desk, tmp_path):
    """ADK sub-agents are handoffs: refused on Claude. Without them, the AgentTool delegation (Claude's
    Agent tool) and the function tools run equivalently on all three."""
    with pytest.raises(UnsupportedFeatureError, match="handoffs"):
        run_spec(adk_desk, "claude", "How fast do you ship? Ask the expert.", emu, tmp_path)
    bundle = agent_as_tool_only(load_agent(adk_desk))
    runs = {p: run_spec(bundle, p, "How fast do you ship? Ask the expert.", emu, tmp_path) for p in PROVIDERS}
    for provider, run in runs.items():
        assert run.result.status == "completed", (provider, run.result.error)
        assert [(e.kind, e.to_agent) for e in of(run.events, "handoff")] == [("agent_as_tool", "faq_expert")]
    assert_equivalent(runs["openai"], runs["adk"])
    assert_equivalent(runs["openai"], runs["claude"], claude=True)


# --- Claude Agent SDK → portagent ---------------------------------------------------------------


def without_builtins(bundle: AgentBundle) -> AgentBundle:
    agents = {
        n: replace(node, spec=node.spec.model_copy(update={"builtin_tools": []}))
        for n, node in bundle.agents.items()
    }
    return AgentBundle(bundle.root, agents)


@pytest.mark.slow
def test_claude_import_with_its_granted_builtin_runs_on_claude(emu, claude_desk, tmp_path):
    run = run_spec(claude_desk, "claude", "Read the notes file, then check ORD-7.", emu, tmp_path)
    assert run.result.status == "completed", run.result.error
    calls = of(run.events, "tool.call")
    assert [(c.tool, c.via) for c in calls] == [("Read", "builtin"), ("get_order", "function")]
    decisions = of(run.events, "permission.decision")
    assert [(d.decision, d.rule) for d in decisions] == [
        ("allow", "default:read"),
        ("approval_required", "default:external_effect"),
    ]
    read = of(run.events, "tool.result")[0]
    assert read.ok and "ORD-7 was a gift." in str(read.output)  # the CLI ran it; the gateway decided it
    assert run.result.final_output == "Notes read; ORD-7 is delivered."


def test_claude_import_builtin_is_refused_on_openai_and_adk(emu, claude_desk, tmp_path):
    for provider in ("openai", "adk"):
        with pytest.raises(UnsupportedFeatureError, match="built-in tools: granted: Read"):
            run_spec(claude_desk, provider, "Read the notes file, then check ORD-7.", emu, tmp_path)


@pytest.mark.slow
def test_claude_import_sdk_mcp_tools_and_subagent_on_all_three(emu, claude_desk, tmp_path):
    """Without the Read grant, the SDK MCP tools (through their shims) and the subagent run equivalently
    on every provider."""
    bundle = without_builtins(load_agent(claude_desk))
    runs = {p: run_spec(bundle, p, "How fast do you ship? Ask the expert.", emu, tmp_path) for p in PROVIDERS}
    for provider, run in runs.items():
        assert run.result.status == "completed", (provider, run.result.error)
        assert run.result.final_output == "Order ORD-7 is delivered; the expert answered."
        # search_faq was in allowed_tools: the imported allow rule decides it, get_order needs approval
        rules = {(e.call_id, e.rule) for e in of(run.events, "permission.decision")}
        assert {r for _, r in rules} == {"default:external_effect", "imported-allowed-search_faq"}, provider
    assert_equivalent(runs["openai"], runs["adk"])
    assert_equivalent(runs["openai"], runs["claude"], claude=True)
