"""The eval pool under a ``Scheduler`` (``runtime.limits``): runs are handed to workers one at a time,
when the provider's limits, pauses and the spend cap allow, instead of all at once.

Same workers as the local pool (``eval_pool._worker_main``: one provider per worker, dies with the
eval), at most ``max_concurrency`` of them per provider. A run the scheduler sends back (a retryable
failure after the provider's pause) goes to the front of its provider's queue; when the spend cap stops
scheduling, every run not started comes back ``not_run`` with the reason.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from portagent.evals.scoring import Provenance, score_run
from portagent.runtime.eval_plan import RunOutcome, RunTask, WorkerStats
from portagent.runtime.limits import Scheduler

T = TypeVar("T")


def not_run(task: RunTask, reason: str) -> RunOutcome:
    """The outcome of a run the eval never started (``issue: not_run``), with why."""
    prov = Provenance(
        case_id=task.case.case_id,
        provider=task.provider,
        agent=task.agent.name,
        agent_version=task.agent.version,
        source=None,
        repeat=task.repeat,
    )
    score = score_run([], task.case, task.thresholds, provenance=prov)
    score = score.model_copy(
        # no factor notes ("search_faq was never called"): the run never existed, only why it did not
        update={"notes": [reason], "checks": {}, "issue": "not_run", "status": "not_run", "passed": False}
    )
    return RunOutcome(task.index, score, reason)


def _next_wait(sched: Scheduler, pending: dict[str, deque[RunTask]]) -> float:
    waits = [sched.wait_s(p) for p, q in pending.items() if q]
    return max(0.01, min(waits)) if waits else 0.5


def run_in_process(tasks: Sequence[RunTask], sched: Scheduler) -> Iterator[RunOutcome]:
    """One run at a time in this process, each when the scheduler admits it."""
    from portagent.runtime.eval_execute import execute

    yield from one_at_a_time(tasks, sched, execute, scored=lambda o: o, refused=not_run)


def one_at_a_time(
    tasks: Sequence[RunTask],
    sched: Scheduler,
    make: Callable[[RunTask], T],
    *,
    scored: Callable[[T], RunOutcome],
    refused: Callable[[RunTask, str], T],
    dropped: Callable[[T], None] | None = None,
) -> Iterator[T]:
    """Make each task in this process (``make``: a run, or a recording), one at a time, each when the
    scheduler admits it. ``scored`` gives the scheduler the run a result holds; a result the scheduler
    sends back (a retryable failure, made again after its provider's pause) goes to ``dropped``; once the
    spend cap stops scheduling, every task not started is ``refused`` with the reason."""
    sched.attempts.clear()  # task indexes are per call (the judges' start at 0 again)
    pending: dict[str, deque[RunTask]] = {}
    for t in tasks:
        pending.setdefault(t.provider, deque()).append(t)
    with sched.requests_limited():  # per-request limits for this process's runs (runtime.request_limits)
        while any(pending.values()):
            task = next((q[0] for q in pending.values() if q and sched.admit(q[0])), None)
            if task is None:
                if sched.stopped:
                    for q in pending.values():
                        while q:
                            yield refused(q.popleft(), sched.stopped)
                    return
                time.sleep(_next_wait(sched, pending))
                continue
            pending[task.provider].popleft()
            out = make(task)
            if sched.finished(task, scored(out)):
                if dropped is not None:
                    dropped(out)
                pending[task.provider].appendleft(task)
            else:
                yield out


def run_pooled(
    tasks: Sequence[RunTask],
    workers: int,
    stats: list[WorkerStats],
    sched: Scheduler,
    run_timeout: float | None = None,
) -> Iterator[RunOutcome]:
    """Worker processes fed one admitted run at a time. A run past its time limit (``run_timeout``, else
    its mode's: ``eval_pool.RUN_TIMEOUT_S``) stops its worker and fails, as in the local pool."""
    import multiprocessing as mp
    import queue as queue_mod

    from portagent.runtime.eval_execute import unrunnable
    from portagent.runtime.eval_pool import RunClock, _worker_main, stop_worker
    from portagent.runtime.eval_stuck import make_stacks, remove_stacks, stuck_reason
    from portagent.runtime.fork_server import warm_workers
    from portagent.tools.ledger import start_identity

    if not tasks:
        return
    warm_workers([t.provider for t in tasks])  # a fork server not running yet starts warm (eval_pool._pool)
    sched.attempts.clear()  # task indexes are per call (the judges' start at 0 again)
    ctx = mp.get_context("forkserver")
    results = ctx.Queue()
    pending: dict[str, deque[RunTask]] = {}
    for t in tasks:
        pending.setdefault(t.provider, deque()).append(t)
    queues: dict[str, Any] = {p: ctx.Queue() for p in pending}
    by_index = {t.index: t for t in tasks}
    sent: Counter[str] = Counter()  # handed to a queue, not back yet
    active: Counter[str] = Counter()
    closed: set[str] = set()  # providers whose workers got their sentinels
    procs: dict[int, tuple[str, Any]] = {}
    clock = RunClock(run_timeout)  # what each worker is doing: starting up or making a run
    me = (os.getpid(), start_identity(os.getpid()))
    stacks = make_stacks()  # each worker's stack dump (eval_stuck)

    def start(p: str) -> None:
        cap = sched.max_workers(p)
        want = min(sent[p], cap if cap is not None else sent[p])
        while active[p] < want and len(procs) < workers:
            proc = ctx.Process(
                target=_worker_main,
                args=(
                    *(p, queues[p], results, {**os.environ, **sched.request_env(workers)}),
                    *(os.getcwd(), me, stacks),
                ),
                name=f"portagent-eval-{p}",
                daemon=True,
            )
            proc.start()
            assert proc.pid is not None
            procs[proc.pid] = (p, proc)
            active[p] += 1

    try:
        while any(pending.values()) or sent.total() or procs:
            for p, q in pending.items():
                while q and sched.admit(q[0]):
                    queues[p].put(q.popleft())
                    sent[p] += 1
                start(p)
            if sched.stopped:
                for q in pending.values():
                    while q:
                        yield not_run(q.popleft(), sched.stopped)
            for p in pending:  # a provider with nothing left lets its workers go
                if not pending[p] and not sent[p] and p not in closed:
                    closed.add(p)
                    for _ in range(active[p]):
                        queues[p].put(None)
            if not procs and not any(pending.values()) and not sent.total():
                break
            for pid, at, began, why in clock.overdue():  # a hung run (or start-up): its worker is stopped
                p, proc = procs.pop(pid)
                reason = stuck_reason(why, proc, stacks, by_index[at].out_dir)
                stop_worker(proc)
                active[p] -= 1
                sent[p] -= 1
                late = unrunnable(by_index[at], reason, began)
                sched.finished(by_index[at], late)
                yield late
                start(p)
            try:
                kind, pid, payload = results.get(timeout=min(0.5, _next_wait(sched, pending)))
            except queue_mod.Empty:
                for pid, (p, proc) in list(procs.items()):
                    if not proc.is_alive() and proc.exitcode not in (0, None):
                        del procs[pid]
                        active[p] -= 1
                        index = clock.ended(pid)
                        if index is not None:
                            sent[p] -= 1
                            died = unrunnable(
                                by_index[index],
                                f"worker {pid} died (exit code {proc.exitcode})",
                                time.perf_counter(),
                            )
                            sched.finished(by_index[index], died)
                            yield died
                        start(p)
                continue
            if pid not in procs:  # from a worker stopped at its run's time limit: its run is accounted
                continue
            if kind == "setup":
                clock.setting_up(pid, by_index[payload])
            elif kind == "start":
                clock.began(pid, by_index[payload])
            elif kind == "run":
                clock.ended(pid)
                task = by_index[payload.index]
                sent[task.provider] -= 1
                if sched.finished(task, payload):
                    pending[task.provider].appendleft(task)
                else:
                    yield payload
            elif kind == "done":
                stats.append(payload)
                p, proc = procs.pop(pid)
                proc.join(timeout=10)
                active[p] -= 1
                # a worker that ended with a run taken and unfinished (its set-up raised SystemExit)
                index = clock.ended(pid)
                if index is not None:
                    sent[p] -= 1
                    ended = unrunnable(
                        by_index[index], f"worker {pid} ended before the run", time.perf_counter()
                    )
                    sched.finished(by_index[index], ended)
                    yield ended
                for other in pending:
                    start(other)
    finally:
        import signal

        for _, proc in procs.values():
            if proc.pid is not None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGTERM)
            proc.terminate()
        for q in (*queues.values(), results):
            q.cancel_join_thread()
            q.close()
        remove_stacks(stacks)
