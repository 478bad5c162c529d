"""The portability verdict's values and its provider-independent part (no adapter, no SDK).

``adapters/portability.py`` combines these with each vendor's ``rules.py`` into the one verdict; an
adapter's own preflight combines them with its own rules through the same ``judge`` (vendor rooms are
independent of one another, so they cannot ask ``adapters/portability.py`` itself).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import SpecProblem, UnsupportedFeatureError, UsageError
from portagent.contracts.providers import PROVIDERS

VendorRules = Callable[[AgentBundle], list["Lack"]]
"""A vendor's ``rules.lacks``: what its runtime cannot express although its profile has the capability."""


@dataclass(frozen=True)
class Lack:
    """One thing the spec needs that the provider cannot do."""

    feature: str
    """What is lacking: a capability flag (``handoffs``) or a named vendor limit (``nested delegation``)."""
    detail: str
    """Where the spec needs it and what to do instead."""
    file: str
    """The spec file holding the field."""
    path: str
    """Field path inside that file (empty: the spec as a whole)."""
    kind: Literal["unsupported", "usage"] = "unsupported"
    """``usage``: a configuration mistake (a missing model id), refused with exit 2 rather than 1."""

    @property
    def label(self) -> str:
        """The feature as a run's refusal names it (``built-in tools`` for ``builtin_tools``)."""
        return _LABELS.get(self.feature, self.feature)


_LABELS = {
    "builtin_tools": "built-in tools",
    "handoff_cycles": "handoff cycles",
    "structured_output": "structured output",
}


@dataclass(frozen=True)
class Verdict:
    """Whether ``provider`` can run the spec; every lack, and notes that do not block."""

    provider: str
    lacks: tuple[Lack, ...]
    notes: tuple[str, ...] = ()

    @property
    def runnable(self) -> bool:
        return not self.lacks

    @property
    def features(self) -> list[str]:
        return list(dict.fromkeys(lack.feature for lack in self.lacks))

    def problems(self) -> list[SpecProblem]:
        """The lacks as ``validate`` problems (one per field)."""
        return [
            SpecProblem(
                lack.file,
                lack.path,
                f"provider {self.provider!r} cannot run this agent: lacks {lack.feature}: {lack.detail}",
            )
            for lack in self.lacks
        ]

    def summary(self) -> str:
        """One line: ``provider 'adk' cannot run this agent: lacks a, b``."""
        return f"provider {self.provider!r} cannot run this agent: lacks {', '.join(self.features)}"

    def raise_if_unrunnable(self) -> None:
        """Refuse a run: the first lack names the feature; the others follow in the detail."""
        if not self.lacks:
            return
        first = self.lacks[0]
        rest = [lack for lack in self.lacks[1:] if lack.feature != first.feature]
        more = f" (also lacks: {', '.join(dict.fromkeys(lack.label for lack in rest))})" if rest else ""
        if first.kind == "usage":  # worded as validate words it (``problems``)
            raise UsageError(
                f"provider {self.provider!r} cannot run this agent: lacks {first.label}: {first.detail}{more}"
            )
        raise UnsupportedFeatureError(self.provider, first.label, first.detail + more)


def judge(
    bundle: AgentBundle,
    provider: str,
    vendor_lacks: VendorRules | None = None,
    notes: list[str] | None = None,
) -> Verdict:
    """Profile lacks, then missing model ids, then the vendor's own rules — always in this order, so the
    first lack a run is refused with is the same wherever the verdict is asked."""
    if provider not in PROFILES:
        raise UsageError(f"unknown provider {provider!r}; expected one of: {', '.join(PROVIDERS)}")
    lacks = profile_lacks(bundle, provider) + model_lacks(bundle, provider)
    if vendor_lacks is not None:
        lacks += vendor_lacks(bundle)
    return Verdict(provider, tuple(lacks), tuple(notes or ()))


def _file(bundle: AgentBundle, node: AgentNode) -> str:
    return str(node.path) if node.path is not None else node.name


