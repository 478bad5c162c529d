"""Executing planned runs: one run in a worker (``execute``), and the process pool whose workers are
each bound to one provider (``run_tasks``). See ``portagent.runtime.eval_run`` for the whole flow."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.adapters.base import REGISTRY
from portagent.contracts.errors import PortagentError, UsageError
from portagent.evals.scoring import Provenance, score_run
from portagent.runtime.eval_plan import (
    RunOutcome,
    RunSignals,
    RunTask,
    WorkerStats,
    approver_for,
    request_for,
    script_hash,
)

# -- making one run (in any process) -----------------------------------------------------------------

_BUNDLES: dict[Path, Any] = {}
_EMULATORS: dict[Path, Any] = {}
_STACK = contextlib.ExitStack()


def _bundle(path: Path) -> Any:
    if path not in _BUNDLES:
        from portagent.contracts.bundle import load_agent

        _BUNDLES[path] = load_agent(path)
    return _BUNDLES[path]


def _emulator(path: Path) -> Any:
    """One emulator per script in this process, started on first use."""
    if path not in _EMULATORS:
        from portagent.emulator import load_script, serve

        _EMULATORS[path] = _STACK.enter_context(serve(load_script(path)))
    return _EMULATORS[path]


def close_emulators() -> None:
    """Stop the emulators this process started."""
    _STACK.close()
    _EMULATORS.clear()


def clear_run_state(scope: str) -> None:
    """Forget the effects and approval cards of a previous run with the same scope."""
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.ledger import EffectLedger

    ledger = EffectLedger()
    try:
        ledger.clear_scope(scope)
    finally:
        ledger.close()
    approvals = ApprovalStore()
    try:
        approvals.clear_scope(scope)
    finally:
        approvals.close()


def execute(task: RunTask) -> RunOutcome:
    """Make one run and score it. Never raises for a run's own failure: it becomes a failed score."""
    t0 = time.perf_counter()
    try:
        output, latency, source, notes = asyncio.run(_make_run(task))
    except PortagentError as e:
        return _unrunnable(task, e.render(), t0)
    except Exception as e:  # an SDK or portagent bug: keep it visible, keep the eval going
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return _unrunnable(task, f"run crashed: {detail}", t0)
    return _scored(task, output.events, output.result, latency, source, notes, t0)


def _scored(
    task: RunTask, events: list[Any], r: Any, latency: float | None, source: Any, notes: list[str], t0: float
) -> RunOutcome:
    started = next((e for e in events if e.type == "run.started"), None)  # the run's own label (issue 15)
    prov = Provenance(
        case_id=task.case.case_id,
        provider=task.provider,
        agent=task.agent.name,
        agent_version=task.agent.version,
        source=started.source if started is not None else source,
        recorded_source=started.recorded_source if started is not None else None,
        repeat=task.repeat,
        run_id=r.run_id,
    )
    score = score_run(events, task.case, task.thresholds, latency_ms=latency, provenance=prov)
    if notes:
        score = score.model_copy(update={"warnings": [*score.warnings, *notes]})
    error = None
    if r.status == "failed":
        error = f"{r.stop_reason}: {r.error}" if r.error else r.stop_reason
        score = score.model_copy(update={"notes": [f"run failed ({error})", *score.notes]})
    return RunOutcome(
        task.index,
        score,
        error,
        time.perf_counter() - t0,
        os.getpid(),
        r.final_output,
        _signals(task, events, r),
    )


_RETRY_AFTER = re.compile(r"retry-after ([0-9]+(?:\.[0-9]+)?) s")
_RATE_LIMITED = frozenset({"http_429", "http_503", "http_529"})


def _signals(task: RunTask, events: list[Any], r: Any) -> RunSignals:
    """What the scheduler of a live eval reads from a run (``runtime.limits``). A ``Retry-After`` is read
    from the ``error`` events the adapters' HTTP hook writes (``adapters._shared.http_error_hook``)."""
    errors = [e for e in events if e.type == "error"]
    http = [e for e in errors if e.error_type.startswith("http_")]
    hints = [float(m.group(1)) for e in http if (m := _RETRY_AFTER.search(e.message))]
    calls = [e for e in events if e.type == "model.call"]
    try:
        tools = _bundle(task.agent.path).all_tools()
    except (OSError, PortagentError):
        tools = {}
    called = {e.tool for e in events if e.type == "tool.call"}
    safe = all(name in tools and tools[name].effect in ("read", "compute") for name in called)
    return RunSignals(
        requests=len(calls) + len(http),
        tokens=sum(e.input_tokens + e.output_tokens for e in calls),
        rate_limited=any(e.error_type in _RATE_LIMITED for e in http),
        retry_after_s=max(hints) if hints else None,
        retryable=r.status == "failed"
        and r.stop_reason == "provider_error"
        and bool(errors)
        and errors[-1].retryable,
        retry_safe=safe,
    )


