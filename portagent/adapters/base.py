"""The adapter protocol, the lazy registry, and each provider's facts as data.

An adapter translates only: it builds the vendor's native agent from contracts, runs it with the
vendor's own runtime and model client, reports what happens through the ``RunSession`` it is given
(model calls, handoffs, tool calls through the gateway), and maps SDK errors to portagent errors.
It holds no policy, retry, budget or evaluation logic: those live in the session and the gateway.

Registry: ``get_adapter("openai")`` imports ``portagent.adapters.openai.agent`` only when asked;
a missing SDK gives ``MissingExtraError`` (``pip install 'portagent[openai]'``). ``REGISTRY`` is also
the one table of provider facts (API key and base-URL variables, the dummy key sent to the emulator
and in replays, the HTTP statuses worth retrying): the CLI, the eval plan and replays read it here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from portagent.contracts.capabilities import PROFILES, ProviderCapabilities
from portagent.contracts.errors import MissingExtraError, UsageError
from portagent.core.versions import package_version
from portagent.wire.response import RETRYABLE_STATUS

if TYPE_CHECKING:
    from portagent.adapters.port import RunSession

__all__ = [
    "REGISTRY",
    "Adapter",
    "AdapterInfo",
    "AdapterOutcome",
    "get_adapter",
    "package_version",
]


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
    dummy_key: str
    """Key sent to the emulator and in replays: the vendor clients refuse to start without one, and
    it is shaped like the vendor's (``sk-`` / ``sk-ant-``) without being one a scrubber could take
    for a real secret. Cassettes record it, so it never changes."""
    startup_s: float
    """Typical start-up of an eval worker for this provider — the process, the SDK's import and its first
    run's one-time work — measured replaying the demo on a 2-core machine. Only a prior: the eval pool
    starts the providers with the most work first (``runtime.eval_pool``) and uses its own measurement
    as soon as a worker's first run is back."""
    warm_modules: tuple[str, ...] = ()
    """Modules the SDK imports lazily on a first run (measured on the demo suite; seconds for some SDKs).
    An eval worker imports them while it starts, before its first run's clock (``runtime.eval_workers``), and
    the fork server with the SDK when it preloads it: best effort, a name an SDK version lacks is skipped.
    ``tests/adapters/test_warm_modules.py`` checks each is still imported by a first run."""
    spec_modules: str = ""
    """``module:function`` naming, for a loaded agent bundle, the modules its first run imports lazily that
    depend on the spec rather than the SDK (LangGraph: each chat-model vendor's LangChain integration). An
    eval worker imports them while it starts, for the agent of its first run, as it does ``warm_modules``."""
    retryable_statuses: frozenset[int] = field(default=RETRYABLE_STATUS)
    """HTTP statuses worth retrying (``error`` events and ``ProviderError.retryable``): 408, 409,
    429, the 5xx server errors and Anthropic's 529 overloaded — one set, shared with the wire parsers."""

    def retryable(self, status: int | None) -> bool:
        """Is an answer with this HTTP status worth retrying? (No status: no.)"""
        return status is not None and status in self.retryable_statuses


REGISTRY: dict[str, AdapterInfo] = {
    "openai": AdapterInfo(
        module="portagent.adapters.openai.agent",
        sdk_module="agents",
        package="openai-agents",
        extra="openai",
        key_env="OPENAI_API_KEY",
        base_url_env="OPENAI_BASE_URL",
        dummy_key="sk-portagent-dummy",
        startup_s=3.0,
    ),
    "claude": AdapterInfo(
        module="portagent.adapters.claude.agent",
        sdk_module="claude_agent_sdk",
        package="claude-agent-sdk",
        extra="claude",
        key_env="ANTHROPIC_API_KEY",
        base_url_env="ANTHROPIC_BASE_URL",
        dummy_key="sk-ant-portagent-dummy",
        startup_s=1.0,
    ),
    "adk": AdapterInfo(
        module="portagent.adapters.adk.agent",
        sdk_module="google.adk",
        package="google-adk",
        extra="adk",
        key_env="GOOGLE_API_KEY",
        base_url_env="GOOGLE_GEMINI_BASE_URL",
        dummy_key="portagent-dummy-key",
        startup_s=2.0,
        # the runner's agent router imports the workflow engine (auth, OAuth, FastAPI: ~0.9 s), and the
        # workflow the remote-A2A agent type (a2a-sdk)
        warm_modules=("google.adk.workflow._workflow", "google.adk.agents.remote_a2a_agent"),
    ),
    "anthropic": AdapterInfo(
        module="portagent.adapters.anthropic.agent",
        sdk_module="anthropic",
        package="anthropic",
        extra="anthropic",
        key_env="ANTHROPIC_API_KEY",
        base_url_env="ANTHROPIC_BASE_URL",
        dummy_key="sk-ant-portagent-dummy",
        startup_s=1.5,
    ),
    "langgraph": AdapterInfo(
        module="portagent.adapters.langgraph.agent",
        sdk_module="langgraph",
        package="langgraph",
        extra="langgraph",
        # the chat model's vendor decides; the default model is OpenAI's (``adapters/langgraph/rules.py``)
        key_env="OPENAI_API_KEY",
        base_url_env="OPENAI_BASE_URL",
        dummy_key="sk-portagent-dummy",
        startup_s=3.0,
        # each chat-model vendor's LangChain integration the spec names (adapters/langgraph/chat_models.py
        # imports it per spec; OpenAI's, with the OpenAI client's types: ~1.5 s): by the spec, not a guess,
        # so a spec on Anthropic's models no longer imported OpenAI's for nothing
        spec_modules="portagent.adapters.langgraph.chat_models:integration_modules",
    ),
}
"""Every provider portagent runs on, in ``contracts.agent.PROVIDERS`` order (a test keeps them equal)."""


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
