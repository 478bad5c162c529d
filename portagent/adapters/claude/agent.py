"""Claude Agent SDK adapter (claude-agent-sdk 0.2.189, bundled Claude Code CLI 2.1.332).

Translation only:

- AgentSpec → ``ClaudeSDKClient(ClaudeAgentOptions(system_prompt, model, tools=[…], mcp_servers, …))``, one
  ``query``/``receive_response`` round per user message, run through portagent's transport wrapper
  (``transport``: the cassette seam);
- ToolSpec → an in-process SDK MCP tool (``tool()`` + ``create_sdk_mcp_server("portagent")``); the
  model sees ``mcp__portagent__<tool>``, every trace event uses the ToolSpec name;
- permission → ``can_use_tool`` asks the gateway (``prepare``: validation, budget, policy, approval —
  decided once, cached by call id) and the MCP tool body runs the prepared call (``execute``), found
  through the vendor ``tool_use`` id; ``PreToolUse`` maps each call to the agent that made it and
  records delegation; ``permission_mode="default"``, never ``bypassPermissions``;
- built-in Claude Code tools are off (``tools=[]``) unless the AgentSpec grants them by name; a granted
  one is *governed, not executed* by the gateway: decided in ``can_use_tool`` by the same policy
  (``BUILTIN_EFFECTS``), observed through ``PostToolUse``, traced with ``via: builtin``;
- delegation (``agent_as_tool``) → ``agents={…}`` subagents run by the built-in Agent tool, enabled
  only when the spec delegates; the main thread runs as the root's own agent definition
  (``--agent``) so each agent sees only its own tools;
- events → ``trace.ClaudeTrace`` (model calls with usage, subagent threads);
  ``ResultMessage`` → the outcome (vendor ``total_cost_usd``, turn and budget stops).

Isolation: every run gets a throw-away HOME / CLAUDE_CONFIG_DIR / TMPDIR (removed afterwards),
``setting_sources=[]``, ``strict_mcp_config``, no session persistence and
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` — nothing of the user's Claude configuration leaks in.

``session.options.extra`` keys: ``cli_path`` (a Claude Code binary, e.g. on musl/Alpine where no
wheel bundles one), ``cwd`` (the CLI's working directory; default a folder inside the run home),
``max_retries`` (the CLI's model-call retries, default 2), ``claude_transport_factory`` (see
``transport``).
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AgentDefinition,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ClaudeSDKError,
    CLIConnectionError,
    CLINotFoundError,
    HookMatcher,
    ProcessError,
    ResultMessage,
    create_sdk_mcp_server,
    tool,
)
from claude_agent_sdk._cli_version import __cli_version__
from claude_agent_sdk._errors import CLIJSONDecodeError, ResultError

from portagent.adapters._shared import observation_json
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.claude import rules
from portagent.adapters.claude.session import ClaudeCassette, open_cassette
from portagent.adapters.claude.trace import ClaudeTrace
from portagent.adapters.claude.transport import (
    TRANSPORT_FACTORY_KEY,
    PortagentTransport,
    RunHome,
    subprocess_transport,
)
from portagent.adapters.port import RunSession, RunSignal
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import ProviderError, UsageError
from portagent.contracts.portability import Verdict
from portagent.contracts.tool import ToolSpec
from portagent.core.versions import PORTAGENT_VERSION as __version__
from portagent.recording.vcr_cassette import find_mismatch
from portagent.tools.gateway import PreparedCall

DEFAULT_CLAUDE_MODEL = "claude-sonnet-4-6"
"""The Claude model pinned for examples and tests: current, not deprecated (anthropic 2.14 lists
``claude-sonnet-4-5`` as reaching end of life on 2026-11-30, not this one), accepted by Claude Code
2.1.332 and priced in its table at $3 / $15 per million tokens (the emulator run's ``total_cost_usd``
matches; ``genai-prices`` agrees)."""

from portagent.adapters.claude.tools import (  # noqa: E402  (constants kept importable from here)
    SERVER,
    TOOL_PREFIX,
    _ToolHooks,
    builtin_spec,
)


class _Run(_ToolHooks):
    """One run: the options, the callbacks the CLI reaches us through, and the outcome."""

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.bundle = session.bundle
        self.root = session.bundle.root
        self.trace = ClaudeTrace(session)
        self.transport: PortagentTransport | None = None
        self.stderr: deque[str] = deque(maxlen=40)
        self.callers: dict[str, str | None] = {}
        """``tool_use`` id → agent that made the call (from ``PreToolUse``)."""
        self.allowed: dict[str, tuple[str, PreparedCall]] = {}
        """``tool_use`` id → (agent, prepared call) allowed in ``can_use_tool``, awaiting execution."""
        self.started: dict[str, float] = {}
        self.delegating = any(n.edges for n in self.bundle.agents.values())
        self.builtins = {
            name: sorted(set(node.spec.builtin_tools)) for name, node in self.bundle.agents.items()
        }

    # --- checks before anything starts -----------------------------------------------------------

    def preflight(self) -> None:
        # The runner asks the whole verdict first (adapters/portability.py); asking this vendor's rules here too keeps the adapter safe when it is
        # driven directly (nested delegation, the reserved subagent tool, a forced temperature).
        Verdict("claude", tuple(rules.lacks(self.bundle))).raise_if_unrunnable()
        endpoint = self.session.endpoint
        if (
            endpoint.mode == "replay"
            and endpoint.cassette_dir is None
            and TRANSPORT_FACTORY_KEY not in self.session.options.extra
        ):
            # A replay must never start the CLI against a real endpoint: it needs a transport cassette.
            raise UsageError(
                "a Claude replay needs a transport cassette: set Endpoint.cassette_dir to a recorded "
                "run folder (transport.jsonl) or pass a replay transport as "
                f"RunOptions.extra[{TRANSPORT_FACTORY_KEY!r}] (see docs/cassettes.md)"
            )
        cli_path = self.session.options.extra.get("cli_path")
        if cli_path is not None:
            path = Path(cli_path)
            if not path.is_file():
                raise UsageError(
                    f"cli_path {str(cli_path)!r}: no such file (it must point to a Claude Code binary)"
                )
            if not os.access(path, os.X_OK):
                raise UsageError(
                    f"cli_path {str(cli_path)!r} is not executable (chmod +x it, or point cli_path "
                    "to another Claude Code binary)"
                )

    # --- native objects --------------------------------------------------------------------------

    def tool_specs(self) -> dict[str, ToolSpec]:
        specs: dict[str, ToolSpec] = {}
        for node in self.bundle.agents.values():
            for name, spec in node.tools.items():
                if name in specs and specs[name].spec_hash != spec.spec_hash:
                    raise UsageError(
                        f"two agents define the tool {name!r} differently; Claude exposes every tool "
                        f"through one MCP server ({SERVER!r}), so names must be unique"
                    )
                specs[name] = spec
        return specs

    def mcp_tool(self, spec: ToolSpec) -> Any:
        async def body(args: dict[str, Any]) -> dict[str, Any]:
            obs = await self.execute(spec.name, args)
            return {"content": [{"type": "text", "text": observation_json(obs)}], "is_error": not obs.ok}

        return tool(spec.name, spec.model_description(), spec.input_schema)(body)

    def agent_tools(self, name: str) -> list[str]:
        node = self.bundle.agents[name]
        out = [TOOL_PREFIX + t for t in node.tools] + self.builtins[name]
        if any(e.kind == "agent_as_tool" for e in node.edges):
            out.append("Agent")
        if node.spec.output_schema is not None:
            # With --output-format json-schema the CLI answers through its StructuredOutput tool; an agent
            # definition that does not list it gets "No such tool available: StructuredOutput".
            out.append("StructuredOutput")
        return out

    def agents(self) -> dict[str, AgentDefinition] | None:
        if not self.delegating:
            return None
        defs: dict[str, AgentDefinition] = {}
        described = {e.target: e.description for e in self.bundle.node.edges}
        for name, node in self.bundle.agents.items():
            tools = self.agent_tools(name)
            if not tools:  # the CLI refuses an agent whose tool list resolves to nothing
                tools_arg, disallowed = (
                    None,
                    sorted({t for a in self.bundle.agents for t in self.agent_tools(a)}),
                )
            else:
                tools_arg, disallowed = tools, None
            defs[name] = AgentDefinition(
                description=described.get(name) or node.spec.description or name,
                prompt=node.spec.instructions,
                tools=tools_arg,
                disallowedTools=disallowed,
                model=self.session.model_for(name),
            )
        return defs

    def options(self, home: RunHome, base_url: str | None = None) -> ClaudeAgentOptions:
        """``base_url``: where the CLI sends its model calls instead of the endpoint (the recording proxy)."""
        s = self.session
        spec = self.bundle.spec
        specs = self.tool_specs()
        for name, granted in self.builtins.items():
            gateway = s.gateway(name)
            # The approval card shows where a built-in runs. The default working folder is the run's own
            # temporary one: named, not spelled out, so replays give byte-identical traces.
            where = (
                str(s.options.extra["cwd"]) if s.options.extra.get("cwd") else "<isolated run folder>/work"
            )
            for b in granted:
                gateway.register_governed(builtin_spec(b), {"cwd": where})  # decided here, run by the CLI
        builtins = sorted({b for granted in self.builtins.values() for b in granted})
        # Claude Code retries a failed model call 10 times by default (minutes against an unreachable
        # endpoint); 2, like the vendor's Python SDKs, unless extra["max_retries"] says otherwise.
        extra_env: dict[str, str] = {"CLAUDE_CODE_MAX_RETRIES": str(s.options.extra.get("max_retries", 2))}
        if spec.models.force_shared_settings and spec.models.max_tokens is not None:
            extra_env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(spec.models.max_tokens)
        extra_args: dict[str, str | None] = {"no-session-persistence": None}
        if self.delegating:
            extra_args["agent"] = self.root  # the main thread runs as the root's definition: its tools only
        server = create_sdk_mcp_server(
            SERVER, version=__version__, tools=[self.mcp_tool(t) for t in specs.values()]
        )
        hooks: dict[Any, list[HookMatcher]] = {
            "PreToolUse": [HookMatcher(matcher=None, hooks=[self.pre_tool_use])]
        }
        observed = builtins + (["Agent"] if self.delegating else [])
        if (
            observed
        ):  # results are observed only for built-ins (and the Agent tool's usage): no extra round trips
            matcher = "|".join(observed)
            hooks["PostToolUse"] = [HookMatcher(matcher=matcher, hooks=[self.post_tool_use])]
            hooks["PostToolUseFailure"] = [HookMatcher(matcher=matcher, hooks=[self.post_tool_use_failure])]
        return ClaudeAgentOptions(
            system_prompt=spec.instructions,
            model=s.model_for(self.root),
            tools=builtins + (["Agent"] if self.delegating else []),
            mcp_servers={SERVER: server} if specs else {},
            strict_mcp_config=True,
            permission_mode="default",
            can_use_tool=self.can_use_tool,
            hooks=hooks,
            # portagent counts turns and cost itself; the CLI's own limits are a backstop.
            max_turns=spec.budget.max_turns,
            max_budget_usd=spec.budget.max_cost_usd,
            agents=self.agents(),
            setting_sources=[],
            cwd=str(home.cwd),
            cli_path=s.options.extra.get("cli_path"),
            env=home.env(
                base_url=base_url or s.endpoint.client_url, api_key=s.endpoint.api_key, extra=extra_env
            ),
            extra_args=extra_args,
            include_partial_messages=True,
            forward_subagent_text=True,
            output_format={"type": "json_schema", "schema": spec.output_schema}
            if spec.output_schema
            else None,
            stderr=self.stderr.append,
        )

    # --- the CLI's callbacks ---------------------------------------------------------------------

    async def go(self, cassette: ClaudeCassette | None = None) -> AdapterOutcome:
        """Run the conversation; in record/replay mode through ``cassette``'s transport (and proxy)."""
        self.preflight()
        s = self.session
        cwd = s.options.extra.get("cwd")
        home = RunHome(s.options.workdir, Path(cwd) if cwd else None)
        try:
            options = self.options(home, cassette.start() if cassette is not None else None)
            # The SDK adds permission_prompt_tool_name="stdio" when can_use_tool is set, but a custom transport
            # gets its CLI flags only from its own options (SDK_NOTES §4.6): the inner transport is built with it.
            cli_options = replace(options, permission_prompt_tool_name="stdio")
            factory = s.options.extra.get(TRANSPORT_FACTORY_KEY) or subprocess_transport
            if cassette is not None:  # records around the factory's transport, or replays without it
                factory = cassette.transport_factory(factory)
            self.transport = PortagentTransport(factory(s.request.messages[0], cli_options))
            # ClaudeSDKClient rather than query(): an explicit disconnect() always closes the CLI (closing a
            # query() generator early leaves its inner generator, and the CLI, to the garbage collector),
            # and each user message of a multi-turn request is one query/response round in one session.
            client = ClaudeSDKClient(options=options, transport=self.transport)
            try:
                await client.connect()
                for text in s.request.messages:
                    await client.query(text)
                    if not await self.consume(client.receive_response()):
                        break
            except BaseException as e:
                self.transport.abort()  # cancelled (timeout_s) or failed: do not wait for the CLI
                if isinstance(e, Exception):
                    _raise_mapped(e, self)
                raise
            finally:
                if s.stop is not None:
                    self.transport.abort()
                with contextlib.suppress(Exception):
                    await client.disconnect()
                with contextlib.suppress(RunSignal):
                    self.trace.finish()
            return self.outcome()
        finally:
            home.remove()

    async def consume(self, stream: AsyncIterator[Any]) -> bool:
        """One turn's messages; False when the run must not go on (a stop signal, an error result)."""
        async for message in stream:
            try:
                self.trace.on_message(message)
            except RunSignal:
                return False
            if self.session.stop is not None:
                return False
            if isinstance(message, ResultMessage):
                return not message.is_error
        return False

    def outcome(self) -> AdapterOutcome:
        s = self.session
        budget = self.bundle.spec.budget
        result = self.trace.results[-1] if self.trace.results else None
        details: dict[str, Any] = {
            "cli_version": self.trace.init.get("claude_code_version"),
            "mcp_servers": self.trace.init.get("mcp_servers"),
        }
        if result is None:
            if s.stop is not None:
                return AdapterOutcome(final_agent=self.root, details=details)
            raise ProviderError("the Claude Code CLI ended without a result" + self._stderr_tail())
        details.update(
            session_id=result.session_id,
            num_turns=result.num_turns,
            subtype=result.subtype,
            permission_denials=result.permission_denials or [],
            cli_usage=self.trace.cli_usage(),
            terminal_reason=result.terminal_reason,
        )
        if self.trace.retries:
            details["api_retries"] = self.trace.retries
        unattributed = self.trace.unattributed_output_tokens()
        if unattributed:
            details["unattributed_output_tokens"] = unattributed
        outcome = AdapterOutcome(
            final_agent=self.root, vendor_cost_usd=result.total_cost_usd, details=details
        )
        if s.stop is not None:
            return outcome
        if result.subtype == "error_max_turns":
            s.budget_stop("max_turns", budget.max_turns, s.model_calls + 1)
            outcome.vendor_stop = "max_turns"
            return outcome
        if result.subtype == "error_max_budget_usd":
            limit = budget.max_cost_usd or 0.0
            s.budget_stop("max_cost_usd", limit, round(result.total_cost_usd or 0.0, 6))
            outcome.vendor_stop = "max_cost_usd"
            return outcome
        if result.is_error:
            status = result.api_error_status
            raise ProviderError(
                f"Claude Code failed: {_result_text(result)}",
                status=status,
                retryable=REGISTRY["claude"].retryable(status),
            )
        final: Any = result.result
        if self.bundle.spec.output_schema is not None and result.structured_output is not None:
            final = result.structured_output
        outcome.final_output = final
        return outcome

    def _stderr_tail(self) -> str:
        return (":\n" + "\n".join(self.stderr)) if self.stderr else ""