def finished(task: RunTask) -> RunOutcome | None:
    """The outcome of a run an earlier, interrupted eval already finished into this results folder
    (``eval --resume``), scored again from its ``trace.jsonl``; None when it must run (no complete
    ``run.json`` — it is written last, atomically —, or one made by another agent spec, case, provider,
    repeat or mode)."""
    from pydantic import ValidationError

    from portagent.contracts.run import RunRecord
    from portagent.tracing.recorder import read_trace

    if task.out_dir is None:
        return None
    t0 = time.perf_counter()
    try:
        record = RunRecord.model_validate_json((task.out_dir / "run.json").read_text(encoding="utf-8"))
        events = read_trace(task.out_dir / "trace.jsonl")
        bundle = _bundle(task.agent.path)
    except (OSError, ValueError, ValidationError, PortagentError):
        return None
    m = record.manifest
    live = ("live", "endpoint") if task.mode == "live" else (task.mode,)
    mode_ok = m.mode == "replay" if task.mode == "replay" else (m.mode != "replay" and m.source in live)
    same = (m.provider, m.case_id, m.repeat, m.spec_hash) == (
        task.provider,
        task.case.case_id,
        task.repeat,
        bundle.spec_hash,
    )
    starts = [i for i, e in enumerate(events) if e.type == "run.started"]
    if not (mode_ok and same and starts and events[-1].type == "run.completed"):
        return None
    latency = record.result.duration_ms if task.mode == "replay" else None
    notes: list[str] = []
    if task.mode == "replay" and task.cassette is not None:  # keep the tool-version warnings (issue 15)
        from portagent.evals.tool_versions import (
            current_tools,
            read_folder_tools,
            run_warnings,
            unversioned_changes,
        )

        recorded_tools = read_folder_tools(task.cassette)
        if recorded_tools is not None:
            notes = run_warnings(
                unversioned_changes(recorded_tools, current_tools(bundle), since="the recording")
            )
    return _scored(task, events[starts[-1] :], record.result, latency, m.source, notes, t0)


def _unrunnable(task: RunTask, message: str, t0: float) -> RunOutcome:
    prov = Provenance(
        case_id=task.case.case_id,
        provider=task.provider,
        agent=task.agent.name,
        agent_version=task.agent.version,
        source=None,
        repeat=task.repeat,
    )
    score = score_run([], task.case, task.thresholds, provenance=prov)
    score = score.model_copy(update={"notes": [f"run could not be made: {message}", *score.notes]})
    return RunOutcome(task.index, score, message, time.perf_counter() - t0, os.getpid())


async def _make_run(task: RunTask) -> tuple[Any, float | None, Any, list[str]]:
    """(RunOutput, recorded latency or None, source, warnings such as an SDK version change)."""
    from portagent.adapters.port import Endpoint
    from portagent.runtime.runner import RunConfig, arun_full

    bundle = _bundle(task.agent.path)
    request = request_for(task.case, task.provider, task.repeat, bundle)
    approver = approver_for(task.case, task.approver)
    clear_run_state(task.scope)
    if task.mode == "replay":
        from portagent.runtime.replay import approval_notes, load_recorded, replay_config, version_changes

        assert task.cassette is not None
        recorded = load_recorded(task.cassette)
        config, _ = replay_config(task.cassette, recorded, out_dir=task.out_dir, approver=approver)
        config.scope = task.scope
        output = await arun_full(bundle, request, config)
        changed = [f"recorded with another version: {c}" for c in version_changes(recorded.record)]
        changed += approval_notes(config)
        from portagent.evals.tool_versions import (  # a tool changed without a version bump (issue 15)
            current_tools,
            recorded_tools,
            run_warnings,
            unversioned_changes,
        )

        changed += run_warnings(
            unversioned_changes(
                recorded_tools(recorded.record.manifest, recorded.events),
                current_tools(bundle),
                since="the recording",
            )
        )
        if output.result.stop_reason == "cassette_drift":  # name what changed (issue 15)
            from portagent.evals.drift import CHANGED_PREFIX, recording_changes

            changed += [
                CHANGED_PREFIX + c
                for c in recording_changes(
                    recorded.record.manifest,
                    spec_hash=bundle.spec_hash,
                    policy_hash=bundle.policy_hash,
                    tool_hashes=bundle.tool_hashes(),
                    request=request.model_dump(
                        mode="json", exclude={"idempotency_key"}, exclude_defaults=True
                    ),
                )
            ]
        return output, recorded.record.result.duration_ms, recorded.record.manifest.source, changed
    if task.mode == "emulator":
        assert task.emulator_script is not None
        emu = _emulator(task.emulator_script)
        emu.reset()  # fault counters (times: N) start over for every run
        endpoint = Endpoint(
            source="emulator",
            mode="direct",
            base_url=emu.base_url,
            api_key=REGISTRY[task.provider].dummy_key,
            script_hash=script_hash(task.emulator_script),
        )
    else:
        endpoint = Endpoint(
            source="live", mode="direct", api_key=os.environ.get(REGISTRY[task.provider].key_env)
        )
    output = await arun_full(
        bundle,
        request,
        RunConfig(endpoint=endpoint, approver=approver, out_dir=task.out_dir, scope=task.scope),
    )
    return output, None, endpoint.source, []


