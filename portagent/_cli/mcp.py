"""``portagent mcp serve|tools``: MCP on both sides of the gateway (docs/mcp.md).

- ``serve TOOLS|AGENT [--transport stdio|streamable-http] [--host H] [--port N] [--home DIR]``: offer the tools of a
  tools file (with ``--policy``) or of an agent spec (its own policy) to any MCP client; every call goes
  through portagent's gateway and is traced (``--trace FILE``, default
  ``$PORTAGENT_HOME/mcp/<run_id>/trace.jsonl``). A call that needs approval answers an error naming the
  approval id and the state folder (``--home``, else ``$PORTAGENT_HOME``, printed on stderr at start):
  decide it with ``portagent approvals``, then the client calls again. Over HTTP: a non-loopback bind
  needs a bearer token (``PORTAGENT_MCP_TOKEN`` / ``--auth-token``); Host/Origin are always checked
  against an allowlist (``--allow-host``/``--allow-origin``); cards are bound to the asking client.
- ``tools AGENT``: start the agent's MCP servers, list their tools and show the ToolSpecs a run would
  get (name, effect, origin), then stop them.

Exit codes: 0 ok · 2 usage or configuration error (bad file, command not found, allow-list naming a
missing tool, invalid listed schema, port in use) · 3 an MCP server failed (initialize timeout, crash).
Nothing but MCP messages is written to stdout with ``--transport stdio``; notices go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    from portagent.core.serving import add_allowlist_args

    p = sub.add_parser("mcp", help="serve governed tools over MCP; inspect an agent's MCP tool sources")
    msub = p.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)

    s = msub.add_parser(
        "serve",
        help="serve a tools file or an agent's tools to MCP clients, through the gateway",
        description="Serve ToolSpecs over MCP. Every call is validated, decided by the policy, "
        "executed by portagent's gateway and traced with via: mcp.",
    )
    s.add_argument("target", metavar="TOOLS|AGENT", help="a tools file (kind: tool|tools) or an agent spec")
    s.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    s.add_argument(
        "--host", default="127.0.0.1", help="streamable-http: address to listen on (default 127.0.0.1)"
    )
    s.add_argument(
        "--port", type=int, default=8000, help="streamable-http: port (default 8000; 0 picks a free one)"
    )
    s.add_argument(
        "--policy", metavar="FILE", help="policy for a tools file (default: effect-class defaults)"
    )
    s.add_argument(
        "--trace", metavar="FILE", help="trace file (default $PORTAGENT_HOME/mcp/<run_id>/trace.jsonl)"
    )
    s.add_argument(
        "--namespace", help="approvals/ledger namespace (default mcp-serve:<name>, stable across restarts)"
    )
    s.add_argument(
        "--scope",
        dest="scopes",
        action="append",
        default=[],
        help="actor scope granted to MCP clients (repeatable), e.g. tickets:write",
    )
    s.add_argument("--env", default="dev", choices=["lab", "dev", "staging", "prod"], help="run environment")
    s.add_argument(
        "--home",
        metavar="DIR",
        help="state folder for approval cards, effects and traces (default $PORTAGENT_HOME or ./.portagent; "
        "MCP clients start servers in their own folder, so name it here)",
    )
    s.add_argument(
        "--auth-token",
        dest="auth_tokens",
        action="append",
        default=[],
        metavar="TOKEN",
        help="streamable-http: require `Authorization: Bearer TOKEN` (repeatable: one per client; prefer "
        "PORTAGENT_MCP_TOKEN, which ps does not show). Needed to bind a non-loopback address",
    )
    add_allowlist_args(s, prefix="streamable-http: ")

    t = msub.add_parser(
        "tools", help="list the tools an agent's MCP servers provide, as the ToolSpecs a run gets"
    )
    t.add_argument("agent", help="agent spec file")
    t.add_argument("--json", action="store_true", help="print the ToolSpecs as JSON")


def run(args: argparse.Namespace) -> int:
    if args.mcp_command == "serve":
        return _serve(args)
    return _tools(args)


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from portagent.contracts.errors import UsageError
    from portagent.mcp.server import load_target, serve

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    if args.home is not None:
        import os

        from portagent.core.home import ENV_VAR, portagent_home

        # Set for the whole process: the gateway's stores and the agent's MCP source processes read it.
        os.environ[ENV_VAR] = str(portagent_home(args.home).expanduser().resolve())
    tokens = list(args.auth_tokens) + _env_tokens()
    if args.transport == "stdio" and (args.auth_tokens or args.allow_hosts or args.allow_origins):
        raise UsageError("--auth-token, --allow-host and --allow-origin go with --transport streamable-http")
    if args.transport != "stdio":
        from portagent.mcp.http import transport_security
        from portagent.mcp.server import check_bind

        check_bind(args.host, tokens)  # before loading anything: a refused bind starts nothing
        transport_security(args.host, args.allow_hosts, args.allow_origins)  # nor does a malformed entry
    target = load_target(args.target, args.policy)

    def announce(text: str) -> None:
        sys.stderr.write(f"portagent mcp: {text}\n")
        sys.stderr.flush()

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends a session like a closed stdin
        asyncio.run(
            serve(
                target,
                transport=args.transport,
                host=args.host,
                port=args.port,
                trace_path=Path(args.trace) if args.trace else None,
                namespace=args.namespace,
                scopes=args.scopes,
                env=args.env,
                announce=announce,
                auth_tokens=tokens if args.transport != "stdio" else [],
                allow_hosts=args.allow_hosts,
                allow_origins=args.allow_origins,
            )
        )
    return 0


TOKEN_ENV = "PORTAGENT_MCP_TOKEN"


def _env_tokens() -> list[str]:
    """``PORTAGENT_MCP_TOKEN``: one token, or several separated by commas (one per client)."""
    import os

    return [t.strip() for t in os.environ.get(TOKEN_ENV, "").split(",") if t.strip()]


def _tools(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.tools.mcp.bridge import is_mcp_tool
    from portagent.tools.mcp.sources import open_sources

    if not Path(args.agent).is_file():
        raise UsageError(f"{args.agent}: agent spec not found")
    bundle = load_agent(args.agent)

    async def go() -> tuple[Any, dict[str, Any]]:
        async with open_sources(bundle) as sources:
            return sources.bundle, sources.details()

    augmented, details = asyncio.run(go())
    rows = [
        (agent, t) for agent, node in augmented.agents.items() for t in node.tools.values() if is_mcp_tool(t)
    ]
    if args.json:
        print(
            json.dumps(
                [{"agent": a, **t.model_dump(mode="json", exclude_defaults=True)} for a, t in rows],
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    for name, entry in details["mcp"].items():
        info = entry.get("server") or {}
        print(
            f"server     {name}  {info.get('name', '?')} {info.get('version', '')}  "
            f"({entry['transport']}, {len(entry['tools'])} tools, listing {entry['fingerprint']})"
        )
        for gone in entry.get("removed_since_last_run", []):
            print(f"removed    {name}: {gone} (listed at the last run, gone now: never called)")
    for agent, tool in rows:
        print(f"tool       {agent}: {tool.name}  {tool.effect}  ({tool.owner})")
    return 0
