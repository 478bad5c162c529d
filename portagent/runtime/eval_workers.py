"""Eval worker processes: what a worker does (``worker_main``: one provider's runs, one at a time) and
how the eval watches them (``Workers``: their messages, their runs' clocks, their deaths), shared by the
local pool (``runtime.eval_pool``) and the scheduled one (``runtime.eval_scheduled``).

Importing this module is cheap: the run path loads inside the worker."""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from portagent.runtime.eval_plan import RunOutcome, RunTask, WorkerStats

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
# The eval itself ends its workers' process groups in ``Workers.close`` (any normal exit, Ctrl-C).

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


def _set_up(provider: str, agent: Path | None = None) -> None:
    """Import ``provider``'s adapter and SDK, and what a first run imports lazily: the SDK's
    (``AdapterInfo.warm_modules``) and, for the agent at ``agent``, the spec's (``AdapterInfo.spec_modules``);
    nothing to do for what the fork server preloaded. A failure is left to the run, which reports it as it
    always did (``MissingExtraError``, an SDK bug, a spec that does not load)."""
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
    if not info.spec_modules or agent is None:
        return
    try:
        from portagent.runtime.eval_execute import _bundle  # the run finds it loaded

        where, func = info.spec_modules.split(":")
        names = getattr(importlib.import_module(where), func)(_bundle(agent))
    except Exception:  # the run loads the spec and reports what is wrong with it
        return
    for name in names:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


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


def worker_main(
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
                _set_up(provider, task.agent.path)
                set_up = True
            results.put(("start", os.getpid(), task.index))
            results.put(("run", os.getpid(), execute(task)))
            done += 1
    finally:
        close_emulators()
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        results.put(("done", os.getpid(), WorkerStats(provider, os.getpid(), done, round(peak_kb / 1024, 1))))


# -- the eval's side: its workers, watched -----------------------------------------------------------


@dataclass(frozen=True)
class Finished:
    """A worker's run came back."""

    pid: int
    task: RunTask
    outcome: RunOutcome


@dataclass(frozen=True)
class Lost:
    """A run a worker took and will not finish — past its time limit (the worker was stopped), or its
    worker died or ended first — as the run error it comes back as."""

    task: RunTask
    outcome: RunOutcome


@dataclass(frozen=True)
class Gone:
    """A worker is no longer there (ended, died or stopped): its provider may get another."""

    provider: str


Event = Finished | Lost | Gone


class Workers:
    """A pool's live worker processes, started from the fork server, and what each is doing (``RunClock``).
    ``events`` turns their messages, their deaths and their overdue runs into what a pool acts on; each
    pool keeps its own books (which provider needs a worker, which runs are left). ``close`` ends them."""

    def __init__(self, tasks: Sequence[RunTask], run_timeout: float | None, stats: list[WorkerStats]) -> None:
        import multiprocessing as mp

        from portagent.runtime.eval_stuck import make_stacks
        from portagent.tools.ledger import start_identity

        self._ctx = mp.get_context("forkserver")
        self._results = self._ctx.Queue()
        self._queues: list[Any] = [self._results]
        self._procs: dict[int, tuple[str, Any]] = {}
        self._clock = RunClock(run_timeout)
        self._by_index = {t.index: t for t in tasks}
        self._stats = stats
        self._me = (os.getpid(), start_identity(os.getpid()))
        self._stacks = make_stacks()  # each worker's stack dump (eval_stuck)

    def __len__(self) -> int:
        return len(self._procs)

    def queue(self) -> Any:
        """A new task queue for workers to read (closed with the pool)."""
        q = self._ctx.Queue()
        self._queues.append(q)
        return q

    def start(self, provider: str, tasks: Any, env: dict[str, str]) -> int:
        """Start a worker of ``provider`` reading ``tasks`` (a ``queue``) in ``env``; its pid."""
        proc = self._ctx.Process(
            target=worker_main,
            args=(provider, tasks, self._results, env, os.getcwd(), self._me, self._stacks),
            name=f"portagent-eval-{provider}",
            daemon=True,
        )
        proc.start()
        assert proc.pid is not None
        self._procs[proc.pid] = (provider, proc)
        return proc.pid

    def events(self, timeout: float) -> list[Event]:
        """What happened since the last call. Runs past their limit first (their workers stopped, the
        reason saying where each was stuck); else one message from a worker, waited for up to
        ``timeout`` s; when none came, the workers that died without a word (killed, a segfault)."""
        from portagent.runtime.eval_stuck import stuck_reason

        out: list[Event] = []
        for pid, at, began, why in self._clock.overdue():
            provider, proc = self._procs.pop(pid)
            reason = stuck_reason(why, proc, self._stacks, self._by_index[at].out_dir)
            stop_worker(proc)
            out += [self._lost(at, reason, began), Gone(provider)]
        if out:
            return out
        try:
            kind, pid, payload = self._results.get(timeout=timeout)
        except queue.Empty:
            for pid, (provider, proc) in list(self._procs.items()):
                if not proc.is_alive() and proc.exitcode not in (0, None):
                    del self._procs[pid]
                    out += self._unfinished(pid, f"worker {pid} died (exit code {proc.exitcode})")
                    out.append(Gone(provider))
            return out
        if pid not in self._procs:  # from a worker stopped at its run's time limit: its run is accounted
            return out
        if kind == "setup":
            self._clock.setting_up(pid, self._by_index[payload])
        elif kind == "start":
            self._clock.began(pid, self._by_index[payload])
        elif kind == "run":
            self._clock.ended(pid)
            out.append(Finished(pid, self._by_index[payload.index], payload))
        elif kind == "done":
            self._stats.append(payload)
            provider, proc = self._procs.pop(pid)
            proc.join(timeout=10)
            # a worker that ended with a run taken and unfinished (its set-up raised SystemExit)
            out += self._unfinished(pid, f"worker {pid} ended before the run")
            out.append(Gone(provider))
        return out

    def _unfinished(self, pid: int, reason: str) -> list[Event]:
        """The run ``pid`` was making, if any, lost for ``reason``."""
        index = self._clock.ended(pid)
        return [] if index is None else [self._lost(index, reason, time.perf_counter())]

    def _lost(self, index: int, reason: str, began: float) -> Lost:
        from portagent.runtime.eval_execute import unrunnable

        task = self._by_index[index]
        return Lost(task, unrunnable(task, reason, began))

    def close(self) -> None:
        """End every worker still there with its process group (what it started goes with it), and the
        queues."""
        import signal

        from portagent.runtime.eval_stuck import remove_stacks

        for _, proc in self._procs.values():
            if proc.pid is not None:  # the worker leads its own group: its children go with it
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGTERM)
            proc.terminate()
        for q in self._queues:
            q.cancel_join_thread()
            q.close()
        remove_stacks(self._stacks)