def profile_lacks(bundle: AgentBundle, provider: str) -> list[Lack]:
    """What the capability profile (data) says the provider lacks for this spec."""
    out: list[Lack] = []
    prof = PROFILES[provider]
    root = bundle.node
    for i, flag in enumerate(bundle.spec.required_capabilities):
        if not getattr(prof, flag):
            out.append(
                Lack(
                    flag, "listed in required_capabilities", _file(bundle, root), f"required_capabilities.{i}"
                )
            )
    for node in bundle.agents.values():
        for i, d in enumerate(node.edges):  # in the order of the spec's ``delegation`` list
            if d.kind == "handoff" and not prof.handoffs:
                out.append(
                    Lack(
                        "handoffs",
                        f"{node.name} -> {d.target} (kind handoff); {provider} delegates as agent-as-tool only: use "
                        "delegation kind agent_as_tool (the coordinator then keeps control)",
                        _file(bundle, node),
                        f"delegation.{i}.kind",
                    )
                )
            if d.kind == "agent_as_tool" and not prof.agents_as_tools:
                out.append(
                    Lack(
                        "agents_as_tools",
                        f"{node.name} -> {d.target} (kind agent_as_tool)",
                        _file(bundle, node),
                        f"delegation.{i}.kind",
                    )
                )
    cycle = bundle.delegation_cycle()
    if cycle and not prof.handoff_cycles:
        out.append(
            Lack(
                "handoff_cycles",
                f"the delegation graph has a cycle: {' -> '.join(cycle)}",
                _file(bundle, root),
                "delegation",
            )
        )
    for node in bundle.agents.values():
        if node.spec.output_schema is not None and not prof.structured_output:
            out.append(
                Lack(
                    "structured_output", f"output_schema on {node.name}", _file(bundle, node), "output_schema"
                )
            )
    for node in bundle.agents.values():
        if node.spec.builtin_tools and not prof.builtin_tools:
            granted = ", ".join(node.spec.builtin_tools)
            out.append(
                Lack(
                    "builtin_tools",
                    f"granted: {granted} (on {node.name}); {provider} has no built-in tools: replace them with ToolSpecs",
                    _file(bundle, node),
                    "builtin_tools",
                )
            )
    for node in bundle.agents.values():
        if node.spec.mcp_servers and not prof.mcp:
            names = ", ".join(s.name for s in node.spec.mcp_servers)
            out.append(
                Lack("mcp", f"mcp_servers: {names} (on {node.name})", _file(bundle, node), "mcp_servers")
            )
    return out


_MODEL_FIELDS = {
    "anthropic": "models.anthropic (or models.claude: the same Claude model ids, which it falls back to)",
    "langgraph": "models.langgraph (<vendor>:<model id>, e.g. openai:gpt-4.1-mini; or models.openai, which it "
    "falls back to)",
}
"""Where a provider's model id may be set, when more than ``models.<provider>`` (``ModelSettings.for_provider``)."""


CLAUDE_CODE_ALIASES = frozenset({"sonnet", "opus", "haiku", "opusplan", "default", "inherit"})
"""Model names Claude Code resolves itself (``sonnet``, ``opus[1m]``…): not model ids of the Messages API."""


def claude_code_alias(model: str | None) -> bool:
    """Whether ``model`` is one of Claude Code's own aliases (with or without a ``[…]`` suffix)."""
    return bool(model) and str(model).partition("[")[0].strip().lower() in CLAUDE_CODE_ALIASES


def model_lacks(bundle: AgentBundle, provider: str) -> list[Lack]:
    """Every agent needs a model id for the provider (its own, or the root's). On ``anthropic`` that id may
    not be a Claude Code alias reached through the ``models.claude`` fallback: the Messages API knows no
    model ``opus``, and the run would fail at its first request."""
    out: list[Lack] = []
    for node in bundle.agents.values():
        model = node.spec.models.for_provider(provider) or bundle.spec.models.for_provider(provider)
        if provider == "anthropic" and claude_code_alias(model):
            out.append(
                Lack(
                    "model id",
                    f"agent {node.name!r} would run on anthropic as {model!r}, its models.claude: a Claude Code "
                    "alias, which the Messages API does not know; set models.anthropic to a Claude model id "
                    f"(e.g. claude-sonnet-4-6) in {_file(bundle, node)}",
                    _file(bundle, node),
                    "models.anthropic",
                    kind="usage",
                )
            )
            continue
        if not model:
            out.append(
                Lack(
                    "model id",
                    f"agent {node.name!r} has no model id for provider {provider!r}: set "
                    f"{_MODEL_FIELDS.get(provider, f'models.{provider}')} in {_file(bundle, node)} (or on the root "
                    "agent)",
                    _file(bundle, node),
                    f"models.{provider}",
                    kind="usage",
                )
            )
    return out
