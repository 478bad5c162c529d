"""The AgentCard of a served agent, generated from its AgentSpec (never written by hand).

- identity: the spec's name, description (or the first line of its instructions) and version;
- one skill, the agent itself (id = the agent's name), tagged with its tools and sub-agents;
- modes: text in; text out, or ``application/json`` when the spec has an ``output_schema``;
- capabilities: streaming (no push notifications);
- a bearer security scheme, required, when the server was started with a token.
"""

from __future__ import annotations

from typing import Any

from portagent.contracts.bundle import AgentBundle

PROTOCOL_VERSION = "1.0"
"""The A2A protocol version of the served interface (``message/send`` of 0.3 is accepted too)."""
BEARER_SCHEME = "bearer"
"""Name of the card's security scheme when a token is configured."""


def _summary(bundle: AgentBundle) -> str:
    spec = bundle.spec
    if spec.description.strip():
        return spec.description.strip()
    first = spec.instructions.strip().splitlines()[0] if spec.instructions.strip() else spec.name
    return first[:300]


def skill_tags(bundle: AgentBundle) -> list[str]:
    """The root agent's tools and its sub-agents' names, sorted (what the skill can reach)."""
    node = bundle.node
    tags = set(node.tools)
    tags |= {name for name in bundle.agents if name != bundle.root}
    return sorted(tags)


def output_modes(bundle: AgentBundle) -> list[str]:
    return ["application/json"] if bundle.spec.output_schema is not None else ["text/plain"]


def build_card(bundle: AgentBundle, url: str, *, secured: bool) -> Any:
    """The ``a2a.types.AgentCard`` served at ``/.well-known/agent-card.json``."""
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )

    spec = bundle.spec
    skill = AgentSkill(
        id=spec.name,
        name=spec.name,
        description=_summary(bundle),
        tags=skill_tags(bundle),
        input_modes=["text/plain"],
        output_modes=output_modes(bundle),
    )
    card = AgentCard(
        name=spec.name,
        description=_summary(bundle),
        version=spec.version,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=output_modes(bundle),
        skills=[skill],
    )
    if secured:
        card.security_schemes[BEARER_SCHEME].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="Authorization: Bearer <token> on every call"
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER_SCHEME: StringList(list=[])}))
    return card
