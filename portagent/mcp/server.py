"""``portagent mcp serve``: governed ToolSpecs offered to any MCP client (docs/mcp.md).

Each ToolSpec becomes an MCP tool with its JSON Schema, its model-facing description and annotations
stating its effect class (``annotations.hints_for``; the exact class is also in ``_meta``
``portagent/effect``). Every ``tools/call`` goes through one ``ToolGateway`` — schema, preconditions,
policy, approvals, idempotency, execution, output checks — and is traced with ``via: mcp``.

    MCP client ──tools/call──► GovernedServer.call ──► ToolGateway.call(via="mcp") ──► handler
                                     ▲                    │ tool.call … tool.result → trace.jsonl
                                     └── CallToolResult ◄─┘ (isError for every rejection)

Approvals: the approver is ``defer``, so a call the policy sends to approval answers an error result
naming the pending approval id and the state folder holding it; a person decides it with
``PORTAGENT_HOME=<home> portagent approvals approve|reject|edit ID`` and the client calls again with the
same arguments: the gateway finds the decided card (same namespace, tool and arguments) and applies it.
The namespace is stable across restarts of the server (``mcp-serve:<name>``, or ``--namespace``), so a
stdio client that restarts the server still finds it. Over HTTP a card is bound to the client that asked:
its namespace carries the MCP session id (legacy streamable HTTP) and, with bearer tokens, which token
the client presented — a card approved for one client's call is never consumed by another client
sending the same arguments (each such client gets a card of its own). Effects (the ledger) are
namespaced the same way.

HTTP safety: the Host and Origin headers are checked against an allowlist on every bind (loopback names,
the bound address, ``--allow-host``/``--allow-origin``); a bind that is not loopback is refused unless a
bearer token is set (``--auth-token`` or ``PORTAGENT_MCP_TOKEN``), and with a token every request must
carry ``Authorization: Bearer <token>``.

One serve session (one process) is one trace: ``run.started`` when it starts, the calls as they come,
``run.completed`` when it stops; the file is flushed after every call. A call whose ``_meta`` carries a
W3C ``traceparent`` joins the caller's trace instead: its events (``tool.call`` … ``tool.result``) have
the caller's trace id and name the caller's span as their parent (a malformed value is ignored). Run budgets (``max_tool_calls``,
``max_cost_usd``) do not apply to a long-lived server; each tool's own budgets do.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import shlex
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from portagent.contracts._base import repeated
from portagent.contracts.errors import UsageError
from portagent.contracts.policy import Environment, PermissionPolicy
from portagent.contracts.tool import ToolSpec
from portagent.core import serving
from portagent.core.clock import Clock, IdFactory, SystemClock
from portagent.tools.mcp.annotations import hints_for
from portagent.tools.observations import Observation

EFFECT_META = "portagent/effect"
"""``_meta`` key holding a served tool's exact effect class (a portagent client reads it back)."""
VERSION_META = "portagent/version"


@dataclass
class ServeTarget:
    """What one ``mcp serve`` offers: tools, their policy, and where handlers resolve."""

    name: str
    tools: dict[str, ToolSpec]
    policy: PermissionPolicy
    base_dir: Path
    version: str = "1.0.0"
    spec_hash: str = ""
    policy_hash: str = ""
    bundle: Any = None
    """The agent bundle, when serving an agent (its MCP sources are opened by ``serve``)."""


