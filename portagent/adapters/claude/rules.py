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
    out += _settings_lacks(bundle)
    return out


def _forced_limit(node: AgentNode) -> int | None:
    models = node.spec.models
    return models.max_tokens if models.force_shared_settings else None


def _settings_lacks(bundle: AgentBundle) -> list[Lack]:
    """Each agent's own forced settings (a subagent's too: it runs with its own spec's settings elsewhere).
    The CLI has no temperature at all, and one output limit for the whole process
    (``CLAUDE_CODE_MAX_OUTPUT_TOKENS``, the root's): a subagent whose forced limit differs from it would
    silently run under the root's."""
    out: list[Lack] = []
    root_limit = _forced_limit(bundle.node)
    for name, node in bundle.agents.items():
        models = node.spec.models
        if models.force_shared_settings and models.temperature is not None:
            out.append(
                Lack(
                    "a forced temperature",
                    f"agent {name!r}: the Claude Code CLI has no temperature setting: set "
                    "force_shared_settings: false or drop models.temperature",
                    _file(bundle, node),
                    "models.temperature",
                )
            )
        if name != bundle.root and _forced_limit(node) != root_limit:
            own = _forced_limit(node)
            out.append(
                Lack(
                    "a subagent's own max_tokens",
                    f"agent {name!r} runs with max_tokens {own if own is not None else 'unset'} but the root "
                    f"{bundle.root!r} with {root_limit if root_limit is not None else 'unset'}: the Claude Code "
                    "CLI has one output-token limit for the root and all its subagents; give them the same "
                    "forced models.max_tokens",
                    _file(bundle, node),
                    "models.max_tokens",
                )
            )
    return out
