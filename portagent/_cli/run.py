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
        default=None,
        help="auto-approve | auto-deny | defer | interactive (default: auto-deny; with --replay, only the "
        "recorded rejections and deferrals are reused — a recorded approval never runs a handler by itself)",
    )
    p.add_argument(
        "--idempotency-key",
        help="the same request with a repeated key answers duplicate, or resumes its run (waiting for approval or interrupted); another request with that key is refused",
    )
    p.add_argument("--env", default="dev", choices=["lab", "dev", "staging", "prod"])
    p.add_argument("--scope", dest="scopes", action="append", default=[], help="actor scope (repeatable)")
    p.add_argument("--stream", action="store_true", help="use the SDK's streaming mode")
    p.add_argument("--openai-api", choices=["responses", "chat_completions"])
    p.add_argument(
        "--context-manifest",
        action="store_true",
        help="write a context.manifest event before every model call (on by default for an agent with "
        "max_context_tokens; docs/context.md)",
    )
    p.add_argument(
        "--session",
        metavar="ID",
        help="continue thread ID (started if new): its earlier turns are sent with the message, and the "
        "exchange is added when the run completes (docs/sessions.md); works across providers",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from portagent.adapters.base import REGISTRY, get_adapter
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.contracts.run import RunRequest
    from portagent.runtime.keys import live_key
    from portagent.runtime.runner import RunConfig, arun_full

    if args.replay:
        return _replay(args)
    if args.input_file:
        messages: list[str] = [read_input_file(args.input_file)]
    elif args.input:
        messages = args.input
    else:
        raise UsageError("give the user message with --input TEXT or --input-file FILE")
    if any(not m.strip() for m in messages):
        raise UsageError("the user message is empty: give some text with --input or --input-file")
    if args.base_url and not args.live:
        raise UsageError("--base-url goes with --live")
    if args.session is not None:
        from portagent.runtime.session_store import check_session_id

        check_session_id(args.session)
    check_out_folder(args.out)
    from portagent.tools.approvers import make_approver

    make_approver(args.approver)  # a bad name or an approver module that fails to import: exit 2 now
    if not Path(args.agent).exists():
        raise UsageError(f"{args.agent}: agent spec not found")
    if args.emulator and not Path(args.emulator).is_file():
        raise UsageError(f"--emulator {args.emulator}: emulator script not found")
    bundle = load_agent(args.agent)
    get_adapter(args.provider)  # missing extra → exit 2 before anything starts
    info = REGISTRY[args.provider]
    request = RunRequest(
        input=messages if len(messages) > 1 else messages[0],
        provider=args.provider,
        idempotency_key=args.idempotency_key,
        env=args.env,
        scopes=args.scopes,
        session_id=args.session,
    )
    options = RunOptions(streaming=args.stream, openai_api=args.openai_api)
    if args.context_manifest:
        options.extra["context_manifest"] = True
    invocation = invocation_of(args, request)
    started: list[tuple[str, Path | None]] = []

    async def go() -> Any:
        if args.live:
            key = live_key(args.provider, bundle)
            # live, or endpoint when the URL (--base-url or the provider's base-URL variable) is not the
            # vendor's official host: the runner labels it (runtime.provenance.labelled) and records the URL
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
            endpoint=endpoint,
            approver=args.approver or "auto-deny",
            out_dir=out,
            options=options,
            persist=out is None,
            invocation=invocation,
            on_start=lambda run_id, folder: started.append((run_id, folder)),
        )
        if args.session is not None:
            from portagent.runtime.sessions import arun_in_session

            return await arun_in_session(bundle, request, config)
        return await arun_full(bundle, request, config)

    try:
        output = asyncio.run(go())
    except KeyboardInterrupt:
        if not started:  # stopped before the run began: nothing of it to name
            raise
        return interrupted(*started[-1], resumable=args.idempotency_key is not None)
    _print_summary(output)
    if args.session is not None:
        from portagent.runtime.sessions import describe_session_run

        print(describe_session_run(args.session, output.result))
    status = output.result.status
    if status == "failed":
        return 3
    if status == "budget_exhausted":
        return 1
    return 0


def invocation_of(args: argparse.Namespace, request: Any) -> dict[str, Any]:
    """What ``portagent resume RUN_ID`` needs to start this run again: kept in ``run.json`` and the
    journal's header. Paths absolute, the input masked, never a key (taken from the environment)."""
    from portagent.core.secrets import mask_data

    endpoint: dict[str, Any] = (
        {"live": True, "base_url": args.base_url}
        if args.live
        else {"emulator": str(Path(args.emulator).resolve())}
    )
    return {
        "agent": str(Path(args.agent).resolve()),
        "provider": args.provider,
        "endpoint": endpoint,
        "request": mask_data(
            request.model_dump(mode="json", exclude={"idempotency_key"}, exclude_defaults=True)
        ),
        "options": {"stream": bool(args.stream), "openai_api": args.openai_api},
        "approver": args.approver,
    }


def interrupted(run_id: str, folder: Path | None, *, resumable: bool) -> int:
    """Ctrl-C during a run: one line naming the run and where its files are, so what it wrote can be
    found (and, for a run the run store keeps, resumed); exit 130 like every interrupted command."""
    import sys

    if folder is None or not folder.is_dir() or not any(folder.iterdir()):
        sys.stderr.write(f"portagent: interrupted run {run_id}; it wrote nothing\n")
        return 130
    then = (
        f"'portagent resume {run_id}' continues it"
        if resumable
        else "without --idempotency-key it cannot be resumed"
    )
    sys.stderr.write(f"portagent: interrupted run {run_id}; what it wrote so far is in {folder}; {then}\n")
    return 130


