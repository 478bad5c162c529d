"""MCP servers as tool sources of a run: listed once, wrapped as ToolSpecs, called through the gateway.

    arun_full ──► open_sources(bundle, endpoint, options)      (before run.started)
                    │ live: start/reach each server, initialize, tools/list      (timeout_s each)
                    │ replay: the listing recorded in mcp.json (no server)
                    │ wrap: ToolSpec per allowed tool, name = prefix + tool name
                    └► RunSources.bundle: the bundle with those ToolSpecs added to each AgentNode.tools
              adapters declare node.tools as usual ──► gateway (schema, policy, budget, idempotency)
                    ──► handler portagent.tools.mcp.bridge:TOOLS.<ident> ──► RunSources.call ──► tools/call
                                                                         (or the recorded answer)

Because MCP tools are ordinary ToolSpecs in ``node.tools`` with a handler the gateway can call, every
provider gets them without adapter changes, and no call bypasses the policy: nothing is ever handed
to a vendor's hosted MCP feature.

Wrapping (docs/mcp.md): ``name`` = ``prefix`` (default ``<server>_``) + the tool name with characters
outside ``[A-Za-z0-9_-]`` replaced by ``_``; names must be unique across the agent's own tools and all
its servers. ``effect`` from ``effects:`` overrides, else from the annotations (``annotations.py``),
else ``external_effect``; write effects get ``idempotency.required`` with the default key (tool name +
arguments hash). ``input_schema`` is the listed one (``properties: {}`` added when absent), checked as
JSON Schema; the gateway validates arguments against it before any call. ``budgets.timeout_ms`` is
``call_timeout_s``.

Listing once per run: each server's listing gets a fingerprint (tools, schemas, annotations, server
name and version), recorded in ``run.started`` ``provider_details.mcp``. The last accepted live listing
of each server is kept in ``$PORTAGENT_HOME/mcp_listings.json``, keyed by what decides what the server
lists (name, command or URL, working folder, a hash of ``env``); a tool gone since then is reported (an
``McpToolRemoved`` error event) and, not being declared, can never be called. A listing the run then
refuses (an invalid schema, a bad or colliding name) is not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import logging
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from portagent.contracts._base import short_hash
from portagent.contracts.agent import McpServerRef
from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.errors import UsageError
from portagent.contracts.schema_faults import schema_problem
from portagent.contracts.tool import EFFECTS, SEMVER_RE, TOOL_NAME_RE, Idempotency, ToolBudgets, ToolSpec
from portagent.tools.mcp import bridge, listings
from portagent.tools.mcp.annotations import effect_from_hints
from portagent.tools.mcp.cassette import McpCassette, answer_diff, same_answer
from portagent.tools.mcp.client import McpConnection, describe
from portagent.tools.mcp.errors import McpConfigError, McpServerError

log = logging.getLogger("portagent.mcp")

REPLAY_ENV = "PORTAGENT_MCP_REPLAY"
"""``live``: a replay asks the real MCP servers and reports answers that differ from the recording."""
WRITE_EFFECTS = ("reversible_write", "external_effect")


@dataclass
class _Server:
    """One server of the run (shared by every agent that names it)."""

    ref: McpServerRef
    base_dir: Path
    agents: list[str] = field(default_factory=list)
    listed: list[dict[str, Any]] = field(default_factory=list)
    """The listed tools in wire form (``inputSchema``, ``annotations`` …)."""
    info: dict[str, Any] = field(default_factory=dict)
    conn: McpConnection | None = None
    removed: list[str] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        return short_hash(
            {
                "server": {k: self.info.get(k) for k in ("name", "version")},
                "tools": sorted(self.listed, key=lambda t: t["name"]),
            }
        )


@dataclass
class _Wrapped:
    spec: ToolSpec
    server: str
    tool: str
    """The name the server knows the tool by."""


def _servers_of(bundle: AgentBundle) -> dict[str, _Server]:
    """Every server named in the bundle; one name must mean one server."""
    out: dict[str, _Server] = {}
    for agent, node in bundle.agents.items():
        base = node.path.parent if node.path is not None else Path.cwd()
        seen: set[str] = set()
        for ref in node.spec.mcp_servers:
            if ref.name in seen:
                raise McpConfigError(f"{node.path or agent}: mcp_servers names {ref.name!r} twice")
            seen.add(ref.name)
            found = out.get(ref.name)
            if found is None:
                out[ref.name] = _Server(ref, base.resolve(), [agent])
            elif found.ref != ref or (ref.command is not None and found.base_dir != base.resolve()):
                raise McpConfigError(
                    f"agents {found.agents[0]!r} and {agent!r} both name an MCP server "
                    f"{ref.name!r} but configure it differently; give them different names"
                )
            else:
                found.agents.append(agent)
    return out


def _wire(tool: Any) -> dict[str, Any]:
    """A listed tool as recorded: wire names, without icons and without ``_meta`` other than
    portagent's own keys (a served ToolSpec's exact effect class)."""
    data: dict[str, Any] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    meta = {k: v for k, v in (data.pop("_meta", None) or {}).items() if k.startswith("portagent/")}
    data.pop("icons", None)
    if meta:
        data["_meta"] = meta
    return data


def _raw_result(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("_meta", None)
    return data


def to_output(result: dict[str, Any]) -> Any:
    """A raw ``CallToolResult`` (wire form) as the handler's return value.

    Structured content is the output; text-only content becomes ``{"text": …}``; other content is kept
    as blocks. ``isError`` becomes ``{"ok": false, "error": "handler_error", "message": <text>}``, unless
    its structured content already is a portagent observation (a chained ``portagent mcp serve``).
    """
    structured = result.get("structuredContent")
    content = result.get("content") or []
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    if result.get("isError"):
        if isinstance(structured, dict) and structured.get("ok") is False and structured.get("error"):
            return structured
        return {
            "ok": False,
            "error": "handler_error",
            "message": "\n".join(texts) or "the MCP tool reported an error without a message",
        }
    if structured is not None:
        return structured if isinstance(structured, dict) else {"result": structured}
    if len(texts) == len(content):
        return {"text": "\n".join(texts)}
    return {"content": content}


# --- wrapping -------------------------------------------------------------------------------------------


ALLOW_SHOWN = 12
"""At most this many tool names are written out in a suggested allow-list."""


def _leave_out(server: _Server, tool: str) -> str:
    """How to leave ``tool`` out: with the spec's allow-list, or — when it has none — the list to write."""
    ref = server.ref
    if ref.allow:
        return f"leave {tool!r} out of mcp_servers[{ref.name}].allow"
    keep = [str(t["name"]) for t in server.listed if t["name"] != tool]
    if not keep:
        return f"leave {tool!r} out with an mcp_servers[{ref.name}].allow list (it is the only tool listed)"
    shown = ", ".join(json.dumps(n, ensure_ascii=False) for n in keep[:ALLOW_SHOWN])
    more = f", … ({len(keep)} tools in all)" if len(keep) > ALLOW_SHOWN else ""
    return (
        f"leave {tool!r} out by listing the tools to keep in mcp_servers[{ref.name}]: allow: [{shown}{more}]"
    )


