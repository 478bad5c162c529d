"""AgentSpec and Budget (DESIGN §3)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from portagent.contracts._base import Contract, short_hash
from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.tool import SEMVER_RE, Effect, ToolSpec


class Budget(Contract):
    """Limits of one run; portagent counts them itself, the SDKs' own limits are only a backstop."""

    max_turns: Annotated[int, Field(ge=1)] = 10
    """Model calls, counted from ``model.call`` events (the design source's ``max_steps``)."""
    max_tool_calls: Annotated[int, Field(ge=1)] = 20
    """Tool calls, counted by the gateway (rejected calls included)."""
    max_cost_usd: Annotated[float | None, Field(gt=0)] = None
    """Model + executed tool cost."""
    timeout_s: Annotated[float, Field(gt=0)] = 120.0
    """Wall-clock limit; the run is cancelled after it."""


class ModelSettings(Contract):
    """Per-provider model ids plus shared settings."""

    openai: str | None = None
    """OpenAI model id (``gpt-4.1-mini``)."""
    claude: str | None = None
    """Claude model id."""
    adk: str | None = None
    """Gemini model id used through ADK."""
    anthropic: str | None = None
    """Claude model id used through the plain Messages API (the ``anthropic`` SDK's tool runner)."""
    langgraph: str | None = None
    """``<vendor>:<model id>`` of the LangChain chat model the LangGraph agent runs (``openai:gpt-4.1-mini``,
    ``anthropic:claude-sonnet-4-6``, ``google_genai:gemini-2.5-flash``)."""
    temperature: Annotated[float | None, Field(ge=0, le=2)] = None
    """Shared temperature."""
    max_tokens: Annotated[int | None, Field(ge=1)] = None
    """Shared output-token limit."""
    force_shared_settings: bool = False
    """When true, temperature/max_tokens are applied on every provider (recorded in ``run.started``)."""
    openai_api: Literal["responses", "chat_completions"] = "responses"
    """Which OpenAI wire API the openai-agents adapter uses."""

    def for_provider(self, provider: str) -> str | None:
        """The model id for ``provider``. ``anthropic`` runs the same Claude models as ``claude`` (the plain
        Messages API instead of Claude Code), so it falls back to ``models.claude`` when not set; ``langgraph``
        falls back to ``openai:`` + ``models.openai``."""
        if provider == "anthropic":
            return self.anthropic or self.claude
        if provider == "langgraph":  # unset: the OpenAI model through langchain-openai
            return self.langgraph or (f"openai:{self.openai}" if self.openai else None)
        return getattr(self, provider, None)


class Delegate(Contract):
    """A sub-agent this agent can hand off to or call as a tool."""

    agent: Annotated[str, Field(min_length=1)]
    """Path (relative to this file) of the sub-agent's spec."""
    kind: Literal["handoff", "agent_as_tool"] = "handoff"
    """``handoff``: the specialist takes over; ``agent_as_tool``: the coordinator keeps control."""
    description: str = ""
    """When to delegate (shown to the model)."""
    context: Literal["task", "handoff"] = "task"
    """What the sub-agent receives (``agent_as_tool`` only): ``task``, the coordinator's request alone (the
    vendor default); ``handoff``, a handoff package compacted from the run so far, then the request
    (docs/handoff.md "Delegation")."""

    @model_validator(mode="after")
    def _handoff_context_needs_agent_as_tool(self) -> Delegate:
        if self.context == "handoff" and self.kind != "agent_as_tool":
            raise ValueError(
                "context: handoff is only for kind: agent_as_tool (a 'handoff' hands over the whole "
                "conversation on every provider)"
            )
        return self


class McpServerRef(Contract):
    """An MCP server used as a tool source (docs/mcp.md).

    Its tools are listed once per run, wrapped as ToolSpecs named ``prefix + tool name`` and executed
    through portagent's gateway on every provider (never handed to a vendor's hosted MCP feature).
    Exactly one of ``command`` (stdio) and ``url`` (streamable HTTP) is given.
    """

    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")]
    """Server name: identifies the server in traces and recordings, and is the default tool-name prefix."""
    command: Annotated[list[str] | None, Field(min_length=1)] = None
    """stdio: the command and its arguments (``[python, server.py]``); run in ``cwd``."""
    url: Annotated[str | None, Field(pattern=r"^https?://")] = None
    """streamable HTTP: the endpoint URL (``http://127.0.0.1:8000/mcp``)."""
    env: dict[str, str] = {}
    """stdio: extra environment variables for the server; ``${NAME}`` is replaced by portagent's own
    variable, so no secret needs to be written in the spec."""
    cwd: str | None = None
    """stdio: working folder, relative to the spec file (default: the spec file's folder)."""
    allow: list[str] = []
    """Allow-list of the server's tool names (as the server names them); empty means every listed tool.
    A name the server does not list is an error when the run starts."""
    prefix: str | None = None
    """Prefix of the ToolSpec names (default ``<name>_``; ``""`` for none). Names must stay unique."""
    effects: dict[str, Effect] = {}
    """Effect class per tool name, overriding what its annotations imply."""
    trust_annotations: bool = True
    """Derive effect classes from the server's annotations (``readOnlyHint`` → ``read`` …); when false,
    every tool not in ``effects`` is ``external_effect``."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0
    """Limit for starting the server, its initialize handshake and the tool listing."""
    call_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30.0
    """Limit of one tool call (the wrapped ToolSpec's ``budgets.timeout_ms``)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerRef:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"MCP server {self.name!r}: give exactly one of 'command' (stdio) or 'url' (streamable HTTP)"
            )
        if self.url is not None and (self.env or self.cwd is not None):
            raise ValueError(f"MCP server {self.name!r}: 'env' and 'cwd' apply to a stdio 'command' only")
        if len(set(self.allow)) != len(self.allow):
            raise ValueError(f"MCP server {self.name!r}: the allow-list names a tool twice")
        return self

    @property
    def tool_prefix(self) -> str:
        return f"{self.name}_" if self.prefix is None else self.prefix

    def portable_name(self, tool: str) -> str:
        """The name an agent's policy and the model know a listed tool by: the prefix, then the server's
        name with characters outside ``[A-Za-z0-9_-]`` replaced by ``_`` (docs/mcp.md)."""
        return self.tool_prefix + re.sub(r"[^A-Za-z0-9_-]", "_", tool)


