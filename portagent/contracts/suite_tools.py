"""The tool names a suite's cases give, checked against the agents under test (``load_suite``).

A case names tools in ``expect.required_tools``, ``expect.forbidden_tools``, ``expect.must_not_execute``,
``expect.trajectory.reference``, the keys of ``expect.args.expected`` and ``approvals[].tool``
(``Case.tool_references``). The graders compare them with the ``tool`` of the trace's ``tool.call`` events
(``evals/scoring.py``, ``evals/trajectory.py``) and the scripted approver matches cards by it, so a name no
agent can call never matches anything: a misspelt forbidden or must-not-run tool passes every run forever,
a misspelt scripted approval never applies. Each such name is a ``SpecProblem`` naming the case, the field
and the name, with the closest known name when there is one.

What a trace can name, per agent version of the suite (``agent``, or ``baseline`` and ``candidate``: every
case runs on each, so a name is fine when any of them has it):

- the tools (``tools``) and granted built-ins (``builtin_tools``) of the agent and of every agent it
  delegates to — a sub-agent's calls are traced under its own tools' names. The delegation itself is a
  ``handoff`` event (either kind), never a ``tool.call``: a sub-agent's name is not a tool name;
- tools of MCP servers (``mcp_servers``) and A2A agents (``a2a_agents``), which only a run lists. With an
  ``allow`` list (MCP) or a ``skills`` list (A2A) the names are known exactly (``prefix`` + name, as
  ``tools/mcp/sources.py`` and ``tools/a2a/sources.py`` form them); without one, any name starting with the
  source's prefix (``<name>_`` by default; every name when the prefix is ``""``) is accepted unchecked.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from portagent.contracts.bundle import AgentBundle
from portagent.contracts.errors import SpecProblem
from portagent.contracts.suite import Case

SHOWN_TOOLS = 12
"""Known tool names listed in a message (the rest are counted)."""


@dataclass(frozen=True)
class RuntimeSource:
    """The tools one MCP server or A2A agent gives an agent when a run starts."""

    what: str
    """``MCP server 'files'`` / ``A2A agent 'travel'``."""
    prefix: str
    """The prefix of every tool name it gives."""
    names: frozenset[str] | None
    """The exact names (from ``allow`` / ``skills``), or None when whatever the run lists."""

    def may_name(self, tool: str) -> bool:
        return tool in self.names if self.names is not None else tool.startswith(self.prefix)

    def describe(self) -> str:
        if self.names is not None:
            return f"{self.what}: {', '.join(sorted(self.names)) or 'none'}"
        which = f"any name starting {self.prefix!r}" if self.prefix else "any name"
        return f"{self.what}: {which}, listed only when a run starts"


@dataclass(frozen=True)
class KnownTools:
    """The tool names the traces of one agent version can hold."""

    label: str
    """``name@version`` of the agent under test."""
    tools: frozenset[str]
    """Its tools and granted built-ins, and those of every agent it delegates to."""
    agents: frozenset[str]
    """Names of the agents of its bundle (the root and its sub-agents)."""
    sources: tuple[RuntimeSource, ...]
    """Its MCP servers and A2A agents (and its sub-agents')."""

    @classmethod
    def of(cls, bundle: AgentBundle) -> KnownTools:
        tools: set[str] = set()
        sources: dict[RuntimeSource, None] = {}
        for node in bundle.agents.values():
            tools.update(node.tools)
            tools.update(node.spec.builtin_tools)
            for mcp in node.spec.mcp_servers:
                exact = frozenset(mcp.portable_name(n) for n in mcp.allow) if mcp.allow else None
                sources[RuntimeSource(f"MCP server {mcp.name!r}", mcp.tool_prefix, exact)] = None
            for a2a in node.spec.a2a_agents:
                exact = frozenset(a2a.tool_name(s) for s in a2a.skills) if a2a.skills else None
                sources[RuntimeSource(f"A2A agent {a2a.name!r}", a2a.tool_prefix, exact)] = None
        return cls(
            f"{bundle.root}@{bundle.spec.version}", frozenset(tools), frozenset(bundle.agents), tuple(sources)
        )

    def may_call(self, tool: str) -> bool:
        return tool in self.tools or any(s.may_name(tool) for s in self.sources)


def unknown_tool_problems(
    case: Case, known: Sequence[KnownTools], file: str, at: tuple[Any, ...] = (), node: Any = None
) -> list[SpecProblem]:
    """One problem per tool name of ``case`` that no agent in ``known`` can call. ``file``, ``at`` (the
    case's field path in it) and ``node`` (its YAML tree, for lines) say where the case is written."""
    from portagent.contracts.validation_problems import line_of

    if not known:
        return []
    out: list[SpecProblem] = []
    for loc, name in case.tool_references():
        if any(k.may_call(name) for k in known):
            continue
        out.append(
            SpecProblem(
                file,
                ".".join(str(p) for p in (*at, *loc)),
                _message(case.case_id, _field(loc), name, known),
                line_of(node, (*at, *loc)),
            )
        )
    return out


def _field(loc: tuple[str | int, ...]) -> str:
    """The field a tool name is given in: ``expect.forbidden_tools``, ``expect.args.expected``,
    ``approvals.tool`` (indices and the args key left out)."""
    if loc[:3] == ("expect", "args", "expected"):
        return "expect.args.expected"
    return ".".join(str(p) for p in loc if not isinstance(p, int))


def _message(case_id: str, field: str, name: str, known: Sequence[KnownTools]) -> str:
    tools = sorted(set().union(*(k.tools for k in known)))
    exact = sorted({n for k in known for s in k.sources if s.names is not None for n in s.names})
    close = difflib.get_close_matches(name, [*tools, *exact], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    labels = ", ".join(dict.fromkeys(k.label for k in known))
    if any(name in k.agents for k in known):
        why = (
            f"{name!r} is an agent: a delegation is traced as a handoff event, never as a tool call, so "
            "no call can match it"
        )
    else:
        why = f"no agent under test ({labels}) has a tool of that name, so no call can ever match it"
    shown = ", ".join(tools[:SHOWN_TOOLS]) or "none"
    if len(tools) > SHOWN_TOOLS:
        shown += f" and {len(tools) - SHOWN_TOOLS} more"
    sources = "".join(f"; {d}" for d in dict.fromkeys(s.describe() for k in known for s in k.sources))
    return f"case {case_id!r}: unknown tool {name!r} in {field}{hint}: {why} (tools: {shown}{sources})"