def _portable_name(server: _Server, tool: str) -> str:
    name = server.ref.portable_name(tool)
    if not re.match(TOOL_NAME_RE, name):
        raise McpConfigError(
            f"MCP server {server.ref.name!r}: tool {tool!r} becomes {name!r}, which is not a valid tool name "
            "(a letter first, then up to 63 letters, digits, '_' or '-'); set a shorter or letter-first "
            f"mcp_servers[{server.ref.name}].prefix, or {_leave_out(server, tool)}"
        )
    return name


def _schema(server: _Server, tool: dict[str, Any]) -> dict[str, Any]:
    where = f"MCP server {server.ref.name!r} lists tool {tool['name']!r} with an invalid inputSchema"
    hint = f"; fix the server, or {_leave_out(server, tool['name'])}"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        raise McpConfigError(f"{where}: expected a JSON object, got {type(schema).__name__}{hint}")
    if schema.get("type") != "object":
        raise McpConfigError(f"{where}: its type must be 'object', got {schema.get('type')!r}{hint}")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise McpConfigError(f"{where}: 'properties' must be an object{hint}")
    fault = schema_problem(schema)  # one server may list dozens of tools: the metaschema only when doubtful
    if fault is not None:
        path = "/".join(str(p) for p in fault.path)
        raise McpConfigError(f"{where}: {fault.message}" + (f" (at {path})" if path else "") + hint)
    return {**schema, "properties": props}


