"""Provenance of a run: the honest ``source`` label (live / endpoint / emulator / replay, DESIGN §9) and
the endpoint as a manifest may record it (no credentials, no query)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import Endpoint, endpoint_root
from portagent.core.secrets import MASK_PREFIX

if TYPE_CHECKING:
    from portagent.contracts.bundle import AgentBundle
    from portagent.runtime.replay import Recorded


OFFICIAL_HOSTS: dict[str, tuple[str, ...]] = {
    "openai": ("api.openai.com",),
    "claude": ("api.anthropic.com",),
    "adk": ("generativelanguage.googleapis.com", "aiplatform.googleapis.com"),
    "anthropic": ("api.anthropic.com",),
    "langgraph": ("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com"),
}
"""Each provider's official API hosts (subdomains and Vertex's ``us-central1-aiplatform.googleapis.com``
and ``eu.api.openai.com`` count): a live run pointed anywhere else is labelled ``endpoint``."""


def _without_userinfo(url: str) -> str:
    """``url`` without its ``user:pass@``, taken off as text: ``urlsplit`` cannot read a netloc whose
    userinfo was masked (``u:[REDACTED:url-credentials]@host`` looks like a broken IPv6 host to it)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    return f"{scheme}://{rest[:end].rpartition('@')[2]}{rest[end:]}"


def shown_url(url: str) -> str:
    """``url`` without credentials, query or fragment (what a manifest may record); a URL whose
    credentials were already masked reads the same as the URL they were masked in."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(_without_userinfo(url))
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def same_endpoint(a: str, b: str) -> bool:
    """Whether two base URLs name one endpoint: the same scheme, host, port and path once credentials and
    query are left out and ``…/v1`` is read as the server root (``endpoint_root``). Either may be masked
    (``run.json`` keeps a ``--base-url`` with its credentials masked); another password is the same
    endpoint."""
    return endpoint_root(shown_url(a)) == endpoint_root(shown_url(b))


def withheld_credentials(url: str | None) -> bool:
    """Whether ``url`` is a base URL as ``run.json`` keeps it with the credentials it carried masked
    (``user:pass@``, ``?token=``): they are stored nowhere, so it cannot be called as it is."""
    return bool(url) and MASK_PREFIX in str(url)


def live_source(provider: str, base_url: str | None) -> str:
    """``live`` when ``base_url`` is None or an https URL on one of the provider's official hosts (or
    their subdomains; Vertex's regional ``<region>-aiplatform.googleapis.com`` too), else ``endpoint``."""
    if not base_url:
        return "live"
    from urllib.parse import urlsplit

    parts = urlsplit(_without_userinfo(base_url if "://" in base_url else f"https://{base_url}"))
    host = (parts.hostname or "").lower().rstrip(".")
    for h in OFFICIAL_HOSTS.get(provider, ()):
        if parts.scheme == "https" and (host == h or host.endswith(("." + h, "-" + h))):
            return "live"
    return "endpoint"


def base_url_variable(provider: str, bundle: AgentBundle | None) -> str | None:
    """The environment variable a run on ``provider`` takes its base URL from (``OPENAI_BASE_URL`` …): for
    ``langgraph`` the variable of the one vendor its chat models speak; None when there is no one."""
    wire: str | None = provider
    if provider == "langgraph" and bundle is not None:
        from portagent.adapters.langgraph.rules import wires

        spoken = wires(bundle)
        wire = spoken[0] if len(spoken) == 1 else None
    info = REGISTRY.get(wire) if wire is not None else None
    return info.base_url_env if info is not None else None


def base_url_from_env(provider: str, bundle: AgentBundle | None) -> str | None:
    name = base_url_variable(provider, bundle)
    return (os.environ.get(name) if name else None) or None


def labelled(
    provider: str, endpoint: Endpoint, recorded: Recorded | None = None, bundle: AgentBundle | None = None
) -> tuple[Endpoint, dict[str, Any]]:
    """The endpoint with its honest source (DESIGN §9), and the provenance fields for the manifest.

    A ``live`` endpoint without a base URL takes the provider's base-URL variable (``OPENAI_BASE_URL`` …)
    the way every adapter then uses it — for ``langgraph``, the variable of the one vendor its chat models
    speak (agents on several vendors leave each client to its own variable) —; a base URL off the vendor's
    official hosts makes it ``endpoint``. The URL is kept as its server root (``endpoint_root``: the
    ``…/v1`` form ``portagent emulate`` prints for ``OPENAI_BASE_URL`` and the bare root are one endpoint). A replay is ``replay`` and keeps the recording's own source as
    ``recorded_source``."""
    import dataclasses

    extra: dict[str, Any] = {}
    if endpoint.mode == "replay" or endpoint.source == "replay":
        m = recorded.record.manifest if recorded is not None else None
        rec: str | None = (m.recorded_source if m.source == "replay" else m.source) if m is not None else None
        if rec is None and endpoint.source != "replay":
            rec = endpoint.source
        return dataclasses.replace(endpoint, source="replay"), {"recorded_source": rec}
    if endpoint.source in ("live", "endpoint"):
        url = endpoint_root(endpoint.base_url or base_url_from_env(provider, bundle))
        endpoint = dataclasses.replace(endpoint, source=live_source(provider, url), base_url=url)
        if url:
            extra["base_url"] = shown_url(url)
    return endpoint, extra
