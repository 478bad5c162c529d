"""The process pool that makes an eval's planned runs: workers each bound to one provider (``run_tasks``),
which never outlive the eval. One run is ``runtime/eval_execute.execute``; the whole flow is
``portagent.runtime.eval_run``.

Importing this module is cheap (the run path, the contracts and the adapter registry load inside the
functions that use them); the fork server its workers start from is ``runtime/fork_server.py``, whose
``warm_workers`` runs before the suite is loaded (``portagent demo``)."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from portagent.runtime.fork_server import warm_workers

if TYPE_CHECKING:
    from portagent.runtime.eval_plan import RunOutcome, RunTask, WorkerStats

# -- the pool ----------------------------------------------------------------------------------------


class _Speed:
    """Running estimates, per provider, of a worker's start-up time (process + SDK import, seen as the
    delay to its first result) and of one run's time. Before a provider's first result, its start-up is
    the registry's typical figure (``AdapterInfo.startup_s``)."""

    DEFAULT_STARTUP_S = 5.0
    """A provider the registry does not know."""

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
        if xs:
            return sum(xs) / len(xs)
        from portagent.adapters.base import REGISTRY

        info = REGISTRY.get(provider)
        return info.startup_s if info is not None else self.DEFAULT_STARTUP_S

    def run_s(self, provider: str) -> float:
        xs = self._runs.get(provider)
        return sum(xs) / len(xs) if xs else 0.2

    def work_left_s(self, provider: str, queued: int, active: int) -> float:
        """What one more worker of ``provider`` would take on: its share of the queued runs, plus the
        start-up it pays first when the provider has no worker yet (a started worker's is being paid)."""
        share = queued * self.run_s(provider) / (active + 1)
        return share + (self.startup_s(provider) if active == 0 else 0.0)

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
    run_timeout: float | None = None,
) -> PoolReport:
    """Run every task; outcomes come back in plan order.

    ``in_process``: no worker processes (the pytest plugin, small runs inside tests). ``resume``: a task
    whose run an interrupted eval already finished into its ``out_dir`` is scored from it, not run again.
    ``scheduler``: a ``runtime.limits.Scheduler`` that admits each run (limits, Retry-After, spend cap).
    ``executor="ray"``: each run a Ray task (``runtime.ray_executor``; ``address``: the cluster).
    ``carried``: indexes of tasks whose run folder ``runtime.reuse`` restored (``--reuse``): scored from
    it, labelled reused. Every run made here leaves its inputs hash for a later ``--reuse``.
    ``run_timeout``: the time limit of one run in seconds (None: its mode's, ``eval_workers.RUN_TIMEOUT_S``); a worker
    past it is stopped and the run is a run error. Worker pools only: an in-process run (the pytest plugin)
    or a Ray task is not stopped (docs/evals.md).
    """
    from portagent.runtime.eval_execute import close_emulators, execute, finished

    if workers < 1:
        from portagent.contracts.errors import UsageError

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
            done = finished(task, prints) if (resume or task.index in carried) else None
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
    # a run made again (--resume; a carried run that no longer scores) starts in an empty folder: what an
    # earlier attempt left there (a stopped one's stuck-stack.txt, journal, partial trace) is not this run's
    for task in tasks:
        if task.out_dir is not None:
            shutil.rmtree(task.out_dir, ignore_errors=True)
    # no more workers than runs: each pool gives every worker it may start an end-of-queue mark, and
    # `--workers 1000000000` put a billion of them in a queue before the first run (it never started)
    workers = min(workers, max(len(tasks), 1))
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
            else run_pooled(tasks, workers, report.workers, scheduler, run_timeout)
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
        for out in _pool(tasks, workers, report.workers, run_timeout):
            report.outcomes.append(out)
            on_result(out)
    report.outcomes.sort(key=lambda o: o.index)
    report.wall_s = time.perf_counter() - t0
    return report


def next_provider(
    candidates: Sequence[str], queued: dict[str, int], active: Counter[str], speed: _Speed
) -> str:
    """Which provider gets the next worker: one that has none first, then the one with the most work
    left, its start-up included — the longest first, so that the provider whose SDK takes longest to
    start does not begin last, when the others are done (with three providers on two workers, the one
    that waits should be the quickest to finish). Ties go to the name, for a stable order."""
    return max(
        candidates,
        key=lambda p: (active[p] == 0, speed.work_left_s(p, queued[p], active[p]), p),
    )


def _pool(
    tasks: Sequence[RunTask], workers: int, stats: list[WorkerStats], run_timeout: float | None = None
) -> Iterator[RunOutcome]:
    from portagent.runtime.eval_workers import Finished, Gone, Lost, Workers

    if not tasks:
        return
    # A fork server that is not running yet starts warm, whoever asks first (a record's verification,
    # judges' calibration): started by the first worker it preloaded nothing, and in a process that runs
    # several evals (tests, a notebook) every later worker imported the run path again.
    warm_workers([t.provider for t in tasks])
    pool = Workers(tasks, run_timeout, stats)
    # from here on the pool is closed whatever happens: an interrupt while the first workers start (the
    # fork server still importing) left the task queues' feeder threads blocked on full pipes, and the
    # eval hung at exit waiting for them
    try:
        queues: dict[str, Any] = {}
        for t in tasks:
            if t.provider not in queues:
                queues[t.provider] = pool.queue()
            queues[t.provider].put(t)
        for q in queues.values():
            for _ in range(workers):  # at most `workers` workers of one provider ever read a sentinel
                q.put(None)
        left = Counter(t.provider for t in tasks)  # not finished yet
        active: Counter[str] = Counter()  # live workers per provider
        speed = _Speed()

        def queued(p: str) -> int:
            return left[p] - active[p]

        def start_one(initial: bool = False) -> bool:
            """Start a worker for the provider that needs one most; a provider that already has workers
            gets another only when its remaining work outweighs the new worker's start-up (SDK import)."""
            candidates = [
                p
                for p in queues
                if queued(p) > 0 and (initial or speed.worth_another(p, queued(p), active[p]))
            ]
            if not candidates:
                return False
            p = next_provider(candidates, {c: queued(c) for c in candidates}, active, speed)
            speed.started(pool.start(p, queues[p], dict(os.environ)), p)
            active[p] += 1
            return True

        for _ in range(min(workers, len(tasks))):
            if not start_one(initial=True):
                break
        while len(pool):
            for event in pool.events(timeout=0.5):
                if isinstance(event, Finished):
                    left[event.task.provider] -= 1
                    speed.finished(event.pid, event.outcome.wall_s)
                    yield event.outcome
                elif isinstance(event, Lost):
                    # past its time limit (a hung handler, a lock never released), or its worker died or
                    # ended: the run fails saying why (and where it was stuck), a fresh worker goes on
                    left[event.task.provider] -= 1
                    yield event.outcome
                elif isinstance(event, Gone):
                    active[event.provider] -= 1
                    while len(pool) < workers and start_one():
                        pass
    finally:
        pool.close()


# -- the whole eval ----------------------------------------------------------------------------------