def _result_text(result: ResultMessage) -> str:
    raw: list[object] = list(result.errors or [])  # the CLI's JSON: checked, not trusted
    errors = [e for e in raw if isinstance(e, str) and e.strip()]
    return "; ".join(errors) or (result.result or "").strip() or result.subtype


def _raise_mapped(e: BaseException, run: _Run) -> None:
    """The one place SDK and CLI errors become portagent errors."""
    session = run.session
    session.reraise_signal(e)
    cli_path = session.options.extra.get("cli_path")
    where = f"cli_path {str(cli_path)!r}" if cli_path else "the bundled Claude Code CLI"
    if isinstance(e, CLINotFoundError):
        raise UsageError(
            f"cannot start {where}: {e}. claude-agent-sdk bundles the CLI only in its glibc wheels (none for "
            "musl/Alpine); install Claude Code and pass its path as cli_path"
        ) from e
    if isinstance(e, ResultError):
        status = e.api_error_status
        raise ProviderError(
            f"Claude Code failed: {e.result or '; '.join(e.errors) or e}",
            status=status,
            retryable=REGISTRY["claude"].retryable(status),
        ) from e
    if isinstance(e, CLIConnectionError):
        if isinstance(e.__cause__, OSError) and not run.trace.init:
            raise UsageError(
                f"cannot start {where}: {e} (set cli_path to an executable Claude Code binary)"
            ) from e
        raise ProviderError(f"lost the connection to the Claude Code CLI: {e}{run._stderr_tail()}") from e
    if isinstance(e, ProcessError):
        raise ProviderError(f"the Claude Code CLI exited with code {e.exit_code}{run._stderr_tail()}") from e
    if isinstance(e, CLIJSONDecodeError):
        raise ProviderError(f"the Claude Code CLI wrote a line that is not JSON: {e.line[:200]!r}") from e
    if isinstance(e, ClaudeSDKError):
        raise ProviderError(f"claude-agent-sdk error: {type(e).__name__}: {e}") from e
    raise e