def _wrap(server: _Server, tool: dict[str, Any]) -> ToolSpec:
    ref = server.ref
    name = _portable_name(server, tool["name"])
    effect = ref.effects.get(tool["name"])
    if effect is None and ref.trust_annotations:
        stated = (tool.get("_meta") or {}).get("portagent/effect")  # served by portagent: the exact class
        effect = stated if stated in EFFECTS else effect_from_hints(tool.get("annotations"))
    effect = effect or "external_effect"
    version = str(server.info.get("version") or "")
    description = (
        tool.get("description")
        or tool.get("title")
        or f"{tool['name']} (a tool of the MCP server {ref.name})"
    ).strip()
    return ToolSpec(
        name=name,
        version=version if re.match(SEMVER_RE, version) else "0.0.0",
        owner=f"mcp:{ref.name}",
        description=description,
        effect=effect,
        input_schema=_schema(server, tool),
        reversible=True if effect == "reversible_write" else None,
        budgets=ToolBudgets(timeout_ms=int(ref.call_timeout_s * 1000)),
        idempotency=Idempotency(required=effect in WRITE_EFFECTS),
        handler=bridge.handler_for(name),
    )


def _close(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _select(server: _Server) -> list[dict[str, Any]]:
    """The listed tools the agent may use: the allow-list (each must exist), else all."""
    ref = server.ref
    listed = {t["name"]: t for t in server.listed}
    for label, names in (("allow", ref.allow), ("effects", list(ref.effects))):
        missing = [n for n in names if n not in listed]
        if missing:
            gone = [n for n in missing if n in server.removed]
            note = "; it was listed at the last run and has since disappeared" if gone else ""
            raise McpConfigError(
                f"MCP server {ref.name!r} ({describe(ref)}) has no tool {missing[0]!r}"
                f"{_close(missing[0], list(listed))}, named in mcp_servers[{ref.name}].{label}{note}; "
                f"it lists: {', '.join(sorted(listed)) or '(no tools)'}"
            )
    if not ref.allow:
        return list(listed.values())
    return [listed[n] for n in ref.allow]


def _augment(bundle: AgentBundle, servers: dict[str, _Server]) -> tuple[AgentBundle, dict[str, _Wrapped]]:
    wrapped: dict[str, _Wrapped] = {}
    agents: dict[str, AgentNode] = {}
    for agent, node in bundle.agents.items():
        tools = dict(node.tools)
        # ToolSpec name → (who has it, its MCP server or None for the agent's own tool)
        origin: dict[str, tuple[str, str | None]] = {t: (f"the agent's own tool {t!r}", None) for t in tools}
        for ref in node.spec.mcp_servers:
            server = servers[ref.name]
            for tool in _select(server):
                spec = _wrap(server, tool)
                here = f"tool {tool['name']!r} of MCP server {ref.name!r}"
                if spec.name in origin:
                    other, other_server = origin[spec.name]
                    # Two tools of one server differ only in characters the name replaces by '_': a
                    # prefix is added to both, so only leaving one out separates them.
                    fix = (
                        f"both come from that server, so no prefix separates them: {_leave_out(server, tool['name'])}"
                        if other_server == ref.name
                        else f"set a distinct mcp_servers[{ref.name}].prefix"
                    )
                    raise McpConfigError(
                        f"agent {agent!r}: {here} would be named {spec.name!r}, which {other} already uses; {fix}"
                    )
                origin[spec.name] = (here, ref.name)
                tools[spec.name] = spec
                wrapped[bridge.ident_for(spec.name)] = _Wrapped(spec, ref.name, tool["name"])
        agents[agent] = replace(node, tools=tools)
    return AgentBundle(bundle.root, agents), wrapped


# --- the listing memory (listings.py) ------------------------------------------------------------------


def _compare_with_last_listing(servers: dict[str, _Server]) -> None:
    """Note each server's tools gone since its last remembered listing (nothing is written here)."""
    keys = {name: listings.identity(s.ref, s.base_dir) for name, s in servers.items()}
    gone = listings.tools_gone({keys[name]: {t["name"] for t in s.listed} for name, s in servers.items()})
    for name, server in servers.items():
        server.removed = gone[keys[name]]


def _remember_listings(servers: dict[str, _Server]) -> None:
    """Keep each server's tool names, once the run has accepted its listing."""
    listings.remember(
        {
            listings.identity(s.ref, s.base_dir): ([t["name"] for t in s.listed], s.fingerprint)
            for s in servers.values()
        }
    )


# --- the run's sources --------------------------------------------------------------------------------


class RunSources:
    """The MCP side of one run: its servers, wrapped tools, and how calls are answered."""

    def __init__(
        self,
        bundle: AgentBundle,
        servers: dict[str, _Server],
        mode: str,
        cassette_dir: Path | None,
        recorded: McpCassette | None,
    ) -> None:
        self.source_bundle = bundle
        self.servers = servers
        self.mode = mode
        """``live`` (direct runs), ``record``, ``replay`` (recorded answers) or ``verify`` (replay, live
        answers compared with the recorded ones)."""
        self.cassette_dir = cassette_dir
        self.recorded = recorded
        self.log = McpCassette() if mode in ("record", "verify") else None
        self.bundle = bundle
        self.tools: dict[str, _Wrapped] = {}
        self.session: Any = None
        self._run_id: str | None = None

    # -- wiring into the run ---------------------------------------------------------------------------

    def bind(self, session: Any) -> None:
        """Called by the runner once the run's session exists (before ``run.started``)."""
        self.session = session
        self._run_id = session.run_id
        bridge.register_run(session.run_id, self)
        notes = [(s, t) for s in self.servers.values() for t in s.removed]
        if notes:

            def after_start(event: Any) -> None:
                if event.type == "run.started" and event.provider_details.get("mcp") is not None:
                    for server, tool in notes:
                        session.record_error(
                            "McpToolRemoved",
                            f"MCP server {server.ref.name!r} no longer lists the tool {tool!r} "
                            "(it did at the last run); it is not declared to the model and cannot be called",
                        )

            session.recorder.subscribe(after_start)

    def details(self) -> dict[str, Any]:
        """``run.started`` ``provider_details``: the listing version of each server."""
        out: dict[str, Any] = {}
        for name, s in sorted(self.servers.items()):
            entry: dict[str, Any] = {
                "transport": "stdio" if s.ref.command is not None else "streamable-http",
                "server": s.info,
                "fingerprint": s.fingerprint,
                "tools": sorted(w.spec.name for w in self.tools.values() if w.server == name),
                "listing": "recording" if self.mode == "replay" else "live",
            }
            if s.removed:
                entry["removed_since_last_run"] = s.removed
            out[name] = entry
        return {"mcp": out}

    # -- calls -----------------------------------------------------------------------------------------

    async def call(self, ident: str, args: dict[str, Any], context: dict[str, Any]) -> Any:
        from portagent.tools.observations import ToolFailure

        wrapped = self.tools.get(ident)
        if wrapped is None:
            raise ToolFailure("handler_error", "this MCP tool is not part of the run's listing")
        server = self.servers[wrapped.server]
        if self.mode == "replay":
            assert self.recorded is not None
            hit = self.recorded.take(wrapped.server, wrapped.tool, args)
            if hit is None:
                message = (
                    f"the MCP recording holds no answer to {wrapped.server}.{wrapped.tool} with these "
                    "arguments (the run asked something the recording never did): re-record the cassette"
                )
                self._error("McpCassetteDrift", message)
                raise ToolFailure("handler_error", message, {"server": wrapped.server, "tool": wrapped.tool})
            return to_output(hit.result)
        assert server.conn is not None
        if server.conn.closed_reason is not None:  # certainly not executed: the server was already gone
            self._error("McpServerError", server.conn.closed_reason)
            raise ToolFailure("handler_error", server.conn.closed_reason, {"server": wrapped.server})
        try:
            raw = _raw_result(await server.conn.call(wrapped.tool, args))
        except McpServerError as e:  # in flight when it failed: whether it took effect is unknown
            self._error("McpServerError", str(e))
            raise
        if self.log is not None:
            self.log.add(wrapped.server, wrapped.tool, args, raw)
        if self.recorded is not None:
            self._compare(wrapped, args, raw)
        return to_output(raw)

    def _compare(self, wrapped: _Wrapped, args: dict[str, Any], raw: dict[str, Any]) -> None:
        assert self.recorded is not None
        hit = self.recorded.take(wrapped.server, wrapped.tool, args)
        if hit is None:
            self._error(
                "McpDrift",
                f"{wrapped.server}.{wrapped.tool} was called with arguments the recording never used",
            )
        elif not same_answer(hit.result, raw):
            self._error(
                "McpDrift",
                f"MCP server {wrapped.server!r} answered {wrapped.tool!r} differently from the "
                f"recording:\n{answer_diff(hit.result, raw)}",
            )

    def _error(self, error_type: str, message: str) -> None:
        if self.session is not None:
            self.session.record_error(error_type, message, agent=self.session.current_agent)

    # -- closing ---------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._run_id is not None:
            bridge.unregister_run(self._run_id, self)
        conns = [s.conn for s in self.servers.values() if s.conn is not None]
        await asyncio.gather(*(c.aclose() for c in conns), return_exceptions=True)

    def save_recording(self) -> None:
        if self.mode == "record" and self.log is not None and self.cassette_dir is not None:
            self.log.servers = {
                name: {"server": s.info, "fingerprint": s.fingerprint, "tools": s.listed}
                for name, s in sorted(self.servers.items())
            }
            self.log.save(self.cassette_dir)


def _mode(endpoint: Any, options: Any) -> str:
    mode = getattr(endpoint, "mode", "direct")
    if mode == "replay":
        return "verify" if live_mcp_in_replay(options) else "replay"
    return "record" if mode == "record" else "live"


def live_mcp_in_replay(options: Any) -> bool:
    """Whether a replay asks its MCP servers live (``PORTAGENT_MCP_REPLAY=live`` or
    ``RunOptions.extra["mcp_replay"] = "live"``): the one case a replay may reach a server."""
    wanted = (getattr(options, "extra", None) or {}).get("mcp_replay") or os.environ.get(REPLAY_ENV, "")
    return bool(wanted == "live")


async def _connect(servers: dict[str, _Server]) -> None:
    """Open and list every server concurrently; on any failure close them all and raise the first."""

    async def one(server: _Server) -> None:
        server.conn = McpConnection(server.ref, server.base_dir)
        await server.conn.open()
        server.info = server.conn.server_info
        server.listed = [_wire(t) for t in await server.conn.list_tools()]

    results = await asyncio.gather(*(one(s) for s in servers.values()), return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        await asyncio.gather(
            *(s.conn.aclose() for s in servers.values() if s.conn is not None), return_exceptions=True
        )
        first = failures[0]
        if isinstance(first, McpConfigError | McpServerError) or not isinstance(first, Exception):
            raise first
        raise McpServerError(f"an MCP server could not be used: {type(first).__name__}: {first}") from first


@contextlib.asynccontextmanager
async def open_sources(
    bundle: AgentBundle, endpoint: Any = None, options: Any = None
) -> AsyncIterator[RunSources]:
    """The run's MCP sources, open for the length of the ``async with`` (closed whatever happens)."""
    servers = _servers_of(bundle)
    mode = _mode(endpoint, options)
    cassette_dir = getattr(endpoint, "cassette_dir", None)
    recorded: McpCassette | None = None
    if mode in ("replay", "verify"):
        if cassette_dir is None:
            raise McpConfigError("a replay of an agent with MCP servers needs its cassette folder")
        recorded = McpCassette.load(Path(cassette_dir))
    elif mode == "record" and cassette_dir is not None and (Path(cassette_dir) / "mcp.json").is_file():
        recorded = McpCassette.load(Path(cassette_dir))  # re-recording over a folder: answers are compared
    sources = RunSources(bundle, servers, mode, Path(cassette_dir) if cassette_dir else None, recorded)
    token = bridge.ACTIVE.set(sources)
    try:
        if mode == "replay":
            assert recorded is not None
            for name, server in servers.items():
                listing = recorded.servers.get(name)
                if listing is None:
                    raise McpConfigError(
                        f"the MCP recording in {cassette_dir} has no listing of server {name!r} "
                        "(the agent's mcp_servers changed since it was recorded): re-record it"
                    )
                server.listed, server.info = list(listing.get("tools", [])), dict(listing.get("server", {}))
        else:
            await _connect(servers)
            if mode != "verify":
                _compare_with_last_listing(servers)
        sources.bundle, sources.tools = _augment(bundle, servers)
        if mode in ("live", "record"):
            _remember_listings(servers)  # only a listing the run accepted
        yield sources
        sources.save_recording()
    finally:
        bridge.ACTIVE.reset(token)
        await sources.aclose()


def remembered_listings(bundle: AgentBundle) -> dict[str, list[str]]:
    """Server name → the tool names (as the server lists them) of its last live listing, kept in
    ``$PORTAGENT_HOME/mcp_listings.json``; a server never listed live is absent. Starts no server."""
    try:
        servers = _servers_of(bundle)
    except (OSError, McpConfigError, UsageError):
        return {}
    return listings.remembered({name: listings.identity(s.ref, s.base_dir) for name, s in servers.items()})


async def list_live(bundle: AgentBundle) -> dict[str, list[str]]:
    """Start (or reach) every MCP server of the bundle, list its tools and close it again: server name →
    tool names as listed. The listing is remembered like a run's (``mcp_listings.json``) when a run would
    accept it; no tool is called."""
    servers = _servers_of(bundle)
    try:
        await _connect(servers)
        _compare_with_last_listing(servers)
        try:
            _augment(bundle, servers)
        except McpConfigError as e:
            log.info("MCP listing not remembered: %s", e)
        else:
            _remember_listings(servers)
        return {name: [str(t["name"]) for t in server.listed] for name, server in servers.items()}
    finally:
        await asyncio.gather(
            *(s.conn.aclose() for s in servers.values() if s.conn is not None), return_exceptions=True
        )