# -- the pool ----------------------------------------------------------------------------------------


# -- workers never outlive the eval ------------------------------------------------------------------
#
# A killed eval (a CI job timeout sends SIGKILL) must not leave workers making runs — their tool
# handlers make effects — nor blocked forever on a pipe nobody reads. Three layers:
# 1. Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``. A worker's parent is the fork server, which exits as
#    soon as the eval process is gone (its "alive" pipe reaches EOF), so the kernel kills the worker.
# 2. Everywhere: a watch thread polls the eval process (pid *and* start identity, so a reused pid is
#    not mistaken for it) and kills the worker's process group — the worker leads its own group, so
#    processes it started (the Claude Code CLI) go with it.
# 3. Before taking each task the worker checks the eval is alive: no run starts after it is gone.
# The eval itself ends its workers' process groups in ``_pool``'s ``finally`` (any normal exit, Ctrl-C).

PARENT_POLL_S = 0.2


def _die_with_parent() -> None:
    """Ask the kernel for SIGKILL when the parent process dies (Linux only; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def _alive(pid: int, start: str | None) -> bool:
    from portagent.tools.ledger import pid_alive, start_identity

    if not pid_alive(pid):
        return False
    return start is None or start_identity(pid) in (None, start)


def _kill_own_group() -> None:
    import signal

    if os.getpgid(0) == os.getpid():  # only a group this worker leads (never the eval's own group)
        with contextlib.suppress(OSError):
            os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(137)


def _watch_parent(pid: int, start: str | None) -> None:
    import threading

    def watch() -> None:
        while _alive(pid, start):
            time.sleep(PARENT_POLL_S)
        _kill_own_group()

    threading.Thread(target=watch, name="portagent-parent-watch", daemon=True).start()


def _worker_main(
    provider: str,
    tasks: Any,
    results: Any,
    env: dict[str, str],
    cwd: str,
    parent: tuple[int, str | None] | None = None,
) -> None:
    """A worker bound to one provider: runs its tasks until the queue's sentinel, then reports memory.

    The fork server was started with the environment and folder of its first use; a worker takes the
    parent's *current* ones (``PORTAGENT_HOME``, API keys, relative paths). ``parent``: the eval
    process (pid, start identity); the worker dies with it."""
    import queue as queue_mod
    import resource

    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own process group: ending the group ends what the worker started
    _die_with_parent()
    if parent is not None:
        if not _alive(*parent):
            return
        _watch_parent(*parent)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    done = 0
    try:
        while True:
            if parent is not None and not _alive(*parent):
                _kill_own_group()
            try:
                task = tasks.get(timeout=PARENT_POLL_S)
            except queue_mod.Empty:
                continue
            if task is None:
                break
            if parent is not None and not _alive(*parent):  # never start a run for a dead eval
                _kill_own_group()
            results.put(("start", os.getpid(), task.index))
            results.put(("run", os.getpid(), execute(task)))
            done += 1
    finally:
        close_emulators()
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        results.put(("done", os.getpid(), WorkerStats(provider, os.getpid(), done, round(peak_kb / 1024, 1))))


class _Speed:
    """Running estimates, per provider, of a worker's start-up time (process + SDK import, seen as the
    delay to its first result) and of one run's time."""

    DEFAULT_STARTUP_S = 5.0

    def __init__(self) -> None:
        self._start: dict[int, tuple[str, float]] = {}
        self._first_seen: set[int] = set()
        self._startup: dict[str, list[float]] = {}
        self._runs: dict[str, list[float]] = {}

    def started(self, pid: int, provider: str) -> None:
        self._start[pid] = (provider, time.perf_counter())

    def finished(self, pid: int, wall_s: float) -> None:
        provider, t0 = self._start[pid]
        if pid not in self._first_seen:  # the first run pays for the imports
            self._first_seen.add(pid)
            self._startup.setdefault(provider, []).append(
                time.perf_counter() - t0 - min(wall_s, self.run_s(provider))
            )
        else:
            self._runs.setdefault(provider, []).append(wall_s)

    def startup_s(self, provider: str) -> float:
        xs = self._startup.get(provider)
        return sum(xs) / len(xs) if xs else self.DEFAULT_STARTUP_S

    def run_s(self, provider: str) -> float:
        xs = self._runs.get(provider)
        return sum(xs) / len(xs) if xs else 0.2

    def worth_another(self, provider: str, queued: int, active: int) -> bool:
        if active == 0:
            return True
        remaining_s = queued * self.run_s(provider) / active
        return remaining_s > 1.5 * self.startup_s(provider)


