"""``portagent run AGENT --provider P --input TEXT (--emulator SCRIPT | --live [--base-url URL])``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from portagent.contracts.providers import PROVIDERS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run an agent once on one provider",
        description="Run an agent on one provider and write trace.jsonl and run.json. Exit 0 when "
        "the run completed (or waits for approval), 1 when a budget stopped it, "
        "2 on usage errors, 3 when the provider or SDK failed.",
    )
    p.add_argument("agent", help="agent spec file")
    p.add_argument("--provider", required=True, choices=PROVIDERS)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--input", help="user message (repeat for a multi-turn conversation)", action="append")
    src.add_argument("--input-file", help="file holding the user message")
    end = p.add_mutually_exclusive_group(required=True)
    end.add_argument("--emulator", metavar="SCRIPT", help="run against portagent's emulator following SCRIPT")
    end.add_argument("--live", action="store_true", help="call the real vendor API (needs its API key)")
    end.add_argument("--replay", metavar="DIR", help="replay a recorded run folder offline")
    p.add_argument("--base-url", help="with --live: a custom endpoint (proxy, gateway, or an emulator)")
    p.add_argument("--out", help="output folder (default: $PORTAGENT_HOME/runs/<run_id>)")
    p.add_argument(
        "--approver",
        default="auto-deny",
        help="auto-approve | auto-deny | defer | interactive (default: auto-deny)",
    )
    p.add_argument(
        "--idempotency-key", help="a repeated key answers duplicate, or resumes a run waiting for approval"
    )
    p.add_argument("--env", default="dev", choices=["lab", "dev", "staging", "prod"])
    p.add_argument("--scope", dest="scopes", action="append", default=[], help="actor scope (repeatable)")
    p.add_argument("--stream", action="store_true", help="use the SDK's streaming mode")
    p.add_argument("--openai-api", choices=["responses", "chat_completions"])


def run(args: argparse.Namespace) -> int:
    import asyncio

    from portagent.adapters.base import REGISTRY, get_adapter
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.contracts.run import RunRequest
    from portagent.runtime.runner import RunConfig, arun_full

    if args.replay:
        return _replay(args)
    if args.input_file:
        path = Path(args.input_file)
        if not path.is_file():
            raise UsageError(f"{args.input_file}: input file not found")
        messages: list[str] = [path.read_text(encoding="utf-8").strip()]
    elif args.input:
        messages = args.input
    else:
        raise UsageError("give the user message with --input TEXT or --input-file FILE")
    if args.base_url and not args.live:
        raise UsageError("--base-url goes with --live")
    if not Path(args.agent).exists():
        raise UsageError(f"{args.agent}: agent spec not found")
    bundle = load_agent(args.agent)
    get_adapter(args.provider)  # missing extra → exit 2 before anything starts
    info = REGISTRY[args.provider]
    request = RunRequest(
        input=messages if len(messages) > 1 else messages[0],
        provider=args.provider,
        idempotency_key=args.idempotency_key,
        env=args.env,
        scopes=args.scopes,
    )
    options = RunOptions(streaming=args.stream, openai_api=args.openai_api)

    async def go() -> Any:
        if args.live:
            key = os.environ.get(info.key_env)
            if not key:
                raise UsageError(f"--live needs {info.key_env} in the environment")
            endpoint = Endpoint(source="live", mode="direct", base_url=args.base_url, api_key=key)
            return await _run(endpoint)
        from portagent.emulator import load_script, serve

        script = load_script(args.emulator)
        with serve(script) as emu:
            endpoint = Endpoint(
                source="emulator",
                mode="direct",
                base_url=emu.base_url,
                api_key=info.dummy_key,
                script_hash=getattr(script, "script_hash", None),
            )
            return await _run(endpoint)

    async def _run(endpoint: Endpoint) -> Any:
        out = Path(args.out) if args.out else None
        config = RunConfig(
            endpoint=endpoint, approver=args.approver, out_dir=out, options=options, persist=out is None
        )
        return await arun_full(bundle, request, config)

    output = asyncio.run(go())
    _print_summary(output)
    status = output.result.status
    if status == "failed":
        return 3
    if status == "budget_exhausted":
        return 1
    return 0


def _replay(args: argparse.Namespace) -> int:
    """Replay one recorded run folder offline (no server, no key, no network)."""
    import asyncio

    from portagent.adapters.base import get_adapter
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.runtime.replay import load_recorded, replay_folder, version_changes

    if args.input or args.input_file:
        raise UsageError("--replay replays the recorded input; drop --input/--input-file")
    folder = Path(args.replay)
    recorded = load_recorded(folder)
    if recorded.record.manifest.provider != args.provider:
        raise UsageError(
            f"{folder} was recorded with provider {recorded.record.manifest.provider!r}, "
            f"not {args.provider!r}"
        )
    bundle = load_agent(args.agent)
    get_adapter(args.provider)
    for change in version_changes(recorded.record):
        print(f"note       SDK version changed since recording: {change}")
    output = asyncio.run(replay_folder(bundle, folder, out_dir=Path(args.out) if args.out else None))
    _print_summary(output)
    r = output.result
    if r.stop_reason == "cassette_drift":
        return 1
    return 3 if r.status == "failed" else (1 if r.status == "budget_exhausted" else 0)


def _print_summary(output: Any) -> None:
    r = output.result
    decisions = {e.call_id: e.decision for e in output.events if e.type == "permission.decision"}
    results = {e.call_id: e for e in output.events if e.type == "tool.result"}
    print(f"status     {r.status} ({r.stop_reason})  run {r.run_id}  attempt {r.attempt}")
    for e in output.events:
        if e.type == "tool.call":
            res = results.get(e.call_id)
            state = "ok" if res is not None and res.ok else (res.error if res is not None else "no result")
            print(
                f"tool       {e.call_id} {e.tool}  decision={decisions.get(e.call_id, '-')}  result={state}"
            )
        elif e.type == "handoff":
            print(f"handoff    {e.from_agent} -> {e.to_agent} ({e.kind})")
        elif e.type == "error":
            print(f"error      {e.error_type}: {e.message}")
    u = r.usage
    cost = "unknown" if r.cost_usd is None else f"${r.cost_usd:.6f} ({r.cost_source})"
    print(f"tokens     in={u.input_tokens} out={u.output_tokens} model_calls={u.model_calls}")
    print(f"cost       {cost}   duration {r.duration_ms} ms")
    if r.pending_approvals:
        for a in r.pending_approvals:
            print(
                f"approval   {a} pending: portagent approvals approve|reject|edit {a}, then re-run with the same "
                f"--idempotency-key"
            )
    if r.final_output is not None:
        print(f"final      {r.final_output}")
    if r.trace_path:
        print(f"trace      {r.trace_path}")
