"""The adapter protocol and the lazy registry.

An adapter translates only: it builds the vendor's native agent from contracts, runs it with the
vendor's own runtime and model client, reports what happens through the ``RunSession`` it is given
(model calls, handoffs, tool calls through the gateway), and maps SDK errors to portagent errors.
It holds no policy, retry, budget or evaluation logic: those live in the session and the gateway.

Registry: ``get_adapter("openai")`` imports ``portagent.adapters.openai.agent`` only when asked;
a missing SDK gives ``MissingExtraError`` (``pip install 'portagent[openai]'``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from portagent.contracts.capabilities import PROFILES, ProviderCapabilities
from portagent.contracts.errors import MissingExtraError, UsageError
from portagent.core.versions import package_version

if TYPE_CHECKING:
    from portagent.adapters.port import RunSession

__all__ = ["REGISTRY", "Adapter", "AdapterInfo", "AdapterOutcome", "get_adapter", "package_version"]


@dataclass(frozen=True)
class AdapterInfo:
    module: str
    """Module implementing the adapter."""
    sdk_module: str
    """Top-level module of the vendor SDK (checked before importing the adapter)."""
    package: str
    """Distribution name of the SDK (for versions and install hints)."""
    extra: str
    """portagent extra that installs it."""
    key_env: str
    """Environment variable holding the vendor API key for ``--live``."""
    base_url_env: str
    """Environment variable conventionally holding a custom base URL."""


REGISTRY: dict[str, AdapterInfo] = {
    "openai": AdapterInfo(
        "portagent.adapters.openai.agent",
        "agents",
        "openai-agents",
        "openai",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ),
    "claude": AdapterInfo(
        "portagent.adapters.claude.agent",
        "claude_agent_sdk",
        "claude-agent-sdk",
        "claude",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ),
    "adk": AdapterInfo(
        "portagent.adapters.adk.agent",
        "google.adk",
        "google-adk",
        "adk",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
    ),
}


@dataclass
class AdapterOutcome:
    """What an adapter reports when the vendor runtime returns (or fails)."""

    final_output: Any = None
    """The final output (text, or the parsed structured output)."""
    final_agent: str | None = None
    """The agent that produced the final output (the run's route)."""
    vendor_cost_usd: float | None = None
    """Cost reported by the vendor runtime itself (Claude's ``total_cost_usd``)."""
    vendor_stop: str | None = None
    """A vendor-side stop that maps to a portagent budget (``max_turns``, ``max_cost_usd``)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Vendor-only facts for ``run.completed.provider_details``."""


class Adapter(Protocol):
    """What the runner needs from an adapter module's ``ADAPTER`` object."""

    name: str
    capabilities: ProviderCapabilities

    def sdk_version(self) -> str: ...

    def cli_version(self) -> str | None: ...

    async def run(self, session: RunSession) -> AdapterOutcome:
        """Run ``session.bundle`` for ``session.request`` against ``session.endpoint``."""
        ...


def get_adapter(name: str) -> Adapter:
    """Import and return the adapter for ``name``; a clear error when its SDK is missing."""
    info = REGISTRY.get(name)
    if info is None:
        raise UsageError(f"unknown provider {name!r}; expected one of: {', '.join(REGISTRY)}")
    if importlib.util.find_spec(info.sdk_module.split(".")[0]) is None or _missing(info.sdk_module):
        raise MissingExtraError(name, info.package, info.extra)
    module = importlib.import_module(info.module)
    adapter: Adapter = module.ADAPTER
    assert adapter.capabilities == PROFILES[name], f"{name} adapter and its profile disagree"
    return adapter


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True
