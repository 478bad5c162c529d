"""What ADK / Gemini cannot express although the profile has the capability (no SDK import).

Used by the one portability verdict (``adapters/portability.py``) and by the adapter's own preflight.
"""

from __future__ import annotations

from portagent.adapters.adk.events import output_schema_problems
from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.portability import Lack
from portagent.wire.gemini_schema import tool_lacks


def _file(bundle: AgentBundle, node: AgentNode) -> str:
    return str(node.path) if node.path is not None else node.name


def lacks(bundle: AgentBundle) -> list[Lack]:
    """Gemini declares a subset of JSON Schema; ADK sub-agents form a tree (one parent each)."""
    out: list[Lack] = []
    for node in bundle.agents.values():
        out += tool_lacks(node.name, node.tools, _file(bundle, node))
        if node.spec.output_schema is not None:
            for problem in output_schema_problems(node.spec.output_schema):
                out.append(
                    Lack(
                        "Gemini schema limits",
                        f"{node.name}: {problem}",
                        _file(bundle, node),
                        "output_schema",
                    )
                )
    # One parent per sub-agent, and the root is no one's sub-agent: a handoff back to the root (or any
    # cycle, which always gives some agent a second parent) cannot be built as ADK sub_agents.
    parents: dict[str, str] = {}
    for node in bundle.agents.values():
        for i, edge in enumerate(node.edges):
            if edge.kind != "handoff":
                continue
            if edge.target == bundle.root:
                out.append(
                    Lack(
                        "a handoff tree",
                        f"{node.name!r} hands off to the root agent {bundle.root!r}; ADK sub_agents form a "
                        "tree with the root at the top",
                        _file(bundle, node),
                        f"delegation.{i}",
                    )
                )
            elif edge.target in parents and parents[edge.target] != node.name:
                out.append(
                    Lack(
                        "a handoff tree",
                        f"{edge.target!r} is a handoff target of both {parents[edge.target]!r} and "
                        f"{node.name!r}; ADK sub_agents form a tree (one parent each)",
                        _file(bundle, node),
                        f"delegation.{i}",
                    )
                )
            parents.setdefault(edge.target, node.name)
    return out
