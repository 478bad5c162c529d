"""Cross-provider equivalence: the point of portagent.

The same AgentSpec and the same emulator script run on every provider in ``PROVIDERS``. Two things
must hold for each scenario:

1. the normalized traces are ``equivalent()`` (tool sequence, arguments, results, permission
   decisions, approvals, route, final output, status; volatile fields removed);
2. the emulator's request logs, parsed with ``portagent.wire``, show the same thing on the wire:
   the same tool names and schemas declared, each agent's instructions sent, the same user texts,
   and the same tool results sent back to the model.

The check is not circular: the last tests change the spec (policy, budget, a tool description, an agent
tool's description) for one side only, against every other provider, and show that both checks then
fail, naming the difference.

Adding a provider: append it to ``PROVIDERS``. Scenarios list the capability flags they need; a
provider whose profile lacks one is skipped for that scenario, and handoff edges are removed from the
spec (for every provider) in scenarios that do not need them, so ``claude`` (no handoffs) runs the rest.

Reading Claude Code's requests (``wire_summary``; what the CLI adds is not portagent's, what portagent
controls is compared as strictly as for the others):

- ToolSpecs are declared as ``mcp__portagent__<tool>`` (``portable_name``), with the same schema byte for
  byte; the instructions are one block of a longer system prompt (found inside it, as for every provider);
- tool results are ``tool_result`` blocks (text blocks, or a string when ``is_error``) to which the CLI
  appends ``<system-reminder>`` budget notes; the parser removes those, the JSON observation must be equal;
- the agent-as-tool is the built-in ``Agent``/``Task`` tool, not a tool named after the agent: its calls
  count under their ``subagent_type``, the agent's description is read from the CLI's "Available agent
  types" list, the Agent tool's ``prompt`` is the agent tool's ``input``, and the report comes back inside
  the CLI's "[Subagent hand-back]" frame, which is removed before comparing;
- besides the spec's tools, only vendor mechanisms may be declared (``VENDOR_TOOLS``: ``StructuredOutput``,
  ADK's ``set_model_response``; handoff tools; the Agent tool only for an agent that delegates).

The emulator script has Claude turns where Claude must act differently (docs/emulator.md ``providers``):
the ``faq_expert`` delegation is a handoff-style turn (rendered as the Agent tool) and a structured answer
is a ``StructuredOutput`` call. Documented differences undone in the trace comparison: ``comparable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "adk" / "data"  # the shared scenario agents and script
sys.path.insert(0, str(DATA))

from _support import parse_request  # noqa: E402

from portagent.adapters.port import Endpoint, RunOptions  # noqa: E402
from portagent.contracts.bundle import AgentBundle, load_agent  # noqa: E402
from portagent.contracts.capabilities import PROFILES  # noqa: E402
from portagent.contracts.policy import PermissionPolicy  # noqa: E402
from portagent.contracts.run import RunRequest  # noqa: E402
from portagent.core.clock import FixedClock, IdFactory  # noqa: E402
from portagent.runtime.runner import RunConfig, arun_full  # noqa: E402
from portagent.tracing.compare import equivalent  # noqa: E402

PROVIDERS: list[str] = ["openai", "adk", "claude", "anthropic", "langgraph"]
"""Providers compared; the first is the reference."""

DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
    "anthropic": "sk-ant-portagent-dummy",
    "langgraph": "sk-portagent-dummy",
}
EDIT = {
    "type": "scripted",
    "decisions": [
        {"tool": "issue_refund", "decision": "edit", "args": {"order_id": "ORD-7", "amount_eur": 20}}
    ],
}


@dataclass(frozen=True)
class Scenario:
    id: str
    text: str | tuple[str, ...]
    expect: tuple[str, str]
    """(status, stop_reason) every provider must reach: two identical failures are not a pass."""
    agent: str = "desk"
    approver: Any = "auto-deny"
    budget: dict[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    """Capability flags the scenario needs."""


DONE = ("completed", "final_output")
SCENARIOS = [
    Scenario("two_tools", "Where is order ORD-7 and how fast do you ship?", DONE),
    Scenario("parallel_tools", "Compare orders ORD-7 and ORD-8.", DONE),
    Scenario("denied_tool", "Close my account C-100 now.", DONE),
    Scenario("approval_approve", "Refund 30 EUR for ORD-7.", DONE, approver="auto-approve"),
    Scenario("approval_reject", "Refund 30 EUR for ORD-7.", DONE, approver="auto-deny"),
    Scenario("approval_edit", "Refund 30 EUR for ORD-7.", DONE, approver=EDIT),
    Scenario(
        "approval_defer",
        "Refund 30 EUR for ORD-7.",
        ("waiting_approval", "approval_pending"),
        approver="defer",
    ),
    Scenario("budget_max_tool_calls", "Keep searching the FAQ.", ("budget_exhausted", "max_tool_calls")),
    Scenario(
        "budget_max_turns",
        "Keep searching the FAQ.",
        ("budget_exhausted", "max_turns"),
        budget={"max_turns": 3, "max_tool_calls": 20},
    ),
    Scenario("schema_invalid_arguments", "Look up order 7.", DONE),
    Scenario("handoff", "My parcel ORD-8 never arrived.", DONE, needs=("handoffs",)),
    Scenario("agent_as_tool", "Can I get my money back quickly?", DONE, needs=("agents_as_tools",)),
    Scenario(
        "structured_output",
        "Summarise ORD-7 as JSON.",
        DONE,
        agent="structured",
        needs=("structured_output",),
    ),
    Scenario(
        "multi_turn", ("Hi, I have a question about ORD-7.", "Has it arrived?"), DONE, needs=("sessions",)
    ),
]


# --- running ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "emulator.yaml")) as running:
        yield running


@contextlib.contextmanager
def _home(path: Path):
    """A state folder of its own per run: approval and effect ids are seeded, so two providers'
    runs would otherwise collide in one store."""
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PORTAGENT_HOME", None)
        else:
            os.environ["PORTAGENT_HOME"] = old


@dataclass
class ProviderRun:
    events: list[Any]
    requests: list[dict[str, Any]]
    result: Any


def load(scenario: Scenario) -> AgentBundle:
    """The scenario's spec, the same for every provider. Handoff edges are kept only for scenarios that
    need them, so a provider without handoffs (claude) still runs every other scenario."""
    b = load_agent(DATA / f"{scenario.agent}.yaml")
    if "handoffs" not in scenario.needs:
        b = without_handoffs(b)
    return with_budget(b, **scenario.budget) if scenario.budget else b


def without_handoffs(b: AgentBundle) -> AgentBundle:
    nodes = {
        n: replace(node, edges=[e for e in node.edges if e.kind != "handoff"]) for n, node in b.agents.items()
    }
    reachable, todo = set(), [b.root]
    while todo:
        name = todo.pop()
        if name not in reachable:
            reachable.add(name)
            todo.extend(e.target for e in nodes[name].edges)
    return AgentBundle(b.root, {n: node for n, node in nodes.items() if n in reachable})


def with_budget(b: AgentBundle, **budget: Any) -> AgentBundle:
    node = b.agents[b.root]
    spec = node.spec.model_copy(update={"budget": node.spec.budget.model_copy(update=budget)})
    return AgentBundle(b.root, {**b.agents, b.root: replace(node, spec=spec)})


def execute(
    emu: Any,
    tmp: Path,
    provider: str,
    scenario: Scenario,
    *,
    streaming: bool = False,
    agent: AgentBundle | None = None,
    openai_api: str | None = None,
) -> ProviderRun:
    """One run with a fixed clock, seeded ids and a fresh state folder (deterministic ids)."""
    emu.reset()
    before = len(emu.requests())
    text = list(scenario.text) if isinstance(scenario.text, tuple) else scenario.text
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        approver=scenario.approver,
        clock=FixedClock(),
        ids=IdFactory("equivalence"),
        options=RunOptions(streaming=streaming, workdir=tmp / "work", openai_api=openai_api),
    )
    home = tmp / f"home-{provider}-{'sse' if streaming else 'unary'}"
    with _home(home):
        out = asyncio.run(
            arun_full(agent or load(scenario), RunRequest(input=text, provider=provider), config)
        )
    return ProviderRun(out.events, emu.requests()[before:], out.result)


@pytest.fixture(scope="module")
def plain(emu, tmp_path_factory):
    """A scenario's run of its own spec on one provider, made once per module: the trace checks and the wire
    checks read the same unary runs (and the controls their reference runs), which are deterministic (fixed
    clock, seeded ids, a fresh state folder each); each is made on first use, in a folder of its own."""
    made: dict[tuple[str, str, bool], ProviderRun] = {}

    def run(provider: str, scenario: Scenario, *, streaming: bool = False) -> ProviderRun:
        # Claude Code always streams: the claude adapter has no unary mode (``RunOptions.streaming`` is not
        # read; test_claude_code_has_one_mode), so its one run per scenario is compared in both modes.
        key = (provider, scenario.id, streaming and provider not in ONE_MODE)
        if key not in made:
            tmp = tmp_path_factory.mktemp(f"{scenario.id}-{provider}")
            made[key] = execute(emu, tmp, provider, scenario, streaming=streaming)
        return made[key]

    return run


ONE_MODE = {"claude"}
"""Providers whose adapter runs the same way whatever ``RunOptions.streaming`` says."""


def test_claude_code_has_one_mode():
    """The claude adapter never reads ``RunOptions.streaming`` (the CLI streams its replies): a unary and a
    streamed claude run are one run, made once by ``plain``. When an adapter of ONE_MODE gains a mode, this
    fails, and its streamed runs must be made again."""
    import portagent.adapters.claude as claude_adapter

    folder = Path(claude_adapter.__file__).parent
    for provider in ONE_MODE:
        assert provider == "claude", provider
        readers = [p.name for p in folder.glob("*.py") if re.search(r"\.streaming\b", p.read_text())]
        assert readers == [], readers


def supported(provider: str, scenario: Scenario) -> bool:
    return all(getattr(PROFILES[provider], flag) for flag in scenario.needs)


def comparable(provider: str, events: list[Any]) -> list[Any]:
    """A provider's trace with its documented differences (docs/adapters/<provider>.md) undone; each one
    is named here with its reason. Nothing else is touched.

    - claude: an ``agent_as_tool`` handoff's ``reason`` is the Agent tool call's ``description`` (the
      model's short summary of the task); openai-agents and ADK call the agent as a plain tool, which
      has no such field, so their ``reason`` is empty.
    """
    if provider != "claude":
        return events
    out: list[Any] = []
    for e in events:
        d = e if isinstance(e, dict) else e.model_dump(mode="json")
        if d.get("type") == "handoff" and d.get("kind") == "agent_as_tool":
            e = {**d, "reason": ""}
        out.append(e)
    return out


# --- reading the wire ---------------------------------------------------------------------------------


CLAUDE_TOOL_PREFIX = "mcp__portagent__"
"""Claude Code's name for a ToolSpec served by the adapter's in-process MCP server ``portagent``."""

CLAUDE_AGENT_TOOLS = ("Agent", "Task")
"""Claude Code's built-in subagent tool (``Task`` was renamed ``Agent``): Claude's agent-as-tool."""

VENDOR_TOOLS = {
    "anthropic.messages": {"StructuredOutput"},  # the CLI's output channel for an output_schema
    "gemini.generate_content": {"set_model_response"},  # ADK's output channel with tools + output_schema
}
"""Tools a vendor declares by itself as a mechanism (not a portable tool); every other declared tool must be
a ToolSpec, an agent tool or a handoff (transfer) tool of the spec."""

_AGENT_LISTING = re.compile(r"Available agent types for the Agent tool:\n(?P<lines>(?:- .*\n?)+)")
_AGENT_LINE = re.compile(r"^- (?P<name>[^:\n]+): (?P<description>.*) \(Tools: (?P<tools>[^()\n]*)\)$")
_HAND_BACK = re.compile(
    r"\A\s*(?:<tools-used-before-summary>.*?</tools-used-before-summary>\s*)?"
    r"\[Subagent hand-back\][^\n]*\n(?P<report>.*?)\nagentId: \S+\n<usage>.*?</usage>\s*\Z",
    re.DOTALL,
)


def is_claude_code(entry: dict[str, Any]) -> bool:
    """Claude Code's requests (``x-app: cli``, SDK_NOTES §4.5), not another Anthropic Messages client's
    (the ``anthropic`` adapter's tool runner declares agent tools as plain tools, like openai and ADK)."""
    return entry["api"] == "anthropic.messages" and (entry.get("headers") or {}).get("x-app") == "cli"


def portable_name(name: str | None) -> str:
    """Undo vendor name mangling: Claude sees a ToolSpec as ``mcp__portagent__<tool>`` (the adapter's
    in-process MCP server is named ``portagent``; any other server name stays as it is, and fails)."""
    return (name or "").removeprefix(CLAUDE_TOOL_PREFIX)


def is_transfer(name: str) -> bool:
    """Handoff tools are vendor mechanics (``transfer_to_<agent>``, ADK's ``transfer_to_agent``)."""
    return name.startswith("transfer_to_")


def claude_agent_listing(body: dict[str, Any]) -> dict[str, str]:
    """Claude Code does not describe subagents in the Agent tool's declaration: it lists them (name,
    description, tools) in a ``<system-reminder>`` of the first user message ("Available agent types for
    the Agent tool"). Returns ``{agent: description}`` from that list."""
    out: dict[str, str] = {}
    for msg in body.get("messages") or []:
        content = msg.get("content") if msg.get("role") == "user" else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            found = _AGENT_LISTING.search(block.get("text") or "") if block.get("type") == "text" else None
            for line in found.group("lines").splitlines() if found else []:
                m = _AGENT_LINE.match(line)
                assert m, f"unreadable line in Claude Code's agent list: {line!r}"
                out[m.group("name")] = m.group("description")
        if out:
            break
    return out


def claude_agent_shape(schema: Any) -> Any:
    """The Agent tool's input as an agent tool's: its ``prompt`` is the agent tool's ``input`` (the
    target is chosen by ``subagent_type``, which must be there)."""
    props = (schema or {}).get("properties") or {}
    assert "subagent_type" in props, f"the Agent tool has no subagent_type: {sorted(props)}"
    return {
        "properties": {"input": (props.get("prompt") or {}).get("type")},
        "required": ["input"] if "prompt" in (schema.get("required") or []) else [],
    }


def claude_hand_back(text: Any) -> Any:
    """The subagent's report out of the frame the CLI wraps it in before the parent model reads it
    (``[Subagent hand-back] … The report follows:``, the report indented by two spaces, then ``agentId``
    and ``<usage>``; docs/adapters/claude.md). Anything else is returned unchanged (and will differ)."""
    m = _HAND_BACK.match(text) if isinstance(text, str) else None
    if not m:
        return text
    return "\n".join(line.removeprefix("  ") for line in m.group("report").splitlines()).strip()


def value_of(item: Any, api: str) -> Any:
    import json

    if api == "anthropic.messages":
        # tool_result content is a string or text blocks; the parser joined them and removed the CLI's
        # <system-reminder> additions (token budget), keeping exactly what the tool returned.
        raw = item.text
    else:
        raw = item.output
        if isinstance(raw, dict):
            if len(raw) == 1 and "result" in raw:  # ADK wraps a non-dict return value
                raw = raw["result"]
            if not isinstance(raw, str):
                return raw
    text = raw if isinstance(raw, str) else item.text
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def shape(schema: Any) -> Any:
    """An agent-as-tool input schema without annotations (each SDK titles it its own way)."""
    if not isinstance(schema, dict):
        return schema
    return {
        "properties": {k: v.get("type") for k, v in (schema.get("properties") or {}).items()},
        "required": sorted(schema.get("required") or []),
    }


def wire_summary(b: AgentBundle, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """Per agent (recognised by its instructions in the system text): first user text, portable tools
    declared (ToolSpec tools with their exact schema, agent tools by description and shape), and the user
    texts and tool results the model was last sent. Any other declared tool must be a handoff tool or
    one of the vendor's own mechanisms (``VENDOR_TOOLS``, Claude's Agent tool)."""
    agents = {n: node for n, node in b.agents.items()}
    agent_tools = {e.target for node in agents.values() for e in node.edges if e.kind == "agent_as_tool"}
    out: dict[str, Any] = {}
    for entry in requests:
        api = entry["api"]
        claude_code = is_claude_code(entry)
        view = parse_request(entry)
        owners = [n for n, node in agents.items() if node.spec.instructions.strip() in view.system]
        assert len(owners) == 1, f"cannot tell which agent sent: {view.system[:200]!r}"
        name = owners[0]
        node = agents[name]
        delegates = {e.target for e in node.edges if e.kind == "agent_as_tool"}
        declared: dict[str, Any] = {}
        for tool in view.tools:
            tname = portable_name(tool.name)
            if tname in node.tools:
                assert tool.parameters == node.tools[tname].input_schema, (
                    f"{tname}: schema changed on the wire"
                )
                declared[tname] = (tool.description, tool.parameters)
            elif tname in agent_tools:
                declared[tname] = (tool.description, shape(tool.parameters))
            elif claude_code and tname in CLAUDE_AGENT_TOOLS:
                # Claude's agent-as-tool: one built-in tool for every subagent, listed elsewhere. The list
                # also names the calling agent itself (the main thread runs as the root's definition,
                # ``--agent``) and Claude Code's own agent types; calls to those are denied in PreToolUse.
                assert delegates, f"{name}: {tool.name!r} declared, but {name} delegates to nobody"
                listed = claude_agent_listing(entry["body"])
                for target, description in listed.items():
                    if target in agents and target != name:
                        declared[target] = (description, claude_agent_shape(tool.parameters))
            else:
                assert is_transfer(tname) or tname in VENDOR_TOOLS.get(api, ()), (
                    f"{name}: {tool.name!r} declared on the wire, but the spec has no such tool"
                )
        assert not claude_code or not delegates or any(t.name in CLAUDE_AGENT_TOOLS for t in view.tools), (
            f"{name}: no Agent tool, but it delegates"
        )
        names_by_call: dict[str, str] = {}
        for i in view.items:
            if i.kind == "tool_call" and i.call_id:
                cname = portable_name(i.name)
                if claude_code and cname in CLAUDE_AGENT_TOOLS and isinstance(i.arguments, dict):
                    cname = str(i.arguments.get("subagent_type"))  # the agent tool that was called
                names_by_call[i.call_id] = cname
        results = []
        for item in view.tool_results():
            rname = portable_name(item.name) if item.name else names_by_call.get(item.call_id, "?")
            if is_transfer(rname):
                continue
            value = value_of(item, api)
            if claude_code and rname in agent_tools:
                value = claude_hand_back(value)
            results.append((rname, value))
        slot = out.setdefault(name, {"first_user": view.first_user_text(), "declared": {}})
        slot["declared"].update(declared)
        # the latest request holds the whole conversation so far
        slot["results"] = results
        slot["user_texts"] = [i.text for i in view.items if i.role == "user" and i.kind == "text"]
    return out


# --- the checks ---------------------------------------------------------------------------------------


def _ids(scenarios: list[Scenario]) -> list[str]:
    return [s.id for s in scenarios]


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streamed"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=_ids(SCENARIOS))
def test_traces_are_equivalent(plain, scenario, streaming):
    reference, *others = PROVIDERS
    ref = plain(reference, scenario, streaming=streaming)
    assert (ref.result.status, ref.result.stop_reason) == scenario.expect, ref.result.error
    compared = 0
    for provider in others:
        if not supported(provider, scenario):
            continue
        other = plain(provider, scenario, streaming=streaming)
        assert (other.result.status, other.result.stop_reason) == scenario.expect, (
            provider,
            other.result.error,
        )
        eq = equivalent(ref.events, comparable(provider, other.events))
        assert eq, f"{reference} vs {provider}:\n{eq.report()}"
        compared += 1
    if not compared:
        pytest.skip(f"no provider besides {reference} supports {scenario.needs}")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_ids(SCENARIOS))
def test_request_logs_declare_and_return_the_same(plain, scenario):
    b = load(scenario)
    reference, *others = PROVIDERS
    ref = wire_summary(b, plain(reference, scenario).requests)
    assert ref, "the reference provider sent nothing"
    for name, slot in ref.items():
        assert set(slot["declared"]) == set(b.agents[name].tools) | {
            e.target for e in b.agents[name].edges if e.kind == "agent_as_tool"
        }, name
    for provider in others:
        if not supported(provider, scenario):
            continue
        other = wire_summary(b, plain(provider, scenario).requests)
        assert other == ref, f"{reference} vs {provider} on the wire"


# --- the check can fail for reasons in portagent or the spec -----------------------------------------


def _deny_search(b: AgentBundle) -> AgentBundle:
    node = b.agents[b.root]
    rules = [r.model_dump(mode="json", exclude_defaults=True) for r in node.policy.rules]
    policy = node.policy.model_dump(mode="json", exclude_defaults=True) | {
        "rules": [
            {"id": "no-faq", "decision": "deny", "reason": "FAQ is offline", "tool": "search_faq"},
            *rules,
        ]
    }
    return AgentBundle(
        b.root, {**b.agents, b.root: replace(node, policy=PermissionPolicy.model_validate(policy))}
    )


@pytest.mark.parametrize("other", PROVIDERS[1:])
def test_a_different_policy_makes_the_traces_differ(emu, plain, tmp_path, other):
    scenario = SCENARIOS[0]
    reference = PROVIDERS[0]
    ref = plain(reference, scenario)
    changed = execute(emu, tmp_path, other, scenario, agent=_deny_search(load(scenario)))
    eq = equivalent(ref.events, comparable(other, changed.events))
    assert not eq
    assert any("permission.decision" in d and "deny" in d for d in eq.differences), eq.report()
    # the difference lives in the spec, not in the provider: the same change on both sides agrees again
    both = execute(emu, tmp_path, reference, scenario, agent=_deny_search(load(scenario)))
    again = equivalent(both.events, comparable(other, changed.events))
    assert again, again.report()


@pytest.mark.parametrize("other", PROVIDERS[1:])
def test_a_different_budget_makes_the_traces_differ(emu, plain, tmp_path, other):
    scenario = next(s for s in SCENARIOS if s.id == "budget_max_tool_calls")
    ref = plain(PROVIDERS[0], scenario)
    looser = execute(emu, tmp_path, other, scenario, agent=with_budget(load(scenario), max_tool_calls=5))
    eq = equivalent(ref.events, comparable(other, looser.events))
    assert not eq and any("budget.exceeded" in d or "tool.call" in d for d in eq.differences), eq.report()


@pytest.mark.parametrize("other", PROVIDERS[1:])
def test_a_different_tool_description_shows_on_the_wire(emu, plain, tmp_path, other):
    scenario = SCENARIOS[0]
    b = load(scenario)
    node = b.agents[b.root]
    tool = node.tools["get_order"].model_copy(update={"description": "Read an order, differently."})
    changed = AgentBundle(
        b.root, {**b.agents, b.root: replace(node, tools={**node.tools, "get_order": tool})}
    )
    ref = wire_summary(b, plain(PROVIDERS[0], scenario).requests)
    seen = wire_summary(b, execute(emu, tmp_path, other, scenario, agent=changed).requests)
    assert ref["shop_desk"]["declared"]["get_order"] != seen["shop_desk"]["declared"]["get_order"]
    assert ref["shop_desk"]["results"] == seen["shop_desk"]["results"]  # only the declaration moved


@pytest.mark.parametrize("other", PROVIDERS[1:])
def test_a_different_agent_tool_description_shows_on_the_wire(emu, plain, tmp_path, other):
    """The agent tool's description travels differently per vendor (a tool declaration; Claude Code's
    agent list beside its Agent tool); a change on one side must still show."""
    scenario = next(s for s in SCENARIOS if s.id == "agent_as_tool")
    b = load(scenario)
    node = b.agents[b.root]
    edges = [
        replace(e, description="Knows the FAQ, differently.") if e.target == "faq_expert" else e
        for e in node.edges
    ]
    changed = AgentBundle(b.root, {**b.agents, b.root: replace(node, edges=edges)})
    ref = wire_summary(b, plain(PROVIDERS[0], scenario).requests)
    seen = wire_summary(b, execute(emu, tmp_path, other, scenario, agent=changed).requests)
    assert seen["shop_desk"]["declared"]["faq_expert"][0] == "Knows the FAQ, differently."
    assert ref["shop_desk"]["declared"]["faq_expert"] != seen["shop_desk"]["declared"]["faq_expert"]
    assert ref["shop_desk"]["results"] == seen["shop_desk"]["results"]  # only the declaration moved


# --- an answer cut short ---------------------------------------------------------------------------------

CUT = Scenario("cut_short", "Write a long answer.", DONE)


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streamed"])
@pytest.mark.parametrize("provider", [p for p in PROVIDERS if p != "claude"] + ["openai-chat"])
def test_an_answer_cut_by_max_tokens_is_the_answer_with_a_length_reason(
    emu, plain, tmp_path, provider, streaming
):
    """The vendor stopped the reply at its output-token limit: every provider's run completes with the text
    so far, its model call traced with ``finish_reason: length`` and its tokens counted, after exactly one
    request. (openai-agents raises on a Responses ``incomplete`` status; the adapter passes the answer on.)
    Claude Code is left out: the CLI asks the model to go on after a cut (it is not portagent's loop).
    ``openai-chat``: openai over Chat Completions, whose SDK response keeps the text but not the reason."""
    api = "chat_completions" if provider == "openai-chat" else None
    provider = "openai" if api else provider
    run = execute(emu, tmp_path, provider, CUT, streaming=streaming, openai_api=api)
    assert (run.result.status, run.result.stop_reason) == DONE, run.result.error
    assert run.result.final_output == "This answer was cut"
    calls = [e for e in run.events if e.type == "model.call"]
    assert [c.finish_reason for c in calls] == ["length"]
    assert run.result.usage.output_tokens > 0 and run.result.usage.model_calls == 1
    assert len(run.requests) == 1
    reference = plain("openai", CUT)
    eq = equivalent(reference.events, comparable(provider, run.events))
    assert eq, f"openai vs {provider}:\n{eq.report()}"
