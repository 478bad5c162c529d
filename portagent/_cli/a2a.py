"""``portagent a2a serve AGENT --provider P (--emulator SCRIPT | --live) [--port N]``: serve an agent over A2A.

The AgentCard (generated from the spec) is at ``/.well-known/agent-card.json``; JSON-RPC at ``/``
(``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel`` and their A2A 1.0 names). Each
task is a governed portagent run; a run waiting for approval is ``input-required`` until its card is
decided (``portagent approvals``) and the caller sends another message on the task. Loopback by
default; a non-loopback ``--host`` needs a token (``PORTAGENT_A2A_TOKEN`` or ``--token``); every request
needs an allowed Host and Origin (loopback, the bound address, ``--allow-host``/``--allow-origin``).
docs/a2a.md.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from portagent.contracts.providers import PROVIDERS


def add_parser(sub: Any) -> None:
    from portagent.core.serving import add_allowlist_args

    p = sub.add_parser("a2a", help="serve an agent over the A2A protocol")
    asub = p.add_subparsers(dest="a2a_command", metavar="ACTION", required=True)
    s = asub.add_parser(
        "serve",
        help="serve an agent spec as an A2A agent (card, message/send, streaming, tasks/get, tasks/cancel)",
        description="Serve AGENT over A2A until Ctrl-C. Exit 2 for a usage error (a non-loopback --host "
        "without a token, a malformed --allow-host/--allow-origin, a port in use, a missing extra or key).",
    )
    s.add_argument("agent", help="agent spec file")
    s.add_argument("--provider", required=True, choices=PROVIDERS)
    end = s.add_mutually_exclusive_group(required=True)
    end.add_argument("--emulator", metavar="SCRIPT", help="answer from portagent's emulator following SCRIPT")
    end.add_argument("--live", action="store_true", help="call the real vendor API (needs its API key)")
    s.add_argument("--base-url", help="with --live: a custom endpoint (proxy, gateway, or an emulator)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    s.add_argument(
        "--token",
        dest="tokens",
        action="append",
        default=[],
        metavar="SECRET",
        help="bearer token callers must send (repeatable; prefer PORTAGENT_A2A_TOKEN, which ps does not show)",
    )
    add_allowlist_args(s, hosts_note="loopback names and the bound address always are")
    s.add_argument("--scope", dest="scopes", action="append", default=[], help="actor scope of the runs")
    s.add_argument("--env", default="dev", choices=["lab", "dev", "staging", "prod"], help="run environment")
    s.add_argument(
        "--runs", metavar="DIR", help="run folders, one per task (default $PORTAGENT_HOME/a2a/<agent>)"
    )
    s.add_argument("--request-log", metavar="FILE", help="append one JSON line per call received")


def _env_tokens() -> list[str]:
    import os

    from portagent.a2a.server import TOKEN_ENV

    return [t.strip() for t in os.environ.get(TOKEN_ENV, "").split(",") if t.strip()]


def _check_writable(runs: Path, request_log: Path | None) -> None:
    """Before serving: every task writes into ``runs`` and every call into ``request_log``; a folder that
    is a file, a log that is a folder or an unwritable place would fail each request instead."""
    from portagent.contracts.errors import UsageError
    from portagent.core.files import not_a_folder

    for folder, what in ((runs, "--runs"), (request_log.parent if request_log else None, "--request-log")):
        if folder is not None and not_a_folder(folder) is not None:
            raise UsageError(f"{what}: {not_a_folder(folder)} is a file, not a folder")
    runs.mkdir(parents=True, exist_ok=True)
    if request_log is not None:
        if request_log.exists() and not request_log.is_file():
            raise UsageError(f"--request-log {request_log}: exists and is not a regular file")
        request_log.parent.mkdir(parents=True, exist_ok=True)
        with request_log.open("a", encoding="utf-8"):
            pass


def run(args: argparse.Namespace) -> int:
    import asyncio

    from portagent.a2a.server import ServeConfig, check_bind, serve
    from portagent.adapters.base import REGISTRY, get_adapter
    from portagent.adapters.port import Endpoint
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.core.home import portagent_home
    from portagent.core.serving import allowlist
    from portagent.runtime.keys import live_key
    from portagent.runtime.runner import check_runnable

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    if args.base_url and not args.live:
        raise UsageError("--base-url goes with --live")
    tokens = list(args.tokens) + _env_tokens()
    check_bind(args.host, tokens)  # before loading anything: a refused bind starts nothing
    allowlist(args.host, args.allow_hosts, args.allow_origins)  # nor does a malformed entry
    info = REGISTRY[args.provider]
    try:
        import a2a  # noqa: F401
    except ImportError:
        raise UsageError("portagent a2a needs the 'a2a-sdk' package: pip install 'portagent[a2a]'") from None
    if not Path(args.agent).exists():
        raise UsageError(f"{args.agent}: agent spec not found")
    bundle = load_agent(args.agent)
    get_adapter(args.provider)  # missing extra → exit 2 before anything starts
    check_runnable(bundle, args.provider)
    key = live_key(args.provider, bundle) if args.live else None
    runs = Path(args.runs) if args.runs else portagent_home(create=True) / "a2a" / bundle.spec.name
    _check_writable(runs, Path(args.request_log) if args.request_log else None)

    def say(text: str) -> None:
        sys.stderr.write(f"portagent a2a: {text}\n")
        sys.stderr.flush()

    def config(endpoint: Any) -> ServeConfig:
        return ServeConfig(
            bundle=bundle,
            provider=args.provider,
            endpoint=endpoint,
            runs_dir=runs,
            scopes=args.scopes,
            env=args.env,
            tokens=tokens,
            request_log=Path(args.request_log) if args.request_log else None,
            allow_hosts=args.allow_hosts,
            allow_origins=args.allow_origins,
        )

    with contextlib.suppress(KeyboardInterrupt):
        if args.live:
            endpoint = Endpoint(source="live", mode="direct", base_url=args.base_url, api_key=key)
            asyncio.run(serve(config(endpoint), args.host, args.port, say))
        else:
            from portagent.emulator import load_script
            from portagent.emulator import serve as emulate

            script = load_script(args.emulator)
            with emulate(script) as emu:
                endpoint = Endpoint(
                    source="emulator",
                    mode="direct",
                    base_url=emu.base_url,
                    api_key=info.dummy_key,
                    script_hash=getattr(script, "script_hash", None),
                )
                asyncio.run(serve(config(endpoint), args.host, args.port, say))
    return 0
