"""What an importer reads from a native definition, before it becomes contracts.

The three ``from_*`` importers fill an ``ImportDraft``; ``writer`` turns it into AgentSpec, ToolSpec and
PermissionPolicy files. A draft is a graph: the same native agent reached twice is one ``DraftAgent``
(so handoff cycles survive), the same native tool used by two agents is one ``DraftTool``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from portagent.migration.report import ImportReport


@dataclass
class DraftTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: str
    """``module:function`` of the original function, or of a shim in the generated shim module."""
    origin: str
    """Where it came from, for the report (``openai-agents FunctionTool get_order (shop.get_order)``)."""
    needs_approval: bool = False
    """The native definition asked for approval (openai ``needs_approval=True``)."""
    approval_reason: str = ""
    timeout_ms: int | None = None
    shim: str | None = None
    """Source of the shim function, when the handler is one (written into the shim module)."""


@dataclass
class DraftEdge:
    kind: str
    """``handoff`` or ``agent_as_tool``."""
    target: DraftAgent
    description: str = ""


@dataclass
class DraftAgent:
    name: str
    instructions: str
    description: str = ""
    models: dict[str, Any] = field(default_factory=dict)
    """``ModelSettings`` fields (per-provider ids, shared settings)."""
    tools: list[DraftTool] = field(default_factory=list)
    builtin_tools: list[str] = field(default_factory=list)
    output_schema: dict[str, Any] | None = None
    edges: list[DraftEdge] = field(default_factory=list)
    budget: dict[str, Any] = field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PolicyRuleDraft:
    id: str
    decision: str
    reason: str
    tool: str
    when: list[dict[str, Any]] = field(default_factory=list)
    """Argument predicates (``ArgPredicate`` fields)."""


@dataclass
class ImportDraft:
    sdk: str
    """``openai``, ``adk`` or ``claude``."""
    root: DraftAgent
    report: ImportReport
    rules: list[PolicyRuleDraft] = field(default_factory=list)
    shim_imports: list[str] = field(default_factory=list)
    """``import x as y`` lines the shim module needs."""

    def agents(self) -> list[DraftAgent]:
        """Every agent reachable from the root, root first, each once."""
        seen: list[DraftAgent] = []
        todo = [self.root]
        while todo:
            agent = todo.pop(0)
            if any(a is agent for a in seen):
                continue
            seen.append(agent)
            todo.extend(e.target for e in agent.edges)
        return seen