def load_target(path: str | Path, policy_path: str | Path | None = None) -> ServeTarget:
    """A tools file (``kind: tool|tools``, with ``--policy`` or effect defaults) or an agent spec (its
    own tools and policy; sub-agents are not served)."""
    from portagent.contracts._base import short_hash
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.loader import load_spec_file
    from portagent.contracts.tool import ToolSet

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{path}: no such file (expected a tools file or an agent spec)")
    # Without a model class the file's own ``kind:`` picks the contract: any spec model.
    data: BaseModel = load_spec_file(p)
    kind = getattr(data, "kind", None)
    if kind == "agent":
        if policy_path is not None:
            raise UsageError("--policy goes with a tools file; an agent spec names its own policy")
        bundle = load_agent(p)
        node = bundle.node
        return ServeTarget(
            node.name,
            dict(node.tools),
            node.policy,
            p.parent.resolve(),
            node.spec.version,
            bundle.spec_hash,
            short_hash(node.policy.hash_payload()),
            bundle,
        )
    if isinstance(data, ToolSpec):
        tools = [data]
    elif isinstance(data, ToolSet):
        tools = list(data.tools)
    else:
        raise UsageError(
            f"{path}: mcp serve takes a tools file (kind: tool or tools) or an agent spec, not kind {kind!r}"
        )
    names = [t.name for t in tools]
    dupes = repeated(names)
    if dupes:
        raise UsageError(f"{path}: duplicate tool name {dupes[0]!r}")
    policy = PermissionPolicy()
    if policy_path is not None:
        if not Path(policy_path).is_file():
            raise UsageError(f"{policy_path}: policy file not found")
        policy = load_spec_file(policy_path, PermissionPolicy)
    by_name = {t.name: t for t in tools}
    name = p.resolve().parent.name if p.stem in ("tools", "tool") else p.stem  # support_desk, not "tools"
    return ServeTarget(
        name or p.stem,
        by_name,
        policy,
        p.parent.resolve(),
        "1.0.0",
        short_hash({n: t.hash_payload() for n, t in sorted(by_name.items())}),
        short_hash(policy.hash_payload()),
    )


def mcp_tool(tool: ToolSpec) -> Any:
    """The MCP tool declaration of a ToolSpec."""
    import mcp_types as types

    hints = hints_for(tool)
    return types.Tool(
        name=tool.name,
        description=tool.model_description(),
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
        _meta={EFFECT_META: tool.effect, VERSION_META: tool.version},
    )


def result_text(
    obs: Observation, model: dict[str, Any], home: Path | None = None, client: str | None = None
) -> str:
    """The text content of a result: the observation as JSON, or for a rejection a sentence a person
    (or a model) can act on. A pending approval says where its card is and the command that decides it;
    when the card is bound to an MCP session (``client`` has ``session:``), that the retry must come in
    the same session (a one-shot client such as the Inspector CLI reconnects and is asked again)."""
    if obs.ok:
        return json.dumps(_finite(model), ensure_ascii=False, sort_keys=True, allow_nan=False)
    text = f"{obs.error}: {obs.message}" if obs.message else str(obs.error)
    approval_id = model.get("approval_id")
    if approval_id is None and isinstance(obs.details, dict):
        approval_id = obs.details.get("approval_id")
    if obs.error == "approval_required" and approval_id:
        from portagent.core.home import APPROVALS_DB, ENV_VAR

        where = f" in {home / APPROVALS_DB}" if home is not None else ""
        env = f"{ENV_VAR}={shlex.quote(str(home))} " if home is not None else ""
        text += (
            f". Approval {approval_id} is pending{where}: a person decides it with "
            f"`{env}portagent approvals approve {approval_id}` (or reject / edit; `{env}portagent approvals "
            f"show {approval_id}` shows the card); then this client calls the tool again with the same "
            "arguments and the decision applies (the card is bound to this client"
        )
        if client is not None and "session:" in client:
            text += (
                " and to its MCP session: call again in the same session; a client that reconnects, "
                "such as a one-shot CLI call, gets a new session and a new card — use stdio for that"
            )
        text += ")."
    return text


def _finite(value: Any) -> Any:
    """``value`` with NaN and the infinities as null: JSON has no such numbers, and the structured
    content and the trace (pydantic's JSON) already say null, so the text says the same observation."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def to_call_result(obs: Observation, home: Path | None = None, client: str | None = None) -> Any:
    import mcp_types as types

    model = obs.to_model()
    if obs.error == "approval_required" and home is not None:
        model = {**model, "approvals_home": str(home)}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result_text(obs, model, home, client))],
        structured_content=model,
        is_error=not obs.ok,
    )


def token_id(token: str) -> str:
    """A short, non-reversible name for a bearer token (what a namespace and a log may show)."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