class ClaudeAgentAdapter:
    name = "claude"
    capabilities = PROFILES["claude"]

    def sdk_version(self) -> str:
        return package_version("claude-agent-sdk")

    def cli_version(self) -> str | None:
        return __cli_version__

    async def run(self, session: RunSession) -> AdapterOutcome:
        cassette = open_cassette(session)
        if cassette is None:
            return await _Run(session).go()
        # record / replay: the CLI's side is recorded or played back by the transport (vcrpy cannot see the
        # CLI's HTTP; the runner leaves Claude runs to this adapter). docs/cassettes.md.
        session.cassette_report = cassette.report
        failure: BaseException | None = None
        try:
            outcome = await _Run(session).go(cassette)
        except BaseException as e:  # finish the cassette first (outside this handler: see below)
            failure = e
        # Not in a finally: a refused recording (RecordingError) must not carry the run's own exception as
        # its context, where the runner would find a stop signal and take the run as recorded.
        cassette.finish()
        if failure is not None and (cassette.drift is None or find_mismatch(failure) is not None):
            raise failure  # (a drift raised through the SDK is already in the chain: the runner finds it)
        if cassette.drift is not None:  # drift explains whatever else went wrong (or a drifted last answer)
            raise cassette.drift from failure
        return outcome


ADAPTER = ClaudeAgentAdapter()