@dataclass
class PoolReport:
    """What the pool did."""

    outcomes: list[RunOutcome] = field(default_factory=list)
    workers: list[WorkerStats] = field(default_factory=list)
    wall_s: float = 0.0
    reused: int = 0
    """Runs an interrupted eval had finished, kept by ``--resume``."""
    carried: int = 0
    """Runs an earlier eval made with the same inputs, kept by ``--reuse`` (``runtime.reuse``)."""


def run_tasks(
    tasks: Sequence[RunTask],
    *,
    workers: int = 2,
    in_process: bool = False,
    on_result: Callable[[RunOutcome], None] | None = None,
    resume: bool = False,
    scheduler: Any = None,
    executor: str = "local",
    address: str | None = None,
    carried: Collection[int] = (),
) -> PoolReport:
    """Run every task; outcomes come back in plan order.

    ``in_process``: no worker processes (the pytest plugin, small runs inside tests). ``resume``: a task
    whose run an interrupted eval already finished into its ``out_dir`` is scored from it, not run again.
    ``scheduler``: a ``runtime.limits.Scheduler`` that admits each run (limits, Retry-After, spend cap).
    ``executor="ray"``: each run a Ray task (``runtime.ray_executor``; ``address``: the cluster).
    ``carried``: indexes of tasks whose run folder ``runtime.reuse`` restored (``--reuse``): scored from
    it, labelled reused. Every run made here leaves its inputs hash for a later ``--reuse``.
    """
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    t0 = time.perf_counter()
    report = PoolReport()
    by_index = {t.index: t for t in tasks}
    made_here = on_result
    from portagent.runtime.reuse import Fingerprints

    prints = Fingerprints()

    def delivered(out: RunOutcome) -> None:
        prints.write(by_index[out.index])
        if made_here:
            made_here(out)

    on_result = delivered
    if resume or carried:
        todo = []
        for task in tasks:
            done = finished(task) if (resume or task.index in carried) else None
            if done is None:
                todo.append(task)
                continue
            if task.index in carried:
                done.score = done.score.model_copy(
                    update={"provenance": done.score.provenance.model_copy(update={"reused": True})}
                )
                report.carried += 1
            else:
                report.reused += 1
            report.outcomes.append(done)
            delivered(done)
        tasks = todo
    if executor == "ray" and not in_process:
        from portagent.runtime.ray_executor import run_ray

        report.outcomes += run_ray(
            tasks, address=address, num_cpus=workers, scheduler=scheduler, on_result=on_result
        )
    elif scheduler is not None and scheduler.active:
        from portagent.runtime.eval_scheduled import run_in_process, run_pooled

        made = (
            run_in_process(tasks, scheduler)
            if in_process
            else run_pooled(tasks, workers, report.workers, scheduler)
        )
        for out in made:
            report.outcomes.append(out)
            on_result(out)
        if in_process:
            close_emulators()
    elif in_process:
        for task in tasks:
            out = execute(task)
            report.outcomes.append(out)
            on_result(out)
        close_emulators()
    else:
        for out in _pool(tasks, workers, report.workers):
            report.outcomes.append(out)
            on_result(out)
    report.outcomes.sort(key=lambda o: o.index)
    report.wall_s = time.perf_counter() - t0
    return report