class GovernedServer:
    """The gateway and trace of one serve session, and the MCP ``Server`` answering through them."""

    def __init__(
        self,
        target: ServeTarget,
        *,
        trace_path: Path | None = None,
        namespace: str | None = None,
        actor: str = "mcp-client",
        scopes: list[str] | None = None,
        env: Environment = "dev",
        clock: Clock | None = None,
        ids: IdFactory | None = None,
    ) -> None:
        from portagent.core.budgets import RunBudget
        from portagent.core.home import portagent_home
        from portagent.tools.context import GatewayContext
        from portagent.tools.gateway import ToolGateway
        from portagent.tracing.recorder import TraceRecorder

        self.target = target
        self.clock = clock or SystemClock()
        self.ids = ids or IdFactory()
        self.run_id = self.ids.run_id()
        self.namespace = namespace or f"mcp-serve:{target.name}"
        self.trace_path = trace_path or portagent_home(create=True) / "mcp" / self.run_id / "trace.jsonl"
        self.recorder = TraceRecorder(
            run_id=self.run_id,
            provider="mcp",
            agent=target.name,
            clock=self.clock,
            ids=self.ids,
            path=self.trace_path,
        )
        ctx = GatewayContext(
            run_id=self.run_id,
            scope=self.namespace,
            provider="mcp",
            agent=target.name,
            actor=actor,
            scopes=list(scopes or []),
            env=env,
            budget=RunBudget(None),
            recorder=self.recorder,
            clock=self.clock,
            ids=self.ids,
        )
        self.home = portagent_home().resolve()
        self.gateway = ToolGateway(target.tools, ctx, policy=target.policy, approver="defer")
        self._client_gateways: dict[str, Any] = {}
        self.tokens: dict[str, str] = {}
        """Accepted bearer tokens by their id (``token_id``), set by ``serve`` for HTTP."""
        self.calls = 0
        self._started = False
        self._t0 = 0.0

    def set_tools(self, tools: dict[str, ToolSpec]) -> None:
        """Replace the served tools (an agent's MCP sources join once they are listed)."""
        self.target.tools = dict(tools)
        self.gateway.tools = dict(tools)
        for gw in self._client_gateways.values():
            gw.tools = dict(tools)

    def gateway_for(self, client: str | None) -> Any:
        """The gateway of one client: the session's own namespace (``<namespace>/<client>``) for its
        approval cards and effects; the server's namespace when the transport has no client identity
        (stdio: one client per process)."""
        if not client:
            return self.gateway
        gw = self._client_gateways.get(client)
        if gw is None:
            from dataclasses import replace

            from portagent.tools.gateway import ToolGateway

            base = self.gateway
            gw = ToolGateway(
                self.target.tools,
                replace(base.context, scope=f"{self.namespace}/{client}"),
                policy=base.policy,
                approver="defer",
                approvals=base.approvals,
                ledger=base.ledger,
            )
            self._client_gateways[client] = gw
        return gw

    def client_of(self, request: Any) -> str | None:
        """Who sent an HTTP request: the bearer token it presented (by id) and its MCP session id."""
        if request is None:
            return None
        headers = getattr(request, "headers", None) or {}
        parts = []
        if self.tokens:
            scheme, _, value = str(headers.get("authorization", "")).partition(" ")
            presented = value.strip().encode()
            for tid, token in self.tokens.items():
                if scheme.lower() == "bearer" and hmac.compare_digest(presented, token.encode()):
                    parts.append(f"token:{tid}")
                    break
        session = headers.get("mcp-session-id")
        if session:
            parts.append(f"session:{session}")
        return "/".join(parts) or None

    # -- session trace ---------------------------------------------------------------------------------

    def start(self, transport: str, details: dict[str, Any] | None = None) -> None:
        from portagent.adapters.base import package_version

        self._started = True
        self._t0 = self.clock.monotonic()
        self.recorder.emit(
            "run.started",
            root=True,
            agent_version=self.target.version,
            spec_hash=self.target.spec_hash,
            policy_hash=self.target.policy_hash,
            sdk="mcp",
            sdk_version=package_version("mcp") or "",
            model="",
            source="live",
            mode="direct",
            input=None,
            provider_details={
                "mcp_serve": {
                    "transport": transport,
                    "namespace": self.namespace,
                    "tools": sorted(self.target.tools),
                },
                **(details or {}),
            },
        )
        self.recorder.flush()

    def stop(self, reason: str = "server_stopped") -> None:
        """End the session's trace. A call still without a ``tool.result`` was cut off when the session
        ended (the client went away, or the process was stopped, mid-call: its task was cancelled): it
        gets a ``handler_error`` result saying it was interrupted and that its effect is unknown (what
        a run records for an MCP server that died mid-call), and the session ends ``cancelled`` /
        ``interrupted`` instead of ``completed``, so the trace does not claim a call it never answered."""
        if not self._started:
            return
        self._started = False
        interrupted = self._interrupted_calls()
        for call in interrupted:
            obs = Observation.failure(
                "handler_error",
                f"{call.tool} was interrupted: the session ended (the MCP client went away or the server "
                "was stopped) before the call finished, so whether its effect happened is unknown",
                {"interrupted": True},
            )
            self.recorder.emit(
                "tool.result",
                call_id=call.call_id,
                tool=call.tool,
                ok=False,
                error=obs.error,
                output=obs.to_model(),
                agent=call.agent,
            )
        self.recorder.emit(
            "run.completed",
            root=True,
            status="cancelled" if interrupted else "completed",
            stop_reason="interrupted" if interrupted else reason,
            tool_calls=self.calls,
            cost_usd=round(float(self.gateway.context.budget.tool_cost_usd), 8),
            cost_source="computed",
            duration_ms=round((self.clock.monotonic() - self._t0) * 1000, 3),
        )
        self.recorder.flush()

    def _interrupted_calls(self) -> list[Any]:
        """The ``tool.call`` events of this session that have no ``tool.result``."""
        answered = {e.call_id for e in self.recorder.of_type("tool.result")}
        return [e for e in self.recorder.of_type("tool.call") if e.call_id not in answered]

    # -- MCP handlers ----------------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        client: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Any:
        """One ``tools/call`` from ``client`` (None: the process's only client), through its gateway;
        always a ``CallToolResult``. A valid W3C ``traceparent`` in the request's ``_meta`` makes this
        call's events join the caller's trace (``tracing/propagation.py``); a missing or malformed one
        is ignored, as the W3C spec asks."""
        from portagent.tracing.propagation import HEADER, joining_call, parse

        self.calls += 1
        parent = parse((meta or {}).get(HEADER))
        details = {"mcp": {HEADER: parent.header()}} if parent is not None else None
        try:
            with joining_call(self.run_id, parent):
                obs = await self.gateway_for(client).call(
                    name, arguments or {}, via="mcp", provider_details=details
                )
        finally:
            self.recorder.flush()
        return to_call_result(obs, self.home, client)

    def build(self) -> Any:
        """The low-level MCP ``Server``."""
        import mcp_types as types
        from mcp.server.lowlevel import Server

        from portagent.core.versions import PORTAGENT_VERSION as __version__

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=[mcp_tool(t) for t in self.target.tools.values()])

        async def call_tool(ctx: Any, params: Any) -> Any:
            return await self.call(
                params.name,
                params.arguments,
                self.client_of(getattr(ctx, "request", None)),
                getattr(params, "meta", None),
            )

        def input_schema(name: str) -> Any:
            tool = self.target.tools.get(name)
            return tool.input_schema if tool is not None else None

        return Server(
            f"portagent:{self.target.name}",
            version=__version__,
            instructions=f"Tools of {self.target.name}, governed by portagent: every call is checked "
            "against its schema and policy, and traced.",
            get_tool_input_schema=input_schema,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )


async def serve(
    target: ServeTarget,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    trace_path: Path | None = None,
    namespace: str | None = None,
    scopes: list[str] | None = None,
    env: Environment = "dev",
    announce: Any = None,
    auth_tokens: Sequence[str] = (),
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> GovernedServer:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP). ``announce(text)`` is
    told where the server listens, where the trace goes and where approval cards wait.

    HTTP only: ``auth_tokens`` (bearer tokens; each is a client identity), ``allow_hosts`` /
    ``allow_origins`` (added to the Host/Origin allowlist). A bind that is not loopback without a token
    is refused (UsageError) before anything listens, and so is a malformed allowlist entry."""
    if trace_path is not None and trace_path.exists():
        # one session is one trace: a second session appended to the file would export as one trace
        if trace_path.is_dir():
            raise UsageError(f"--trace {trace_path} is a folder: name the trace file to write")
        if trace_path.stat().st_size:
            raise UsageError(
                f"--trace {trace_path}: the file exists and is not empty; one serve session is one trace, "
                "so name a new file (or move the old trace away)"
            )
    security = None
    if transport != "stdio":
        from portagent.mcp.http import transport_security

        check_bind(host, auth_tokens)
        security = transport_security(host, allow_hosts, allow_origins)
    say = announce or (lambda text: None)
    governed = GovernedServer(target, trace_path=trace_path, namespace=namespace, scopes=scopes, env=env)
    governed.tokens = {token_id(t): t for t in auth_tokens}
    from portagent.core.home import APPROVALS_DB, ENV_VAR

    say(
        f"state folder {governed.home} (approval cards in {governed.home / APPROVALS_DB}; decide them with "
        f"`{ENV_VAR}={shlex.quote(str(governed.home))} portagent approvals list`)"
    )
    async with AsyncExitStack() as stack:
        from portagent.tools.handlers import bundle_scope, handler_scope, within

        # handlers resolve as in a run (ADR 0004): an agent's tools in the folder of the file that declared
        # them first (a shared tools file's), a tools file's in its folder; no folder is put on sys.path
        stack.enter_context(
            within(bundle_scope(target.bundle))
            if target.bundle is not None
            else handler_scope([target.base_dir])
        )
        details: dict[str, Any] = {}
        if target.bundle is not None and target.bundle.node.spec.mcp_servers:
            from portagent.tools.mcp.sources import open_sources

            sources = await stack.enter_async_context(open_sources(target.bundle))
            governed.set_tools(sources.bundle.node.tools)
            details = sources.details()
        server = governed.build()
        if transport == "stdio":
            from mcp.server.stdio import stdio_server

            from portagent.mcp.stdin import claimed_stdin

            governed.start("stdio", details)
            terminated = _cancel_on_sigterm()  # before the line a client may wait for to send SIGTERM
            say(
                f"serving {len(governed.target.tools)} tools of {target.name} over stdio; trace {governed.trace_path}"
            )
            try:
                # the lines are read on the event loop, not in a thread: SIGTERM ends an idle session too
                with claimed_stdin() as lines:
                    async with stdio_server(stdin=cast(Any, lines)) as (read, write):  # None: its own
                        await server.run(read, write, server.create_initialization_options())
            except asyncio.CancelledError:
                if not terminated:
                    raise
                say("stopped by SIGTERM; session ended")
            except BaseExceptionGroup as group:
                _, rest = group.split(_client_gone)
                if rest is not None:
                    raise
                say("the client went away (its end of stdio closed); session ended")
            finally:
                governed.stop()
            return governed
        from portagent.mcp.http import serve_http

        await serve_http(governed, server, host, port, details, say, security)
    return governed


def check_bind(host: str, tokens: Sequence[str]) -> None:
    """A bind that is not loopback needs a bearer token; tokens must not be trivially guessable."""
    serving.check_bind(
        host,
        tokens,
        token_name="MCP auth token",
        unauthenticated=(
            f"refusing to serve on {host} without authentication: anyone who can reach it could call the "
            "tools. Set PORTAGENT_MCP_TOKEN (or --auth-token) to a secret; clients then send "
            "`Authorization: Bearer <token>`. Or bind to 127.0.0.1."
        ),
    )


def _client_gone(exc: BaseException) -> bool:
    """An error of writing to (or reading from) a client that closed its end of stdio: the session's
    end, not the server's failure (anyio's stream errors, or the OS's broken pipe / reset)."""
    import anyio

    return isinstance(
        exc,
        BrokenPipeError | ConnectionResetError | anyio.BrokenResourceError | anyio.ClosedResourceError,
    )


def _cancel_on_sigterm() -> list[bool]:
    """SIGTERM ends a stdio session like a closed stdin: the serving task is cancelled, so the trace
    still ends with ``run.completed`` (the MCP client sends SIGTERM when stdin closing is not enough).
    The list returned gets an item when SIGTERM came, so that cancellation is the session's normal end
    (exit 0), not an error."""
    import asyncio
    import contextlib
    import signal

    terminated: list[bool] = []

    task = asyncio.current_task()
    if task is not None:

        def stop() -> None:
            terminated.append(True)
            task.cancel()

        with contextlib.suppress(
            NotImplementedError, RuntimeError, ValueError
        ):  # not the main thread / Windows
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
    return terminated
