"""What ADK / Gemini cannot express although the profile has the capability (no SDK import).

Used by the one portability verdict (``adapters/portability.py``) and by the adapter's own preflight.
Imports nothing of the adapter's run-time machinery (``events``, ``_shared``, the port): ``validate``
loads every vendor's rules.
"""

from __future__ import annotations

from typing import Any

from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.portability import Lack
from portagent.wire.gemini_schema import GEMINI_OPENAPI_SCHEMA_FIELDS, tool_lacks, walk_schema


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


def output_schema_problems(schema: dict[str, Any], path: str = "output_schema") -> list[str]:
    """Why an AgentSpec's ``output_schema`` cannot go through ADK's ``LlmAgent.output_schema``.

    ADK 2.13 takes the raw dict but google-genai converts it to ``types.Schema`` (the OpenAPI subset):
    any other key fails pydantic validation, ``enum`` must hold strings and ``type`` one string
    (a list such as ``["string", "null"]`` crashes the converter; use ``nullable: true``). What a Gemini
    function declaration can express is ``wire/gemini_schema.py`` (langgraph's Gemini chat model declares
    tools the same way); these limits are ADK's own."""
    problems: list[str] = []
    for where, sub in walk_schema(schema, path):
        for key in sub:
            if key not in GEMINI_OPENAPI_SCHEMA_FIELDS:
                problems.append(
                    f"{where}.{key}: keyword {key!r} is not supported by ADK's output_schema "
                    "(google-genai types.Schema)"
                )
        enum = sub.get("enum")
        if isinstance(enum, list) and not all(isinstance(v, str) for v in enum):
            problems.append(f"{where}.enum: ADK's output_schema supports string enum values only")
        if "type" in sub and not isinstance(sub["type"], str):
            problems.append(
                f"{where}.type: ADK's output_schema needs one type name (use nullable: true "
                "instead of a type list)"
            )
    return problems