MAX_INPUT_BYTES = 10 * 1024 * 1024
"""``--input-file`` larger than this is refused (a user message, not a data set)."""


def read_input_file(name: str) -> str:
    """The user message in ``name``: a readable UTF-8 text file, else one clear UsageError."""
    from portagent.contracts.errors import UsageError

    path = Path(name)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "is not a regular file" if path.exists() else "not found"
        raise UsageError(f"{name}: input file {what}")
    try:
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise UsageError(f"{name}: input file is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MB")
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{name}: cannot read the input file ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{name}: input file is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "save it as UTF-8"
        ) from None
    return text.strip()


RUN_FOLDER_FILES = frozenset(
    {
        "run.json",
        "trace.jsonl",
        "cassette.yaml",
        "transport.jsonl",
        "http.yaml",
        "mcp.json",
        "otel.json",
        "journal",
    }
)
"""What a run (or its recording) writes into its folder: a folder holding only these may be written again."""


def check_out_folder(out: str | None) -> None:
    """``--out`` must be a folder or creatable as one — checked before anything runs."""
    from portagent.contracts.errors import UsageError

    if out is None:
        return
    if not out.strip():
        raise UsageError("--out: the folder name is empty")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"--out {out}: exists and is not a folder; give a folder for trace.jsonl and run.json"
        )
    if path.is_dir():
        # A run writes run.json and trace.jsonl into --out: only an empty folder or an earlier run's own
        # folder may receive them, never a folder of other files (``--out /``, ``--out ~``).
        foreign = sorted(e.name for e in path.iterdir() if e.name not in RUN_FOLDER_FILES)
        if foreign:
            shown = ", ".join(foreign[:3]) + (" …" if len(foreign) > 3 else "")
            raise UsageError(
                f"--out {out}: the folder holds other files ({shown}); give an empty folder or a run's own folder"
            )
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"--out {out}: {parent} is a file, so the folder cannot be created")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"--out {out}: {parent} is not writable")
            break


def _replay(args: argparse.Namespace) -> int:
    """Replay one recorded run folder offline (no server, no key, no network)."""
    import asyncio

    from portagent.adapters.base import get_adapter
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.runtime.replay import load_recorded, replay_folder, version_changes

    if args.input or args.input_file:
        raise UsageError("--replay replays the recorded input; drop --input/--input-file")
    if args.session is not None:
        raise UsageError("--replay replays the recorded input (its history included); drop --session")
    check_out_folder(args.out)
    folder = Path(args.replay)
    if not folder.is_dir():  # a folder named on the command line: a usage error (exit 2)
        what = "is a file, not a cassette folder" if folder.exists() else "no such cassette folder"
        raise UsageError(f"--replay {folder}: {what}")
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
    output = asyncio.run(
        replay_folder(bundle, folder, out_dir=Path(args.out) if args.out else None, approver=args.approver)
    )
    _print_summary(output)
    for note in output.notes:  # approval decisions that differ from the recording's
        print(f"drift      {note}")
    r = output.result
    if r.stop_reason == "cassette_drift" or output.notes:
        return 1
    return 3 if r.status == "failed" else (1 if r.status == "budget_exhausted" else 0)


def _print_summary(output: Any) -> None:
    from portagent.core.terminal import printable

    def show(line: str) -> None:  # what the model, tools and errors wrote: escapes shown, not obeyed
        print(printable(line))

    r = output.result
    decisions = {e.call_id: e.decision for e in output.events if e.type == "permission.decision"}
    results = {e.call_id: e for e in output.events if e.type == "tool.result"}
    show(f"status     {r.status} ({r.stop_reason})  run {r.run_id}  attempt {r.attempt}")
    if output.record is not None:  # provenance: live / endpoint (with its URL) / emulator / replay (of …)
        m = output.record.manifest
        where = f" (recorded: {m.recorded_source})" if m.recorded_source else ""
        show(f"source     {m.source}{where}" + (f"  {m.base_url}" if m.base_url else ""))
    if r.stop_reason == "interrupted" and r.error:  # no events: the attempt died with its process
        show(f"error      {r.error}")
    for e in output.events:
        if e.type == "tool.call":
            res = results.get(e.call_id)
            state = "ok" if res is not None and res.ok else (res.error if res is not None else "no result")
            show(f"tool       {e.call_id} {e.tool}  decision={decisions.get(e.call_id, '-')}  result={state}")
        elif e.type == "handoff":
            show(f"handoff    {e.from_agent} -> {e.to_agent} ({e.kind})")
        elif e.type == "error":
            show(f"error      {e.error_type}: {e.message}")
    u = r.usage
    cost = "unknown" if r.cost_usd is None else f"${r.cost_usd:.6f} ({r.cost_source})"
    show(f"tokens     in={u.input_tokens} out={u.output_tokens} model_calls={u.model_calls}")
    cold = " (cold start: includes the SDK's one-time start-up)" if r.cold_start else ""
    show(f"cost       {cost}   duration {r.duration_ms} ms{cold}")
    if r.pending_approvals:
        for a in r.pending_approvals:
            show(
                f"approval   {a} pending: portagent approvals approve|reject|edit {a}, then "
                + (
                    f"portagent resume {r.run_id}"
                    if r.trace_path
                    else "re-run with the same --idempotency-key"
                )
            )
    if r.final_output is not None:
        print("final      " + printable(str(r.final_output), lines=True))
    if r.trace_path:
        print(f"trace      {r.trace_path}")
