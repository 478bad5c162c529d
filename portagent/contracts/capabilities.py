"""Provider capability flags, kept as plain data so ``validate`` works before any adapter loads.

Each adapter publishes the same profile (``adapter.capabilities is PROFILES[name]``) and the
test-suite drives every flag against the adapter's real behaviour.
"""

from __future__ import annotations

from portagent.contracts._base import Contract


class ProviderCapabilities(Contract):
    """What a provider's native runtime can do."""

    handoffs: bool
    """A specialist can take over the conversation."""
    agents_as_tools: bool
    """A coordinator can call a sub-agent as a tool and keep control."""
    handoff_cycles: bool
    """The delegation graph may contain cycles (ADK needs a tree)."""
    structured_output: bool
    """The final output can be constrained to a JSON Schema."""
    sessions: bool
    """Conversation state can persist across runs."""
    streaming: bool
    """Model output can be streamed."""
    mcp: bool
    """MCP servers can be attached."""
    native_tracing: bool
    """The SDK has its own tracing (portagent replaces its exporter)."""
    vendor_cost: bool
    """The SDK reports the run's cost itself."""
    builtin_tools: bool
    """The runtime has its own built-in tools (governed, not executed, by the gateway)."""
    approvals_resume: bool
    """The SDK can resume a run paused for approval natively (portagent resumes by its journal, ADR 0007)."""


CAPABILITY_FLAGS: tuple[str, ...] = tuple(ProviderCapabilities.model_fields)

PROFILES: dict[str, ProviderCapabilities] = {
    "openai": ProviderCapabilities(
        handoffs=True,
        agents_as_tools=True,
        handoff_cycles=True,
        structured_output=True,
        sessions=True,
        streaming=True,
        mcp=True,
        native_tracing=True,
        vendor_cost=False,
        builtin_tools=False,
        approvals_resume=True,
    ),
    "claude": ProviderCapabilities(
        # Subagents run through the built-in Task/Agent tool: the parent keeps control.
        handoffs=False,
        agents_as_tools=True,
        handoff_cycles=False,
        structured_output=True,
        sessions=True,
        streaming=True,
        mcp=True,
        native_tracing=False,
        vendor_cost=True,
        builtin_tools=True,
        approvals_resume=False,
    ),
    "adk": ProviderCapabilities(
        # ADK sub_agents must form a tree: a cycle cannot be expressed. ADK 2.13 can pause and resume
        # for a confirmation natively (ResumabilityConfig + ToolContext.request_confirmation);
        # portagent resumes by replaying its own journal on every provider (ADR 0007).
        handoffs=True,
        agents_as_tools=True,
        handoff_cycles=False,
        structured_output=True,
        sessions=True,
        streaming=True,
        mcp=True,
        native_tracing=True,
        vendor_cost=False,
        builtin_tools=False,
        approvals_resume=True,
    ),
    "anthropic": ProviderCapabilities(
        # The plain Messages API through the anthropic SDK's tool runner: no agent runtime, so no handoff
        # (the runner's system prompt and tools are fixed for its loop); a sub-agent is a tool whose call
        # runs that agent's own tool runner (agent-as-tool). The API keeps no conversation state: a run's
        # several user messages are carried by the adapter. anthropic 2.14 traces through OpenTelemetry
        # (its ``open_telemetry`` client option); the adapter turns it off (docs/adapters/anthropic.md).
        handoffs=False,
        agents_as_tools=True,
        handoff_cycles=False,
        structured_output=True,
        sessions=True,
        streaming=True,
        mcp=True,
        native_tracing=True,
        vendor_cost=False,
        builtin_tools=False,
        approvals_resume=False,
    ),
    "langgraph": ProviderCapabilities(
        # An explicit StateGraph: handoffs change the agent in charge (any graph, cycles too), agents as
        # tools run the graph on a thread of their own. LangGraph checkpoints threads and resumes an
        # interrupt natively (Command(resume=...)); portagent resumes by replaying its journal (ADR 0007).
        handoffs=True,
        agents_as_tools=True,
        handoff_cycles=True,
        structured_output=True,
        sessions=True,
        streaming=True,
        mcp=True,
        native_tracing=True,
        vendor_cost=False,
        builtin_tools=False,
        approvals_resume=True,
    ),
}
"""Profiles of the adapters, in ``PROVIDERS`` order."""

BARE_MESSAGES_API = ProviderCapabilities(
    handoffs=False,
    agents_as_tools=False,
    handoff_cycles=False,
    structured_output=True,
    sessions=False,
    streaming=True,
    mcp=False,
    native_tracing=False,
    vendor_cost=False,
    builtin_tools=False,
    approvals_resume=False,
)
"""A plain chat/messages API with no agent runtime (for comparison in reports)."""


def missing_capabilities(required: list[str] | tuple[str, ...], profile: ProviderCapabilities) -> list[str]:
    """The required flags a profile lacks, in the order given."""
    return [flag for flag in required if not getattr(profile, flag)]


ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent on the Anthropic Messages API when the spec sets none (the API requires one): the
anthropic adapter and the langgraph adapter's ChatAnthropic send the same."""