WARM_SDKS_ENV = "PORTAGENT_WARM_SDKS"
"""Adapter modules (comma-separated) the fork server also imports (``runtime.warm``)."""


def warm_workers(providers: Sequence[str]) -> None:
    """Start the workers' fork server now, preloading ``runtime.warm``: it imports the run path (and, when
    one provider's workers will share it, that provider's adapter and SDK) while the eval plans, so each
    worker forks ready. A fork server already running (an earlier eval in this process) is kept."""
    import multiprocessing as mp
    from multiprocessing import forkserver

    mp.get_context("forkserver").set_forkserver_preload(["portagent.runtime.warm"])
    chosen = [p for p in dict.fromkeys(providers) if p in REGISTRY]
    before = os.environ.get(WARM_SDKS_ENV)
    os.environ[WARM_SDKS_ENV] = REGISTRY[chosen[0]].module if len(chosen) == 1 else ""
    try:
        forkserver.ensure_running()
    finally:
        if before is None:
            os.environ.pop(WARM_SDKS_ENV, None)
        else:
            os.environ[WARM_SDKS_ENV] = before


def _pool(tasks: Sequence[RunTask], workers: int, stats: list[WorkerStats]) -> Iterator[RunOutcome]:
    import multiprocessing as mp
    import queue as queue_mod

    if not tasks:
        return
    ctx = mp.get_context("forkserver")
    results = ctx.Queue()
    queues: dict[str, Any] = {}
    for t in tasks:
        queues.setdefault(t.provider, ctx.Queue()).put(t)
    for q in queues.values():
        for _ in range(workers):  # at most `workers` workers of one provider ever read a sentinel
            q.put(None)
    left = Counter(t.provider for t in tasks)  # not finished yet
    active: Counter[str] = Counter()  # live workers per provider
    procs: dict[int, tuple[str, Any]] = {}
    in_flight: dict[int, int] = {}  # pid → task index
    by_index = {t.index: t for t in tasks}
    speed = _Speed()
    from portagent.tools.ledger import start_identity

    me = (os.getpid(), start_identity(os.getpid()))

    def queued(p: str) -> int:
        return left[p] - active[p]

    def start_one(initial: bool = False) -> bool:
        """Start a worker for the provider that needs one most; a provider that already has workers
        gets another only when its remaining work outweighs the new worker's start-up (SDK import)."""
        candidates = [
            p for p in queues if queued(p) > 0 and (initial or speed.worth_another(p, queued(p), active[p]))
        ]
        if not candidates:
            return False
        p = max(candidates, key=lambda x: (active[x] == 0, queued(x) * speed.run_s(x) / (active[x] + 1), x))
        proc = ctx.Process(
            target=_worker_main,
            args=(p, queues[p], results, dict(os.environ), os.getcwd(), me),
            name=f"portagent-eval-{p}",
            daemon=True,
        )
        proc.start()
        assert proc.pid is not None
        procs[proc.pid] = (p, proc)
        speed.started(proc.pid, p)
        active[p] += 1
        return True

    for _ in range(min(workers, len(tasks))):
        if not start_one(initial=True):
            break
    try:
        while procs:
            try:
                kind, pid, payload = results.get(timeout=0.5)
            except queue_mod.Empty:
                for pid, (p, proc) in list(procs.items()):
                    if not proc.is_alive() and proc.exitcode not in (0, None):
                        # died without a word (killed, segfault): its run fails, a fresh worker goes on
                        del procs[pid]
                        active[p] -= 1
                        index = in_flight.pop(pid, None)
                        if index is not None:
                            left[p] -= 1
                            yield _unrunnable(
                                by_index[index],
                                f"worker {pid} died (exit code {proc.exitcode})",
                                time.perf_counter(),
                            )
                        start_one()
                continue
            if kind == "start":
                in_flight[pid] = payload
            elif kind == "run":
                in_flight.pop(pid, None)
                left[by_index[payload.index].provider] -= 1
                speed.finished(pid, payload.wall_s)
                yield payload
            elif kind == "done":
                stats.append(payload)
                p, proc = procs.pop(pid)
                proc.join(timeout=10)
                active[p] -= 1
                while len(procs) < workers and start_one():
                    pass
    finally:
        import signal

        for _, proc in procs.values():
            if proc.pid is not None:  # the worker leads its own group: its children go with it
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGTERM)
            proc.terminate()
        for q in (*queues.values(), results):
            q.cancel_join_thread()
            q.close()


# -- the whole eval ----------------------------------------------------------------------------------
