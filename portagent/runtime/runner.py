"""The runner: ties an adapter, the gateway, the budgets and the trace together for one run.

    request ──► idempotency (runs.db) ──► run.started ──► adapter.run(session) ──► run.completed
                 duplicate / resume                      │ gateway per agent      run.json, runs.db
                                                         │ model.call / handoff
                                                         └ BudgetStop / ApprovalPause / errors

One ``RunResult`` shape for every outcome; ``run.started`` and ``run.completed`` are always written,
even when the SDK fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from portagent.adapters.base import REGISTRY, Adapter, AdapterOutcome, get_adapter
from portagent.adapters.port import (
    ApproverSpec,
    Endpoint,
    RunApprovals,
    RunOptions,
    RunSession,
    unwrap_signal,
)
from portagent.adapters.portability import verdict
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.errors import ApprovalError, PortagentError, ProviderError
from portagent.contracts.run import (
    RunRecord,
    RunRequest,
    RunResult,
    RunState,
)
from portagent.contracts.trace import parse_event
from portagent.core.clock import Clock, IdFactory, SystemClock
from portagent.core.files import write_text_atomic
from portagent.core.secrets import mask_data, mask_text
from portagent.runtime.journaling import earlier_results, open_journal, register_paused
from portagent.runtime.provenance import labelled
from portagent.runtime.resume import (
    Resumption,
    interrupted_result,
    plan_resume,
    refuse_another_request,
    require_decided,
    resume_blockers,
    resumed_trace,
    supersede_stale_cards,
)
from portagent.runtime.run_record import failure_of, make_record, run_cost, trace_ref, usage_of
from portagent.tracing.propagation import CURRENT
from portagent.tracing.recorder import TraceRecorder

if TYPE_CHECKING:
    from portagent.runtime.replay import Recorded


@dataclass
class RunConfig:
    """How to run (not what): endpoint, approver, output folder, determinism hooks."""

    endpoint: Endpoint = field(default_factory=Endpoint)
    approver: ApproverSpec = "auto-deny"
    """An approver name (``auto-approve``, ``auto-deny``, ``defer``, ``interactive``), a scripted list, or an object."""
    out_dir: Path | None = None
    """Where ``trace.jsonl`` and ``run.json`` go; None keeps the trace in memory only."""
    clock: Clock | None = None
    ids: IdFactory | None = None
    options: RunOptions = field(default_factory=RunOptions)
    scope: str | None = None
    """Ledger/approval namespace; default ``run:<idempotency key or run id>``."""
    recorded_at: str | None = None
    """Fixed ``recorded_at`` for the manifest (replays keep the recording's)."""
    persist: bool = False
    """With no ``out_dir``: write to ``$PORTAGENT_HOME/runs/<run_id>/`` (what the CLI does)."""
    recorded: Recorded | None = None
    """For replays: the recorded run (``runtime.replay.Recorded``) whose latencies, duration and
    approval decisions are reused — timing is never taken from replay wall time."""
    journal: bool = True
    """Keep the run journal (``recording/journal.py``) — for a direct run with a run folder: the model
    traffic a resumed attempt replays (ADR 0007)."""
    invocation: dict[str, Any] | None = None
    """How the command line started the run, kept in ``run.json`` for ``portagent resume RUN_ID``."""
    on_start: Callable[[str, Path | None], None] | None = None
    """Told the run id and its folder (None: memory only) once both are settled, before the attempt
    starts: a caller interrupted mid-run (Ctrl-C) can still say which run it was and where it wrote."""
    cancel_stop_reason: str | None = None
    """Set: a cancelled attempt ends the run — ``run.completed`` (``cancelled``, this stop reason), ``run.json``
    and the run store written — before the cancellation goes on (an A2A ``tasks/cancel``: the caller is done
    with it). Unset (the command line's Ctrl-C): the attempt stays interrupted, and ``portagent resume``
    carries it on."""


@dataclass
class RunOutput:
    """A run's result, its events and its ``run.json`` record."""

    result: RunResult
    events: list[Any]
    record: RunRecord | None
    notes: list[str] = field(default_factory=list)
    """What a replay found besides drift (approval decisions that differ from the recording)."""


def check_runnable(bundle: AgentBundle, provider: str) -> None:
    """Refuse, before anything runs, a spec the provider cannot express (DESIGN principle 4): the one
    portability verdict, the same that ``validate --provider``, ``port-check``, eval and export give."""
    verdict(bundle, provider).raise_if_unrunnable()


def _handler_scope(bundle: AgentBundle) -> contextlib.AbstractContextManager[Any]:
    """Handlers (``module:function`` strings) resolve in the folder of the file that declared the tool
    first (a shared tools file's folder, the agent spec's for an inline tool), then the agent specs'
    folders, then the other tools files' folders, then ``sys.path`` — without putting the folders on
    ``sys.path``, where one folder's ``tools.py`` would stand for every other folder's and its ``yaml.py``
    hide the installed ``yaml`` from the whole process (``core/handler_folders.py``)."""
    from portagent.tools.handlers import bundle_scope, within

    return within(bundle_scope(bundle))


def _validate_output(bundle: AgentBundle, final: Any) -> tuple[Any, bool | None]:
    schema = bundle.spec.output_schema
    if schema is None:
        return final, None
    value = final
    if isinstance(final, str):
        try:
            value = json.loads(final)
        except json.JSONDecodeError:
            return final, False
    from jsonschema import Draft202012Validator

    return value, Draft202012Validator(schema).is_valid(value)


def _existing_trace(path: Path | None) -> tuple[str | None, int]:
    if path is None or not path.exists():
        return None, 0
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not lines:
        return None, 0
    first = parse_event(json.loads(lines[0]))
    return first.trace_id, len(lines)


async def arun_full(
    agent: AgentBundle | str | Path,
    request: RunRequest,
    config: RunConfig | None = None,
    *,
    on_event: Any = None,
) -> RunOutput:
    """Run one request. Returns the result, the events and the ``run.json`` record."""
    config = config or RunConfig()
    bundle = agent if isinstance(agent, AgentBundle) else load_agent(agent)
    from portagent.tools.a2a import bridge as a2a_bridge

    if a2a_bridge.ACTIVE.get() is None and any(node.spec.a2a_agents for node in bundle.agents.values()):
        from portagent.tools.a2a.sources import open_agents

        # remote A2A agents (docs/a2a.md): cards read before run.started, each skill joins node.tools as
        # a ToolSpec the gateway executes; the wrapped bundle then runs like any other
        async with open_agents(bundle, config.endpoint) as (wrapped, _agents):
            return await arun_full(wrapped, request, config, on_event=on_event)
    if not any(node.spec.mcp_servers for node in bundle.agents.values()):
        return await _arun_full(bundle, request, config, on_event)
    from portagent.tools.mcp.sources import open_sources

    # MCP tool sources (docs/mcp.md): listed once, before run.started; their tools join node.tools as
    # ToolSpecs the gateway executes; connections closed (and recordings written) after the run.
    async with open_sources(bundle, config.endpoint, config.options) as mcp:
        return await _arun_full(mcp.bundle, request, config, on_event, mcp=mcp)


def check_state_stores() -> None:
    """The state files a run opens only when a tool call first needs them — the approval cards, the effect
    ledger, the memory store — opened now when they exist, so a damaged one is the one-line usage error
    (exit 2) that ``approvals list`` gives for it, before anything runs or is written. Opened inside a tool
    call, the SDK wrapped that error as its own ("Error running tool …") and the run failed as a provider
    error (exit 3). A missing file is left alone: it is created, empty, when first needed. Each store's
    connection is kept for its next opener in the process (``sqlite_state``), so an eval's runs pay once."""
    from portagent.core.home import APPROVALS_DB, LEDGER_DB, state_file
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.ledger import EffectLedger
    from portagent.tools.memory_store import MEMORY_DB, MemoryStore

    stores: tuple[tuple[str, Any], ...] = (
        (APPROVALS_DB, ApprovalStore),
        (LEDGER_DB, EffectLedger),
        (MEMORY_DB, MemoryStore),
    )
    for name, store in stores:
        path = state_file(name, create=False)
        try:
            st = path.stat()
        except OSError:
            continue  # none yet (or unreadable: opening it says so when a call needs it)
        version = (st.st_ino, st.st_size, st.st_mtime_ns)
        if _STORES_CHECKED.get(str(path)) == version:
            continue  # opened whole in this process and unchanged since: an eval's later runs pay nothing
        store(path).close()
        _STORES_CHECKED[str(path)] = version


_STORES_CHECKED: dict[str, tuple[int, int, int]] = {}
"""State file → its (inode, size, mtime) when ``check_state_stores`` last opened it whole."""


async def _arun_full(
    bundle: AgentBundle, request: RunRequest, config: RunConfig, on_event: Any, mcp: Any = None
) -> RunOutput:
    provider = request.provider
    config.endpoint, _ = labelled(provider, config.endpoint, config.recorded, bundle)
    adapter = get_adapter(provider)
    check_runnable(bundle, provider)
    prepare = getattr(adapter, "prepare", None)  # imports a run needs, before any clock or budget starts
    if prepare is not None:
        prepare(bundle)
    from portagent.tools.context import check_run_context

    check_run_context(request.context)  # e.g. confidence outside [0, 1]: a usage error before anything runs
    check_state_stores()
    clock = config.clock or SystemClock()
    ids = config.ids or IdFactory()

    from portagent.runtime.runstore import RunStore

    store = RunStore() if request.idempotency_key else None
    run_id = ids.run_id()
    attempt = 1
    out_dir = config.out_dir
    if out_dir is None and config.persist:
        from portagent.core.home import portagent_home

        out_dir = portagent_home(create=True) / "runs" / run_id
    trace_path = out_dir / "trace.jsonl" if out_dir else None
    resumed: str | None = None
    resumption: Resumption | None = None
    if store is not None:
        key = request.idempotency_key
        assert key is not None
        if not store.lock(key):  # the lock is held by a live process for as long as it runs the key
            store.close()
            raise ApprovalError(f"request {key!r} is already running in another process")
        prior = store.get(key)
        if prior is not None and prior.status == "waiting_approval":
            try:
                require_decided(prior.pending)
                # the key's run continues only for the request that started it: else refused, nothing written
                refuse_another_request(prior, request, config.endpoint, config.invocation)
                resumption = plan_resume(prior, bundle, "approval decided")
            except BaseException:
                store.close()
                raise
            run_id, attempt = prior.run_id, prior.attempt + 1
            trace_path = resumed_trace(prior.trace_path, config.out_dir, trace_path, store)
            out_dir = trace_path.parent if trace_path else out_dir
            store.start_attempt(key, attempt, str(trace_path) if trace_path else None)
        elif prior is not None and prior.status in ("running", "interrupted"):
            # we hold the key's lock, so the process that left it running is dead (runstore docstring)
            try:
                refuse_another_request(prior, request, config.endpoint, config.invocation)
            except BaseException:
                store.close()
                raise
            blockers = resume_blockers(bundle)
            if blockers:
                result = interrupted_result(prior, blockers)
                store.interrupt(key, result.model_dump(mode="json"))
                store.close()
                return RunOutput(result, [], None)
            resumed = f"attempt {prior.attempt} was interrupted (its process died)"
            try:
                resumption = plan_resume(prior, bundle, resumed)
            except BaseException:
                store.close()
                raise
            run_id, attempt = prior.run_id, prior.attempt + 1
            trace_path = resumed_trace(prior.trace_path, config.out_dir, trace_path, store)
            out_dir = trace_path.parent if trace_path else out_dir
            store.start_attempt(key, attempt, str(trace_path) if trace_path else None)
        elif prior is not None:
            data = dict(prior.result or {})
            data.update(run_id=prior.run_id, status="duplicate", stop_reason="duplicate_request")
            store.close()
            return RunOutput(RunResult.model_validate(data), [], None)
        elif not store.claim(key, run_id, f"run:{key}", str(trace_path) if trace_path else None):
            store.close()
            raise ApprovalError(f"request {key!r} is already running")
    outer_span = CURRENT.get()  # the run's recorder makes its root span current for outgoing calls
    try:
        if config.on_start is not None:
            config.on_start(run_id, trace_path.parent if trace_path is not None else None)
        return await _run_attempt(
            bundle,
            request,
            config,
            on_event,
            mcp,
            adapter,
            clock,
            ids,
            store,
            run_id,
            attempt,
            trace_path,
            resumed,
            resumption,
        )
    except BaseException as e:
        if store is not None and _RECORDED_CANCEL not in getattr(e, "__notes__", ()):
            # the attempt ended without a result: the next request reconciles it
            message = str(e) or type(e).__name__
            store.interrupt(
                request.idempotency_key or "",
                {"run_id": run_id, "attempt": attempt, "error": f"{type(e).__name__}: {message}"},
            )
        raise
    finally:
        # ... only while it runs: a caller's later calls, and the rest of a tool call whose async handler
        # ran this run inline (tools/handlers.py), keep their own trace context
        CURRENT.set(outer_span)
        if store is not None:
            store.close()


_RECORDED_CANCEL = "portagent: the run was recorded as cancelled before this cancellation went on"
"""The note on a cancellation that ``_run_attempt`` recorded (``RunConfig.cancel_stop_reason``)."""


_STARTED: set[str] = set()
"""Providers this process has started a run of: the first one pays the SDK's one-time start-up inside its
timings (``RunResult.cold_start``); eval workers are long-lived per provider, so one run per worker."""


async def _run_attempt(
    bundle: AgentBundle,
    request: RunRequest,
    config: RunConfig,
    on_event: Any,
    mcp: Any,
    adapter: Adapter,
    clock: Clock,
    ids: IdFactory,
    store: Any,
    run_id: str,
    attempt: int,
    trace_path: Path | None,
    resumed: str | None,
    resumption: Resumption | None = None,
) -> RunOutput:
    provider = request.provider
    _, provenance = labelled(provider, config.endpoint, config.recorded, bundle)  # idempotent: labelled
    out_dir = trace_path.parent if trace_path is not None else None
    scope = config.scope or (resumption.scope if resumption else f"run:{request.idempotency_key or run_id}")

    trace_id, seq0 = _existing_trace(trace_path) if attempt > 1 else (None, 0)
    if trace_path is not None and attempt == 1 and trace_path.exists():
        trace_path.unlink()
    recorder = TraceRecorder(
        run_id=run_id,
        provider=provider,
        agent=bundle.root,
        clock=clock,
        ids=ids,
        trace_id=trace_id,
        path=trace_path,
    )
    recorder._seq = seq0
    if on_event is not None:
        recorder.subscribe(on_event)
    if config.recorded is not None:
        recorder.transform = config.recorded.restore_timing
    from portagent.core.budgets import RunBudget

    journal = open_journal(config, out_dir, run_id, attempt, provider, resumption, bundle)
    session = RunSession(
        bundle=bundle,
        request=request,
        endpoint=journal.endpoint if journal is not None else config.endpoint,
        recorder=recorder,
        budget=RunBudget(bundle.spec.budget),
        clock=clock,
        ids=ids,
        run_id=run_id,
        attempt=attempt,
        scope=scope,
        options=config.options,
        approvals=RunApprovals(config.approver),
    )
    if journal is not None:
        session.journal = journal.journal
    elif config.endpoint.mode == "record":  # a recording's requests go straight out: the gate is the SDK's
        from portagent.runtime.request_limits import request_gate

        session.request_gate = request_gate(provider)
    if resumption is not None and trace_path is not None:
        session.earlier_results = earlier_results(trace_path, attempt - 1)
    if mcp is not None:
        mcp.bind(session)
    model = session.model_for()
    for name in bundle.agents:
        session.model_for(name)
    info = REGISTRY[provider]
    state = RunState()
    state.advance("running")
    cold = provider not in _STARTED if config.recorded is None else config.recorded.cold_start
    _STARTED.add(provider)
    t0 = clock.monotonic()
    recorder.emit(
        "run.started",
        root=True,
        agent_version=bundle.spec.version,
        spec_hash=bundle.spec_hash,
        policy_hash=bundle.policy_hash,
        sdk=info.package,
        sdk_version=adapter.sdk_version(),
        model=model,
        case_id=request.case_id,
        repeat=request.repeat,
        source=config.endpoint.source,
        recorded_source=provenance.get("recorded_source"),
        mode=config.endpoint.mode,
        attempt=attempt,
        input=request.input,
        shared_settings_forced=bundle.spec.models.force_shared_settings,
        cold_start=cold,
        provider_details={
            **(mcp.details() if mcp is not None else {}),
            **({"resumed": resumed} if resumed else {}),
        },
    )
    started_at = recorder.of_type("run.started")[-1].ts  # (reading the clock again would move a test clock)
    if resumption is not None:
        recorder.emit(
            "attempt.started",
            root=True,
            attempt=attempt,
            resumed=resumption.reason,
            previous_status=resumption.previous_status,
            journal=resumption.journal,
            replays=len(resumption.kept),
            decided=resumption.decided,
        )

    outcome = AdapterOutcome()
    error: str | None = None
    stop_reason = "final_output"
    status = "completed"
    drive: asyncio.Future[AdapterOutcome] | None = None
    cancelled: BaseException | None = None  # re-raised once the run is recorded (cancel_stop_reason)
    try:
        # its own task (its context changes stay there), awaited under asyncio.timeout: on Python 3.11
        # wait_for loses a cancellation (Ctrl-C) that lands as the task finishes (ruff TID251 bans it)
        with _handler_scope(bundle):  # the task keeps a copy of this context: the scope is the run's only
            drive = asyncio.ensure_future(_drive(adapter, session))
        async with asyncio.timeout(bundle.spec.budget.timeout_s):
            outcome = await drive
        if session.stop is not None:  # an SDK swallowed the signal: honour it anyway
            raise session.stop
    except TimeoutError:
        limit = bundle.spec.budget.timeout_s
        session.budget_stop("timeout_s", limit, round(clock.monotonic() - t0, 3))
        status, stop_reason = "budget_exhausted", "timeout_s"
    except PortagentError as e:
        sig = unwrap_signal(e)
        if sig is None and not isinstance(e, ProviderError):
            raise
        status, stop_reason, error = failure_of(session, e)
    except Exception as e:  # SDK crash: the trace still ends with an error and run.completed
        status, stop_reason, error = failure_of(session, e)
    except BaseException as e:  # Ctrl-C, a cancelled task: what the attempt did is kept in trace.jsonl
        if config.cancel_stop_reason is None or not isinstance(e, asyncio.CancelledError):
            recorder.flush()
            raise
        cancelled = e  # a final cancel: the run is recorded as cancelled below, then it goes on
        status, stop_reason, error = "cancelled", config.cancel_stop_reason, "cancelled by the caller"
    finally:
        journal_summary = journal.close() if journal is not None else None
        # the task holds the adapter's exception, whose traceback holds this frame (and this frame the task):
        # dropped, a run that ended by an exception is freed by reference counting like any other
        drive = None
        session.end()

    if status == "completed" and outcome.vendor_stop:
        status, stop_reason = "budget_exhausted", outcome.vendor_stop
    final, output_valid = (
        _validate_output(bundle, outcome.final_output)
        if status == "completed"
        else (outcome.final_output, None)
    )
    pending = [a for g in session.all_gateways() for a in g.pending_approvals]
    if status == "waiting_approval":
        state.advance("waiting_approval")
    else:
        state.advance(status)  # type: ignore[arg-type]

    usage = usage_of(recorder.events)
    cost, cost_source = run_cost(session, outcome)
    duration_ms = round((clock.monotonic() - t0) * 1000, 3)
    if config.recorded is not None and config.recorded.duration_ms is not None:
        duration_ms = config.recorded.duration_ms
    tool_calls = len(recorder.of_type("tool.call"))
    recorder.emit(
        "run.completed",
        root=True,
        agent=outcome.final_agent or session.current_agent,
        status=status,
        stop_reason=stop_reason,
        final_output=final,
        output_valid=output_valid,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        model_calls=usage.model_calls,
        tool_calls=tool_calls,
        cost_usd=cost,
        cost_source=cost_source,
        duration_ms=duration_ms,
        provider_details=outcome.details,
    )
    if config.endpoint.mode == "record":
        from portagent.recording.scrub import refuse_if_secret

        refuse_if_secret(
            [e.model_dump(mode="json") for e in recorder.events], str(trace_path or "trace.jsonl")
        )
    recorder.flush()
    # Secrets never reach run.json, runs.db or the caller (core/secrets.py; record refused above).
    final, error = mask_data(final), mask_text(error) if error else error
    result = RunResult(
        run_id=run_id,
        status=status,
        stop_reason=stop_reason,
        final_output=final,
        output_valid=output_valid,
        usage=usage,
        tool_calls=tool_calls,
        cost_usd=cost,
        cost_source=cost_source,
        duration_ms=duration_ms,
        cold_start=cold,
        trace_path=trace_ref(trace_path, config.endpoint.mode),
        pending_approvals=pending,
        attempt=attempt,
        error=error,
    )
    record = make_record(
        result,
        session,
        config,
        adapter,
        resumption,
        attempt=attempt,
        started_at=started_at,
        journal_summary=journal_summary,
        events=recorder.events,
    )
    if out_dir is not None:
        write_text_atomic(out_dir / "run.json", mask_text(record.model_dump_json(indent=2) + "\n"))
    if store is not None:
        store.finish(request.idempotency_key or "", status, result.model_dump(mode="json"), pending)
    elif status == "waiting_approval" and out_dir is not None:
        register_paused(run_id, scope, trace_path, result, pending)
    if resumption is not None:
        supersede_stale_cards(scope, pending, attempt, status)
    if cancelled is not None:
        cancelled.add_note(_RECORDED_CANCEL)  # arun_full: the run store already says cancelled
        raise cancelled
    return RunOutput(result, list(recorder.events), record)


async def _drive(adapter: Adapter, session: RunSession) -> AdapterOutcome:
    """Run the adapter, inside a vcrpy cassette when recording or replaying a Python SDK (a replay of
    openai, adk, anthropic — or langgraph over OpenAI/Anthropic chat models — is served by the
    transport-level player, recording/player.py, instead).

    The Claude adapter records and replays its own transport (the CLI's HTTP is invisible to vcrpy).
    """
    endpoint = session.endpoint
    if endpoint.mode not in ("record", "replay") or session.provider == "claude":
        return await adapter.run(session)
    from portagent.recording.vcr_cassette import vcr_session

    assert endpoint.cassette_dir is not None, "record/replay needs endpoint.cassette_dir"
    mode = "none" if endpoint.mode == "replay" else endpoint.record_mode
    if mode == "none" and _plays(adapter, session):
        from portagent.recording.player import player_session

        live_mcp = any(n.spec.mcp_servers for n in session.bundle.agents.values()) and _live_mcp(
            session.options
        )
        with player_session(
            endpoint.cassette_dir, match_body=endpoint.match_body, offline_guard=not live_mcp
        ) as report:
            session.cassette_report = report
            return await adapter.run(session)
    with vcr_session(endpoint.cassette_dir, mode, match_body=endpoint.match_body) as report:
        session.cassette_report = report
        return await adapter.run(session)


def _live_mcp(options: RunOptions) -> bool:
    """A replay that asks its MCP servers live may reach them (``PORTAGENT_MCP_REPLAY=live``)."""
    from portagent.tools.mcp.sources import live_mcp_in_replay

    return live_mcp_in_replay(options)


def _player_providers() -> frozenset[str]:
    """Providers replayed by the transport-level player instead of vcrpy (recording/player.py)."""
    from portagent.recording.player import PLAYER_PROVIDERS

    return PLAYER_PROVIDERS


def _plays(adapter: Adapter, session: RunSession) -> bool:
    """The player serves this replay: the provider's adapter takes its transport — for every agent of the
    bundle, where an adapter says so per bundle (``replays_in_process``: langgraph's chat models)."""
    if session.provider not in _player_providers():
        return False
    per_bundle = getattr(adapter, "replays_in_process", None)
    return per_bundle is None or bool(per_bundle(session.bundle))


async def arun(
    agent: AgentBundle | str | Path, request: RunRequest, config: RunConfig | None = None
) -> RunResult:
    """Run one request and return its result."""
    return (await arun_full(agent, request, config)).result


def run(agent: AgentBundle | str | Path, request: RunRequest, config: RunConfig | None = None) -> RunResult:
    """Synchronous ``arun``."""
    return asyncio.run(arun(agent, request, config))


async def stream(
    agent: AgentBundle | str | Path, request: RunRequest, config: RunConfig | None = None
) -> AsyncIterator[Any]:
    """Yield TraceEvents as they happen; the last one is ``run.completed``."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    done = object()

    async def go() -> None:
        try:
            await arun_full(agent, request, config, on_event=queue.put_nowait)
        finally:
            queue.put_nowait(done)

    task = asyncio.create_task(go())
    while True:
        item = await queue.get()
        if item is done:
            break
        yield item
    await task  # re-raise a configuration error, if any
