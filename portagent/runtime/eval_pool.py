"""Executing planned runs: one run in a worker (``execute``), and the process pool whose workers are
each bound to one provider (``run_tasks``). See ``portagent.runtime.eval_run`` for the whole flow."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.adapters.base import REGISTRY
from portagent.contracts.errors import PortagentError, UsageError
from portagent.evals.scoring import Provenance, score_run
from portagent.runtime.eval_plan import (
    RunOutcome,
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
    prov = Provenance(
        case_id=task.case.case_id,
        provider=task.provider,
        agent=task.agent.name,
        agent_version=task.agent.version,
        source=source,
        repeat=task.repeat,
        run_id=output.result.run_id,
    )
    score = score_run(output.events, task.case, task.thresholds, latency_ms=latency, provenance=prov)
    if notes:
        score = score.model_copy(update={"warnings": [*score.warnings, *notes]})
    error = None
    r = output.result
    if r.status == "failed":
        error = f"{r.stop_reason}: {r.error}" if r.error else r.stop_reason
        score = score.model_copy(update={"notes": [f"run failed ({error})", *score.notes]})
    return RunOutcome(task.index, score, error, time.perf_counter() - t0, os.getpid())


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
    request = request_for(task.case, task.provider, task.repeat)
    approver = approver_for(task.case, task.approver)
    clear_run_state(task.scope)
    if task.mode == "replay":
        from portagent.runtime.replay import load_recorded, replay_config, version_changes

        assert task.cassette is not None
        recorded = load_recorded(task.cassette)
        config, _ = replay_config(task.cassette, recorded, out_dir=task.out_dir, approver=approver)
        config.scope = task.scope
        output = await arun_full(bundle, request, config)
        changed = [f"recorded with another version: {c}" for c in version_changes(recorded.record)]
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


def _worker_main(provider: str, tasks: Any, results: Any, env: dict[str, str], cwd: str) -> None:
    """A worker bound to one provider: runs its tasks until the queue's sentinel, then reports memory.

    The fork server was started with the environment and folder of its first use; a worker takes the
    parent's *current* ones (``PORTAGENT_HOME``, API keys, relative paths)."""
    import resource

    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    done = 0
    try:
        while True:
            task = tasks.get()
            if task is None:
                break
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


def run_tasks(
    tasks: Sequence[RunTask],
    *,
    workers: int = 2,
    in_process: bool = False,
    on_result: Callable[[RunOutcome], None] | None = None,
) -> PoolReport:
    """Run every task; outcomes come back in plan order.

    ``in_process``: no worker processes (the pytest plugin, small runs inside tests).
    """
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    t0 = time.perf_counter()
    report = PoolReport()
    if in_process:
        for task in tasks:
            out = execute(task)
            report.outcomes.append(out)
            if on_result:
                on_result(out)
        close_emulators()
    else:
        for out in _pool(tasks, workers, report.workers):
            report.outcomes.append(out)
            if on_result:
                on_result(out)
    report.outcomes.sort(key=lambda o: o.index)
    report.wall_s = time.perf_counter() - t0
    return report


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
            args=(p, queues[p], results, dict(os.environ), os.getcwd()),
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
        for _, proc in procs.values():
            proc.terminate()
        for q in (*queues.values(), results):
            q.cancel_join_thread()
            q.close()


# -- the whole eval ----------------------------------------------------------------------------------
