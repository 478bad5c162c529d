"""``portagent resume RUN_ID [--approver A] [--out DIR]``: continue a run that waits for approval or whose
process died, the way it was started (ADR 0007: its journal is replayed up to the paused call, then the
run goes on against the endpoint)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "resume",
        help="continue a run that waits for approval (after approvals approve|reject|edit) or was interrupted",
        description="Continue a run by its id, with the agent, provider and endpoint it was started with: "
        "the model's earlier turns are replayed from the run's journal, so the approved call is the call "
        "that runs; then the run goes on live (or against the emulator). A run that already finished "
        "answers its first result (duplicate). Exit codes as for 'portagent run'.",
    )
    p.add_argument("run_id", help="the run id ('portagent run' prints it; 'approvals show' names it)")
    p.add_argument(
        "--approver",
        default=None,
        help="who decides new approval cards in the resumed attempt (default: the run's own approver)",
    )
    p.add_argument("--out", help="write the whole run (every attempt) into this folder from now on")
    p.add_argument(
        "--base-url",
        help="a --live run's endpoint URL again, with the credentials it carried (user:password@, ?token=): "
        "portagent stores them nowhere. Only that endpoint is accepted; the provider's base-URL variable "
        "(OPENAI_BASE_URL …) set to it works too",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from portagent._cli.run import _print_summary, check_out_folder, interrupted
    from portagent.contracts.errors import UsageError

    if not args.run_id.strip():
        raise UsageError("give the run id to resume ('portagent run' prints it)")
    check_out_folder(args.out)
    prior, invocation = _find(args.run_id)
    from portagent.adapters.base import REGISTRY, get_adapter
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.run import RunRequest
    from portagent.runtime.keys import live_key
    from portagent.runtime.runner import RunConfig, arun_full
    from portagent.tools.approvers import make_approver

    provider = str(invocation.get("provider") or "")
    if provider not in REGISTRY:
        raise UsageError(f"run {args.run_id}: its record names an unknown provider {provider!r}")
    agent = Path(str(invocation.get("agent") or ""))
    if not agent.is_file():
        raise UsageError(
            f"run {args.run_id} was started with the agent spec {agent}, which is not there any more; "
            "put it back to resume the run"
        )
    approver = args.approver or invocation.get("approver") or "auto-deny"
    import sys

    if str(agent.parent) not in sys.path:  # a 'module:function' approver beside the agent, like its handlers
        sys.path.insert(0, str(agent.parent))
    make_approver(approver)
    bundle = load_agent(agent)
    get_adapter(provider)
    request = RunRequest.model_validate(
        {**(invocation.get("request") or {}), "provider": provider, "idempotency_key": prior.idempotency_key}
    )
    opts = invocation.get("options") or {}
    options = RunOptions(streaming=bool(opts.get("stream")), openai_api=opts.get("openai_api"))
    where = invocation.get("endpoint") or {}
    info = REGISTRY[provider]
    started: list[tuple[str, Path | None]] = []

    if args.base_url and not where.get("live"):
        raise UsageError(f"--base-url: run {args.run_id} ran against the emulator, not a --live endpoint")
    base_url: str | None = None
    if where.get("live"):
        from portagent.runtime.provenance import base_url_from_env, base_url_variable
        from portagent.runtime.resume import resume_base_url

        stored = where.get("base_url")
        base_url = resume_base_url(
            args.run_id,
            str(stored) if stored else None,
            args.base_url,
            base_url_variable(provider, bundle),
            base_url_from_env(provider, bundle),
        )

    async def go() -> Any:
        if where.get("live"):
            key = live_key(provider, bundle, needs=f"run {args.run_id} runs --live: resuming it needs")
            return await _run(Endpoint(source="live", mode="direct", base_url=base_url, api_key=key))
        script_path = Path(str(where.get("emulator") or ""))
        if not script_path.is_file():
            raise UsageError(
                f"run {args.run_id} ran against the emulator script {script_path}, which is not there any more"
            )
        from portagent.emulator import load_script, serve

        script = load_script(script_path)
        with serve(script) as emu:
            endpoint = Endpoint(
                source="emulator",
                mode="direct",
                base_url=emu.base_url,
                api_key=info.dummy_key,
                script_hash=getattr(script, "script_hash", None),
            )
            return await _run(endpoint)

    async def _run(endpoint: Any) -> Any:
        out = Path(args.out) if args.out else None
        config = RunConfig(
            endpoint=endpoint,
            approver=approver,
            out_dir=out,
            options=options,
            invocation=invocation,
            on_start=lambda run_id, folder: started.append((run_id, folder)),
        )
        if request.session_id is not None:
            # a run of a session (run --session, chat): framed with the thread as the run did it, and its
            # exchange added to the thread when it completes — as re-running it with the same key does
            from portagent.runtime.sessions import arun_in_session

            return await arun_in_session(bundle, request, config)
        return await arun_full(bundle, request, config)

    try:
        output = asyncio.run(go())
    except KeyboardInterrupt:
        if not started:
            raise
        return interrupted(*started[-1], resumable=True)
    _print_summary(output)
    if request.session_id is not None:
        from portagent.runtime.sessions import describe_session_run

        print(describe_session_run(request.session_id, output.result))
    status = output.result.status
    return 3 if status == "failed" else (1 if status == "budget_exhausted" else 0)


def _find(run_id: str) -> tuple[Any, dict[str, Any]]:
    """The run's record in the run store and how it was started; one clear message when either is missing."""
    from portagent.contracts.errors import UsageError
    from portagent.runtime.resume import load_invocation
    from portagent.runtime.runstore import RunStore

    store = RunStore()
    try:
        prior = store.by_run_id(run_id)
    finally:
        store.close()
    if prior is None:
        raise UsageError(
            f"no run {run_id!r} to resume in {store.path}: a run can be resumed when it waits for approval "
            "or was interrupted (check the id 'portagent run' printed, and PORTAGENT_HOME)"
        )
    invocation = load_invocation(Path(prior.trace_path).parent, prior.attempt) if prior.trace_path else None
    if invocation is None and (prior.idempotency_key or "").startswith("a2a:"):
        raise UsageError(
            f"run {run_id} is the run of A2A task {prior.idempotency_key[len('a2a:') :]}: it goes on when the "
            "caller sends any message on that task ('portagent a2a serve' resumes it), not by portagent resume"
        )
    if invocation is None:
        raise UsageError(
            f"run {run_id} was not started by 'portagent run' with a run folder, so how to start it again is "
            f"not known: run the same request again with --idempotency-key {prior.idempotency_key!r}"
        )
    return prior, invocation
