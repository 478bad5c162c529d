"""portagent: one agent definition, three vendor agent runtimes, one normalized trace.

    import portagent

    bundle = portagent.load_agent("examples/support_desk/agent.yaml")
    result = portagent.run(bundle, portagent.RunRequest(input="What is the refund deadline?", provider="openai"),
                           portagent.RunConfig(endpoint=portagent.Endpoint(base_url=emu.base_url, api_key="dummy")))
    async for event in portagent.stream(bundle, request, config): ...

Names are resolved lazily: importing ``portagent`` imports no SDK and stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from portagent.core.versions import PORTAGENT_VERSION as __version__

_EXPORTS = {
    "load_agent": "portagent.contracts.bundle",
    "AgentSpec": "portagent.contracts.agent",
    "ToolSpec": "portagent.contracts.tool",
    "PermissionPolicy": "portagent.contracts.policy",
    "RunRequest": "portagent.contracts.run",
    "RunResult": "portagent.contracts.run",
    "RunConfig": "portagent.runtime.runner",
    "run": "portagent.runtime.runner",
    "arun": "portagent.runtime.runner",
    "stream": "portagent.runtime.runner",
    "Endpoint": "portagent.adapters.port",
    "RunOptions": "portagent.adapters.port",
    "PortagentError": "portagent.contracts.errors",
    "equivalent": "portagent.tracing.compare",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'portagent' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
