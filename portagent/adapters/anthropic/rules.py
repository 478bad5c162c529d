"""What the anthropic adapter notes about a spec (no SDK import).

The plain Messages API lacks nothing beyond its capability profile (``contracts/capabilities.py``: no
handoffs, no built-in tools): tool schemas are sent verbatim as ``input_schema``, agents as tools nest at
any depth, temperature and ``max_tokens`` exist. Where the adapter fills in what the spec leaves open,
the verdict says so in notes.
"""

from __future__ import annotations

from portagent.contracts.bundle import AgentBundle
from portagent.contracts.capabilities import ANTHROPIC_DEFAULT_MAX_TOKENS
from portagent.contracts.portability import Lack, claude_code_alias

DEFAULT_MAX_TOKENS = ANTHROPIC_DEFAULT_MAX_TOKENS
"""Sent when the spec sets no ``models.max_tokens``: the Messages API requires a value."""


def agent_max_tokens(bundle: AgentBundle, agent: str) -> int:
    """The ``max_tokens`` ``agent``'s requests send: its own ``models.max_tokens``; when its spec does not
    force its settings (a hand-written sub-agent without a limit of its own), the root's, as before; else the
    default the Messages API requires. A sub-agent forcing its own settings never runs under the root's limit."""
    own = bundle.agents[agent].spec.models
    inherited = None if own.force_shared_settings else bundle.spec.models.max_tokens
    return own.max_tokens or inherited or DEFAULT_MAX_TOKENS


def agent_temperature(bundle: AgentBundle, agent: str) -> float | None:
    """``agent``'s own forced temperature (never the root's), or None."""
    own = bundle.agents[agent].spec.models
    return own.temperature if own.force_shared_settings else None


def request_timeout_s(max_tokens: int) -> float:
    """Seconds one Messages API request may take, given explicitly to the SDK. Unstreamed, the anthropic SDK
    refuses a request that may take longer than 10 minutes by its own estimate (an hour per 128k output
    tokens: ``max_tokens`` over ~21 333, or over a model's lower non-streaming limit) with "Streaming is
    required…", unless a timeout is given — so a spec with ``max_tokens: 64000``, portable by every other
    measure, would fail at its first request. The timeout given is that estimate, never below the SDK's own
    default of 10 minutes: a long answer is waited for as long as the SDK expects it to take."""
    return max(600.0, 3600.0 * max_tokens / 128_000)


def lacks(bundle: AgentBundle) -> list[Lack]:
    """Nothing beyond the profile (kept as the vendor-rules seam every adapter has)."""
    return []


def notes(bundle: AgentBundle) -> list[str]:
    """Not lacks: where the adapter fills in what the spec leaves open."""
    out: list[str] = []
    models = bundle.spec.models
    if models.max_tokens is None:
        out.append(
            f"anthropic: models.max_tokens is not set; the Messages API requires one, {DEFAULT_MAX_TOKENS} is sent"
        )
    for name, node in bundle.agents.items():
        own = node.spec.models
        claude = own.claude or models.claude
        if not (own.anthropic or models.anthropic) and claude and not claude_code_alias(claude):
            out.append(f"anthropic: agent {name!r} has no models.anthropic; its models.claude id is used")
    return out
