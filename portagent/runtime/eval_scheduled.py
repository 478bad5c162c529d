"""The eval pool under a ``Scheduler`` (``runtime.limits``): runs are handed to workers one at a time,
when the provider's limits, pauses and the spend cap allow, instead of all at once.

Same workers as the local pool (``eval_workers.worker_main``: one provider per worker, dies with the
eval), at most ``max_concurrency`` of them per provider. A run the scheduler sends back (a retryable
failure after the provider's pause) goes to the front of its provider's queue; when the spend cap stops
scheduling, every run not started comes back ``not_run`` with the reason.
"""

from __future__ import annotations

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
    its mode's: ``eval_workers.RUN_TIMEOUT_S``) stops its worker and fails, as in the local pool."""
    from portagent.runtime.eval_workers import Finished, Gone, Lost, Workers
    from portagent.runtime.fork_server import warm_workers

    if not tasks:
        return
    warm_workers([t.provider for t in tasks])  # a fork server not running yet starts warm (eval_pool._pool)
    sched.attempts.clear()  # task indexes are per call (the judges' start at 0 again)
    pool = Workers(tasks, run_timeout, stats)
    pending: dict[str, deque[RunTask]] = {}
    for t in tasks:
        pending.setdefault(t.provider, deque()).append(t)
    queues: dict[str, Any] = {p: pool.queue() for p in pending}
    sent: Counter[str] = Counter()  # handed to a queue, not back yet
    active: Counter[str] = Counter()
    closed: set[str] = set()  # providers whose workers got their sentinels

    def start(p: str) -> None:
        cap = sched.max_workers(p)
        want = min(sent[p], cap if cap is not None else sent[p])
        while active[p] < want and len(pool) < workers:
            pool.start(p, queues[p], {**os.environ, **sched.request_env(workers)})
            active[p] += 1

    try:
        while any(pending.values()) or sent.total() or len(pool):
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
            if not len(pool) and not any(pending.values()) and not sent.total():
                break
            for event in pool.events(timeout=min(0.5, _next_wait(sched, pending))):
                if isinstance(event, Finished):
                    sent[event.task.provider] -= 1
                    if sched.finished(event.task, event.outcome):  # sent back: retried after the pause
                        pending[event.task.provider].appendleft(event.task)
                    else:
                        yield event.outcome
                elif isinstance(event, Lost):  # past its limit, or its worker died or ended
                    sent[event.task.provider] -= 1
                    sched.finished(event.task, event.outcome)
                    yield event.outcome
                elif isinstance(event, Gone):
                    active[event.provider] -= 1
                    for p in pending:
                        start(p)
    finally:
        pool.close()
