"""The context manifest: a ``context.manifest`` event before each model call (design source ch. 04).

    RunSession.before_model_call(agent) ─► manifest(session, agent) ─► recorder.emit("context.manifest")

What portagent puts in front of the model, part by part, in the order it reaches it: the agent's
instructions, its tool declarations, the session history a run in a thread carries (``contracts/session.py``
framing), the user input, and the tool results so far (``recall`` results are ``memory`` parts). Session
turns the context budget left out (``runtime/sessions.py``) are listed as ``excluded`` with the reason.

Token counts are estimates (characters / 4, the emulator's own estimate), labelled ``estimate``: no tokenizer
for these providers is available offline. What the vendor runtime adds on its own (Claude Code's system
prompt, ADK's agent preamble) is invisible to portagent and named in ``not_counted``.

Emitted when the agent declares ``max_context_tokens`` or the run asks for it
(``RunOptions.extra["context_manifest"]``, ``run --context-manifest``).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from portagent.contracts.session import split_framed

if TYPE_CHECKING:
    from portagent.adapters.port import RunSession
    from portagent.contracts.bundle import AgentBundle, AgentNode
    from portagent.contracts.run import RunRequest

MANIFEST_OPTION = "context_manifest"
"""``RunOptions.extra`` key: emit manifests even without ``max_context_tokens``."""
SESSION_CONTEXT_OPTION = "session_context"
"""``RunOptions.extra`` key set by ``runtime/sessions.py``: ``{"session_id", "excluded": [ExcludedPart…]}``."""
MEMORY_TOOLS = frozenset({"recall"})
"""Tools whose results are retrieved memory (``tools/memory.py``)."""

NOT_COUNTED: dict[str, list[str]] = {
    "openai": [],
    "adk": ["ADK's own additions to the system instruction (agent name and transfer notes)"],
    "claude": ["Claude Code's system prompt, built-in tool list and <system-reminder> blocks"],
    "anthropic": [],
}
"""What each vendor runtime adds that portagent does not see (its manifests cannot count it)."""


def estimate_tokens(text: str) -> int:
    """One token per four characters (the emulator's estimate, ``emulator/plan.py``); 0 for no text."""
    return math.ceil(len(text) / 4) if text else 0


def manifest_fixed_tokens(bundle: AgentBundle, request: RunRequest) -> int:
    """What the root agent's first model call holds besides session history: instructions, tool
    declarations, the new messages (the part a context budget cannot leave out)."""
    node = bundle.agents[bundle.root]
    total = estimate_tokens(node.spec.instructions) + estimate_tokens(_declarations(node))
    return total + sum(estimate_tokens(m) for m in request.messages)


def _declarations(node: AgentNode) -> str:
    if not node.tools:
        return ""
    declared = [
        {"name": t.name, "description": t.model_description(), "parameters": t.input_schema}
        for t in node.tools.values()
    ]
    return json.dumps(declared, sort_keys=True)


def enabled(session: RunSession) -> bool:
    spec = session.bundle.spec
    return spec.max_context_tokens is not None or bool(session.options.extra.get(MANIFEST_OPTION))


def manifest(session: RunSession, agent: str | None) -> dict[str, Any]:
    """The fields of the ``context.manifest`` event for the next model call of ``agent``."""
    name = agent or session.bundle.root
    node = session.bundle.agents.get(name) or session.bundle.agents[session.bundle.root]
    budget = node.spec.max_context_tokens or session.bundle.spec.max_context_tokens
    parts: list[dict[str, Any]] = []

    def part(type_: str, source: str, text: str) -> None:
        parts.append({"type": type_, "source": source, "tokens": estimate_tokens(text)})

    part("instruction", f"agent:{name}.instructions", node.spec.instructions)
    if node.tools:
        part("tools", f"agent:{name}.tools ({len(node.tools)})", _declarations(node))
    events = session.recorder.events
    sub_agent = any(e.type == "handoff" and e.kind == "agent_as_tool" and e.to_agent == name for e in events)
    excluded: list[dict[str, Any]] = []
    if sub_agent:
        # an agent used as a tool starts a conversation of its own: the coordinator's request, not the user's
        # (after the handoff package it was given, when its edge says ``context: handoff``)
        given = next(
            (e for e in reversed(events) if e.type == "handoff.package" and e.to_agent == name), None
        )
        if given is not None:
            parts.append({"type": "handoff", "source": f"handoff:{given.handoff_id}", "tokens": given.tokens})
        else:
            part("handoff", f"handoff:{name} (the coordinator's request)", "")
    else:
        messages = session.request.messages
        framed = split_framed(messages[0])
        if framed is not None:
            context = session.options.extra.get(SESSION_CONTEXT_OPTION) or {}
            compacted = context.get("compacted")
            part("history", f"session:{framed.session_id} ({framed.turns} turns)", framed.history)
            if compacted:  # the compaction sits inside the history block: counted once, as its own part
                parts[-1]["tokens"] -= compacted["tokens"]
                parts.insert(len(parts) - 1, dict(compacted))
            part("input", "input.0", framed.message)
            excluded = list(context.get("excluded", []))
        else:
            part("input", "input.0", messages[0])
        for i, text in enumerate(messages[1:], start=1):
            part("input", f"input.{i}", text)
    own = {e.call_id for e in events if e.type == "tool.call" and (e.agent == name or not sub_agent)}
    tools = {e.call_id: e.tool for e in events if e.type == "tool.call"}
    for e in events:
        if e.type != "tool.result" or e.call_id not in own:
            continue
        tool = tools.get(e.call_id, "?")
        text = json.dumps(e.output, sort_keys=True, ensure_ascii=False, default=str)
        if tool in MEMORY_TOOLS and e.ok and isinstance(e.output, dict):
            ids = [m.get("memory_id") for m in e.output.get("memories", []) if isinstance(m, dict)]
            part("memory", f"memory:{','.join(str(i) for i in ids) or 'none'} (recall@{e.call_id})", text)
        else:
            part("tool_result", f"tool:{tool}@{e.call_id}", text)
    total = sum(p["tokens"] for p in parts)
    return {
        "call_index": session.model_calls + 1,
        "model": session.model_for(name),
        "parts": parts,
        "excluded": excluded,
        "total_tokens": total,
        "max_context_tokens": budget,
        "over_budget": budget is not None and total > budget,
        "token_count": "estimate",
        "not_counted": NOT_COUNTED.get(session.provider, []),
    }


def emit_manifest(session: RunSession, agent: str | None) -> None:
    """Emit the manifest of the next model call when the run keeps them."""
    if enabled(session):
        session.recorder.emit(
            "context.manifest", agent=agent or session.current_agent, **manifest(session, agent)
        )


def delegation_input(session: RunSession, parent: str, target: str, task: str) -> str:
    """What the sub-agent ``target`` receives when ``parent`` calls it as a tool with ``task`` (every
    adapter calls this right after ``record_handoff``): the task alone, or — when the edge says ``context:
    handoff`` — the handoff package of the run so far (``tracing/handoff.py``), recorded as a
    ``handoff.package`` event, then the task (docs/handoff.md "Delegation")."""
    node = session.bundle.agents.get(parent)
    edge = next((e for e in node.edges if e.target == target), None) if node is not None else None
    if edge is None or edge.context != "handoff":
        return task
    from portagent.tracing.handoff import delegation_package, render_delegation

    package = delegation_package(
        session.recorder.events, parent=parent, target=target, task=task, clock=session.clock
    )
    text = render_delegation(package, parent, target, task)
    session.recorder.emit(
        "handoff.package",
        agent=parent,
        from_agent=parent,
        to_agent=target,
        handoff_id=package.handoff_id,
        task=task,
        tokens=estimate_tokens(text) - estimate_tokens(task),
        package=package.model_dump(mode="json", exclude_defaults=True),
    )
    return text
