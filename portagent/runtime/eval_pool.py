"""The process pool that makes an eval's planned runs: workers each bound to one provider (``run_tasks``),
which never outlive the eval. One run is ``runtime/eval_execute.execute``; the whole flow is
``portagent.runtime.eval_run``.

Importing this module is cheap (the run path, the contracts and the adapter registry load inside the
functions that use them); the fork server its workers start from is ``runtime/fork_server.py``, whose
``warm_workers`` runs before the suite is loaded (``portagent demo``)."""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from portagent.runtime.fork_server import warm_workers

if TYPE_CHECKING:
    from portagent.runtime.eval_plan import RunOutcome, RunTask, WorkerStats

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


# -- a run never outlives its time limit -------------------------------------------------------------
#
# A run that hangs (an ``async def`` handler calling ``time.sleep`` blocks the event loop, so the tool's
# ``timeout_ms`` — enforced with asyncio — never fires; a C extension that ignores signals; a lock never
# released) would block the eval forever. The eval process watches the clock of every run a worker has
# started ("start" message): past its limit it SIGKILLs the worker's process group (what the worker started
# goes with it: the Claude Code CLI, a subprocess of a handler), the run comes back a run error saying
# why, and a fresh worker takes the remaining runs.
#
# A worker's start-up is not its first run: before it, the worker imports its provider's adapter and SDK
# ("setup" message; 1-2 s, several times that on a loaded CI machine, nothing when the fork server
# preloaded it). It is timed on its own clock (``WORKER_STARTUP_S``, or the run limit when longer), so a
# tight ``--run-timeout`` judges runs, not which run a fresh worker happened to take first.

RUN_TIMEOUT_S: dict[str, float] = {"replay": 120.0, "emulator": 300.0, "live": 900.0}
"""Default limit of one run by mode (``eval --run-timeout`` overrides it). Replay is offline and takes
well under a second (a few seconds for a Claude run, which starts the CLI, on a loaded machine): 120 s
is far beyond any healthy replay. The emulator replays scripted latency and stall faults the SDKs may
retry with back-off: 300 s. A live run makes real model calls, each of which may take minutes: 900 s."""


def run_limit_s(task: RunTask, run_timeout: float | None) -> float:
    """The time limit of one run: ``run_timeout`` when given, else its mode's default."""
    return (
        run_timeout if run_timeout is not None else RUN_TIMEOUT_S.get(task.mode, max(RUN_TIMEOUT_S.values()))
    )


WORKER_STARTUP_S = 120.0
"""Limit of a worker's start-up (its provider's adapter and SDK imported) when the run limit is shorter."""


def too_long(limit_s: float) -> str:
    """The reason a run stopped at its time limit gives (reports, eval.json, the gate)."""
    return f"the run took longer than its time limit of {limit_s:g} s (--run-timeout); its worker was stopped"


def slow_start(limit_s: float, provider: str) -> str:
    """The reason a run fails whose worker did not finish starting within its limit."""
    return (
        f"its worker took longer than {limit_s:g} s to start (importing the {provider} adapter and its SDK, "
        "before the run); the worker was stopped"
    )


class RunClock:
    """What each worker is doing, timed, by worker pid: starting up before a run ("setup" message) or
    making the run ("start" message), since when, its limit and the reason it fails past the limit."""

    def __init__(self, run_timeout: float | None) -> None:
        self._run_timeout = run_timeout
        self._runs: dict[int, tuple[int, float, float, str]] = {}  # pid → (task index, start, limit, reason)

    def setting_up(self, pid: int, task: RunTask) -> None:
        """``pid`` imports its adapter before making ``task``: timed on the start-up's own limit."""
        limit = max(run_limit_s(task, self._run_timeout), WORKER_STARTUP_S)
        self._runs[pid] = (task.index, time.perf_counter(), limit, slow_start(limit, task.provider))

    def began(self, pid: int, task: RunTask) -> None:
        """``pid`` makes ``task`` from now on (its start-up, if any, is over)."""
        limit = run_limit_s(task, self._run_timeout)
        self._runs[pid] = (task.index, time.perf_counter(), limit, too_long(limit))

    def ended(self, pid: int) -> int | None:
        """The index of the run ``pid`` was making (None: none); it is no longer timed."""
        run = self._runs.pop(pid, None)
        return run[0] if run is not None else None

    def overdue(self) -> list[tuple[int, int, float, str]]:
        """(pid, task index, start, reason) of each worker past its limit; they are no longer timed."""
        now = time.perf_counter()
        late = [(pid, at, t0, why) for pid, (at, t0, limit, why) in self._runs.items() if now - t0 > limit]
        for pid, *_ in late:
            del self._runs[pid]
        return late


def stop_worker(proc: Any) -> None:
    """SIGKILL a worker and its process group (it leads its own: what it started goes with it), and reap
    it. Never the eval's own group: the group is killed only when the worker leads it."""
    import signal

    pid = proc.pid
    if pid is not None:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError, ValueError):
        proc.kill()
    with contextlib.suppress(OSError, ValueError):
        proc.join(timeout=10)


