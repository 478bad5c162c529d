"""What Claude Code cannot express although the profile has the capability (no SDK import).

Used by the one portability verdict (``adapters/portability.py``) and by the adapter's own preflight.
"""

from __future__ import annotations

from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.portability import Lack

DELEGATION_BUILTINS = ("Agent", "Task")
"""Claude Code's subagent tool (``Task`` was renamed ``Agent``; 2.1.332 declares ``Agent``): delegation is
declared with ``delegation`` so every subagent call goes through the gateway."""


def _file(bundle: AgentBundle, node: AgentNode) -> str:
    return str(node.path) if node.path is not None else node.name


def lacks(bundle: AgentBundle) -> list[Lack]:
    """Claude Code subagents cannot start subagents; the CLI has no temperature; its own subagent tool is
    reserved (delegation is declared with ``delegation``, so the gateway sees it)."""
    out: list[Lack] = []
    for name, node in bundle.agents.items():
        if name != bundle.root and node.edges:
            out.append(
                Lack(
                    "nested delegation",
                    f"{name!r} delegates to {node.edges[0].target!r}, but Claude Code subagents cannot start "
                    "subagents; delegate from the root agent only",
                    _file(bundle, node),
                    "delegation.0",
                )
            )
        for i, builtin in enumerate(node.spec.builtin_tools):
            if builtin in DELEGATION_BUILTINS:
                out.append(
                    Lack(
                        "a granted subagent tool",
                        f"agent {name!r} grants the built-in {builtin!r}: declare subagents with 'delegation' "
                        "(kind agent_as_tool) instead",
                        _file(bundle, node),
                        f"builtin_tools.{i}",
                        kind="usage",
                    )
                )
    models = bundle.spec.models
    if models.force_shared_settings and models.temperature is not None:
        out.append(
            Lack(
                "a forced temperature",
                "the Claude Code CLI has no temperature setting: set force_shared_settings: false or drop "
                "models.temperature",
                _file(bundle, bundle.node),
                "models.temperature",
            )
        )
    return out