class A2AAgentRef(Contract):
    """A remote A2A agent whose skills this agent may use as tools (docs/a2a.md).

    Its AgentCard is read when a run starts (from ``url``'s well-known path, or a ``card`` file); each
    skill becomes a ToolSpec named ``prefix + skill id`` that the gateway runs like any local tool —
    policy, approvals, budgets and recordings apply — on every provider. Exactly one of ``url`` and
    ``card`` is given; with ``card``, calls go to the card's own interface URL.
    """

    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")]
    """Identifies the agent in traces and recordings; the default tool-name prefix."""
    url: Annotated[str | None, Field(pattern=r"^https?://")] = None
    """Base URL of the agent; its card is read from ``<url>/.well-known/agent-card.json``."""
    card: str | None = None
    """An AgentCard JSON file (relative to the spec file) instead of fetching one."""
    skills: list[Annotated[str, Field(min_length=1)]] = []
    """Skill ids to use (empty: every skill of the card). A skill the card lacks is an error when the
    run starts."""
    prefix: str | None = None
    """Prefix of the ToolSpec names (default ``<name>_``)."""
    effect: Effect = "external_effect"
    """Effect class of every skill (a remote agent acts on its own: ``external_effect`` unless said)."""
    effects: dict[str, Effect] = {}
    """Effect class per skill id, overriding ``effect``."""
    token_env: Annotated[str | None, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] = None
    """Environment variable holding the bearer token the agent requires (never written in the spec)."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """Limit of reading the card, and of one call (the ToolSpec's ``budgets.timeout_ms``)."""

    @model_validator(mode="after")
    def _one_source(self) -> A2AAgentRef:
        if (self.url is None) == (self.card is None):
            raise ValueError(f"A2A agent {self.name!r}: give exactly one of 'url' or 'card'")
        if len(set(self.skills)) != len(self.skills):
            raise ValueError(f"A2A agent {self.name!r}: 'skills' names a skill twice")
        return self

    @property
    def tool_prefix(self) -> str:
        return f"{self.name}_" if self.prefix is None else self.prefix

    def tool_name(self, skill_id: str) -> str:
        """The ToolSpec name of a skill: the prefix, then the skill id with characters outside
        ``[A-Za-z0-9_-]`` replaced by ``_``."""
        return self.tool_prefix + re.sub(r"[^A-Za-z0-9_-]", "_", skill_id)


class AgentSpec(Contract):
    """One agent, portable across providers."""

    kind: Literal["agent"] = "agent"
    """File kind marker."""
    schema_version: Literal[1] = 1
    """Version of this file format."""
    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")]
    """Agent name (an identifier: ADK and handoff tool names require it)."""
    version: Annotated[str, Field(pattern=SEMVER_RE)] = "1.0.0"
    """Semantic version."""
    description: str = ""
    """What the agent is for (shown to a coordinator that delegates to it)."""
    instructions: Annotated[str, Field(min_length=1)]
    """System instructions."""
    models: ModelSettings = ModelSettings()
    """Model ids per provider and shared settings."""
    tool_files: list[str] = []
    """Files (``kind: tool`` or ``kind: tools``), relative to this spec, where named tools are found."""
    tools: list[str | ToolSpec] = []
    """Tool names (found in ``tool_files``) or inline ToolSpecs."""
    builtin_tools: list[str] = []
    """Vendor built-in tools granted by name (Claude Code's ``Read``, ``Bash`` …); governed by the policy."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of a structured final output."""
    delegation: list[Delegate] = []
    """Sub-agents."""
    budget: Budget = Budget()
    """Run limits."""
    max_context_tokens: Annotated[int | None, Field(ge=1)] = None
    """Context budget of one model call (estimated tokens): session history that does not fit is left out
    (oldest first) and every model call gets a ``context.manifest`` event (docs/context.md)."""
    route: str | None = None
    """Name of the specialist expected to produce the final output in a multi-agent spec."""
    required_capabilities: list[str] = []
    """Capability flags the spec needs (checked against each provider's profile)."""
    policy: str | PermissionPolicy | None = None
    """Path to a policy file, or an inline policy; none means effect-class defaults."""
    mcp_servers: list[McpServerRef] = []
    """MCP servers whose tools this agent may use (listed when a run starts; docs/mcp.md)."""
    a2a_agents: list[A2AAgentRef] = []
    """Remote A2A agents whose skills this agent may use as governed tools (docs/a2a.md)."""

    @field_validator("required_capabilities")
    @classmethod
    def _known_caps(cls, v: list[str]) -> list[str]:
        from portagent.contracts.capabilities import CAPABILITY_FLAGS

        unknown = [c for c in v if c not in CAPABILITY_FLAGS]
        if unknown:
            raise ValueError(f"unknown capability {unknown[0]!r}; known: {', '.join(CAPABILITY_FLAGS)}")
        return v

    @property
    def instructions_hash(self) -> str:
        return short_hash(self.instructions)

    @property
    def spec_hash(self) -> str:
        return short_hash(self.hash_payload())