def _set_up(provider: str) -> None:
    """Import ``provider``'s adapter and SDK, and what the SDK imports lazily on a first run
    (``AdapterInfo.warm_modules``); nothing to do for what the fork server preloaded. A failure is left
    to the run, which reports it as it always did (``MissingExtraError``, an SDK bug)."""
    from portagent.adapters.base import REGISTRY

    info = REGISTRY.get(provider)
    if info is None:
        return
    for name in (info.module, *info.warm_modules):
        try:
            importlib.import_module(name)
        except Exception:  # the run reports what matters; without its adapter the rest is moot
            if name == info.module:
                return


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
    stacks: str | None = None,
) -> None:
    """A worker bound to one provider: runs its tasks until the queue's sentinel, then reports memory.

    The fork server was started with the environment and folder of its first use; a worker takes the
    parent's *current* ones (``PORTAGENT_HOME``, API keys, relative paths). ``parent``: the eval
    process (pid, start identity); the worker dies with it. ``stacks``: the folder where it dumps every
    thread's stack on SIGUSR1 (``eval_stuck``: where a run past its time limit was stuck)."""
    import queue as queue_mod
    import resource

    from portagent.runtime.eval_execute import close_emulators, execute
    from portagent.runtime.eval_plan import WorkerStats

    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own process group: ending the group ends what the worker started
    if stacks is not None:
        from portagent.runtime.eval_stuck import dump_on_signal

        dump_on_signal(stacks)
    _die_with_parent()
    if parent is not None:
        if not _alive(*parent):
            return
        _watch_parent(*parent)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    from portagent.core.logs import route_logs

    route_logs()  # as the CLI does: the SDKs' own error logs stay out of the eval's output
    done = 0
    set_up = False
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
            if not set_up:  # timed as the worker's start-up, not as its first run (RunClock)
                results.put(("setup", os.getpid(), task.index))
                _set_up(provider)
                set_up = True
            results.put(("start", os.getpid(), task.index))
            results.put(("run", os.getpid(), execute(task)))
            done += 1
    finally:
        close_emulators()
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        results.put(("done", os.getpid(), WorkerStats(provider, os.getpid(), done, round(peak_kb / 1024, 1))))


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
    ``run_timeout``: the time limit of one run in seconds (None: its mode's, ``RUN_TIMEOUT_S``); a worker
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
    import multiprocessing as mp
    import queue as queue_mod

    from portagent.runtime.eval_execute import unrunnable
    from portagent.runtime.eval_stuck import make_stacks, remove_stacks, stuck_reason

    if not tasks:
        return
    # A fork server that is not running yet starts warm, whoever asks first (a record's verification,
    # judges' calibration): started by the first worker it preloaded nothing, and in a process that runs
    # several evals (tests, a notebook) every later worker imported the run path again.
    warm_workers([t.provider for t in tasks])
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
    clock = RunClock(run_timeout)  # what each worker is doing: starting up or making a run
    by_index = {t.index: t for t in tasks}
    speed = _Speed()
    from portagent.tools.ledger import start_identity

    me = (os.getpid(), start_identity(os.getpid()))
    stacks = make_stacks()  # each worker's stack dump (eval_stuck)

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
        p = next_provider(candidates, {c: queued(c) for c in candidates}, active, speed)
        proc = ctx.Process(
            target=_worker_main,
            args=(p, queues[p], results, dict(os.environ), os.getcwd(), me, stacks),
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
            for pid, at, began, why in clock.overdue():
                # past its time limit (a hung handler, a lock never released): the worker and what it
                # started are stopped, the run fails saying why and where it was stuck, a fresh worker
                # takes the rest
                p, proc = procs.pop(pid)
                reason = stuck_reason(why, proc, stacks, by_index[at].out_dir)
                stop_worker(proc)
                active[p] -= 1
                left[p] -= 1
                yield unrunnable(by_index[at], reason, began)
                start_one()
            try:
                kind, pid, payload = results.get(timeout=0.5)
            except queue_mod.Empty:
                for pid, (p, proc) in list(procs.items()):
                    if not proc.is_alive() and proc.exitcode not in (0, None):
                        # died without a word (killed, segfault): its run fails, a fresh worker goes on
                        del procs[pid]
                        active[p] -= 1
                        index = clock.ended(pid)
                        if index is not None:
                            left[p] -= 1
                            yield unrunnable(
                                by_index[index],
                                f"worker {pid} died (exit code {proc.exitcode})",
                                time.perf_counter(),
                            )
                        start_one()
                continue
            if pid not in procs:  # from a worker stopped at its run's time limit: its run is accounted
                continue
            if kind == "setup":
                clock.setting_up(pid, by_index[payload])
            elif kind == "start":
                clock.began(pid, by_index[payload])
            elif kind == "run":
                clock.ended(pid)
                left[by_index[payload.index].provider] -= 1
                speed.finished(pid, payload.wall_s)
                yield payload
            elif kind == "done":
                stats.append(payload)
                p, proc = procs.pop(pid)
                proc.join(timeout=10)
                active[p] -= 1
                # a worker that ended with a run taken and unfinished (its set-up raised SystemExit)
                index = clock.ended(pid)
                if index is not None:
                    left[p] -= 1
                    yield unrunnable(
                        by_index[index], f"worker {pid} ended before the run", time.perf_counter()
                    )
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
        remove_stacks(stacks)


# -- the whole eval ----------------------------------------------------------------------------------
