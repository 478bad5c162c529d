"""Which API key variables a ``--live`` run reads, and the key it sends (``Endpoint.api_key``).

One variable per provider (``adapters.base.REGISTRY``), except ``langgraph``: its chat models may run on
several vendors, and each vendor's client is given its own vendor's key (``adapters/langgraph/
chat_models.api_key``), so a live langgraph run needs the variable of every vendor its agents use. The
CLI (``run``, ``resume``, ``chat``, ``a2a serve``) and the eval plan ask here, so all of them agree.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from portagent.adapters.base import REGISTRY
from portagent.contracts.errors import UsageError

if TYPE_CHECKING:
    from portagent.contracts.bundle import AgentBundle


def key_envs(provider: str, bundle: AgentBundle | None = None) -> list[str]:
    """The API key variables a ``--live`` run of ``bundle`` on ``provider`` reads: the provider's own; for
    ``langgraph``, the variable of each chat-model vendor its agents run on (the root agent's first), as
    each vendor's client is given its own vendor's key (``adapters/langgraph/chat_models.py``)."""
    if provider != "langgraph" or bundle is None:
        return [REGISTRY[provider].key_env]
    from portagent.adapters.langgraph.rules import wires

    envs = [REGISTRY[w].key_env for w in wires(bundle)]
    return list(dict.fromkeys(envs)) or [REGISTRY[provider].key_env]


def live_key(provider: str, bundle: AgentBundle | None = None, *, needs: str = "--live needs") -> str:
    """The key a ``--live`` run sends (``Endpoint.api_key``): the first of ``key_envs``. Every one of them
    must be set: ``UsageError`` "<needs> X in the environment" names those that are not."""
    envs = key_envs(provider, bundle)
    missing = [e for e in envs if not os.environ.get(e)]
    if missing:
        raise UsageError(f"{needs} {' and '.join(missing)} in the environment")
    return os.environ[envs[0]]
