"""``eval --executor ray``: the same plan, each run a Ray task, for evals larger than one machine.

    driver (portagent eval)                               Ray cluster (any node)
    plan ─► RunTask … ──► ray.remote(_make_run)(task, env) ──► eval_execute.execute(task) ─► RunOutcome
         ◄── ray.wait: outcomes as they finish (progress bar, scheduler) ◄───────────────┘

A run is what the local pool makes: ``eval_execute.execute``, the same code, so the outcomes — and the
results folder — are the local pool's (timings aside). What has to hold on a cluster:

- **Paths**: a task carries absolute paths (agent spec, cassette folder, results folder); every node must
  see them at the same place — one machine's folder for a local Ray, a shared filesystem (NFS, a mounted
  bucket) for a cluster. Results are written by the node that made the run, into that shared folder.
- **Environment**: the driver sends each task the variables portagent reads (``PORTAGENT_*``, each
  provider's key and base-URL variable); API keys therefore travel to the nodes through Ray, like any task
  argument — on a shared cluster, set them in the nodes' environment instead and leave them out of the
  driver's.
- **State and effects**: each run clears and uses its own ledger and approval namespace in
  ``PORTAGENT_HOME`` (``eval:<suite>:<agent>@<v>:<case>:<provider>:r<k>``), so runs never share state and
  may go to any node. A task whose worker is lost is retried by Ray (``max_retries``); the retried run
  starts its namespace afresh, exactly like a rerun, so one result is kept per run. An eval's tools are the
  suite's sandboxed handlers; a suite whose tools touch real systems must not run on several nodes unless
  ``PORTAGENT_HOME`` is one shared folder whose SQLite locking the filesystem honours (NFS often does not).
- **Warm imports**: Ray reuses its worker processes, so a vendor SDK is imported once per worker process,
  like a local worker bound to a provider.

``record --executor ray`` makes each recording a Ray task the same way (``record_ray``): the run is
staged into its cassette folder by the node, and the driver replays it (the verification, as Ray tasks
too) and moves it into place.

``--address`` (or ``RAY_ADDRESS``) joins a running cluster; without it a local Ray is started with
``--workers`` CPUs. Ray is the ``ray`` extra.
"""

from __future__ import annotations

import importlib.util
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from portagent.contracts.errors import UsageError
from portagent.runtime.eval_plan import RunOutcome, RunTask

if TYPE_CHECKING:
    from portagent.runtime.record_tasks import RecordOutcome

T = TypeVar("T")

RAY_RETRIES = 2
"""Times Ray re-runs a task whose worker died (a lost node): the run starts its namespace afresh."""


def require_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        raise UsageError("--executor ray needs the 'ray' package: pip install 'portagent[ray]'")


def task_env() -> dict[str, str]:
    """The variables a run reads, sent with each task (never the driver's whole environment)."""
    from portagent.adapters.base import REGISTRY

    names = {n for info in REGISTRY.values() for n in (info.key_env, info.base_url_env)}
    return {k: v for k, v in os.environ.items() if k.startswith("PORTAGENT_") or k in names}


def _make_run(task: RunTask, env: dict[str, str], cwd: str) -> RunOutcome:
    """One run on a Ray worker: the local pool's ``execute``."""
    from portagent.runtime.eval_execute import execute

    _enter(env, cwd)
    return execute(task)


def _enter(env: dict[str, str], cwd: str) -> None:
    """A Ray worker takes the driver's variables and folder for this task."""
    os.environ.update(env)
    # a previous task's home and request limits must not leak into this one
    for name in ("PORTAGENT_HOME", "PORTAGENT_REQUEST_LIMITS"):
        if name not in env:
            os.environ.pop(name, None)
    if os.path.isdir(cwd):
        os.chdir(cwd)


def _make_recording(
    task: RunTask,
    source: str,
    record_mode: str,
    script: Path | None,
    env: dict[str, str],
    cwd: str,
    for_scheduler: bool,
) -> RecordOutcome:
    """One recording on a Ray worker: ``record``'s own ``_record_one``, staged into the task's cassette
    folder (a path every node sees); the driver verifies and places it."""
    from portagent.runtime.record_tasks import _record_one

    _enter(env, cwd)
    return _record_one(task, source, record_mode, script, for_scheduler=for_scheduler)


def record_ray(
    tasks: Sequence[RunTask],
    *,
    source: str,
    record_mode: str,
    script: Path | None,
    address: str | None = None,
    num_cpus: int = 2,
    scheduler: Any = None,
) -> Iterator[tuple[RunTask, RecordOutcome]]:
    """``record --executor ray``: each recording a Ray task, yielded as it finishes. Each Ray worker
    process has its own emulator (reset before every run, like the local recorder's), so a recording's
    fault counters and timing are its own. ``scheduler``: as for ``run_ray`` (a recording sent back is
    discarded and made again)."""
    from portagent.runtime.eval_execute import unrunnable
    from portagent.runtime.record import discard
    from portagent.runtime.record_tasks import RecordOutcome, not_recorded, run_of

    ray = connect(address, num_cpus)
    remote = ray.remote(max_retries=RAY_RETRIES)(_make_recording)
    cwd, limited = os.getcwd(), scheduler is not None and scheduler.active

    def lost(task: RunTask, why: str) -> RecordOutcome:  # the folder keeps its earlier recording
        return RecordOutcome(task, "failed", why, run=unrunnable(task, why, 0.0) if limited else None)

    def dropped(o: RecordOutcome) -> None:
        if o.staging is not None:
            discard(o.staging)

    yield from _admitted(
        tasks,
        ray,
        scheduler,
        lambda t, env: remote.remote(t, source, record_mode, script, env, cwd, limited),
        scored=run_of,
        lost=lost,
        refused=not_recorded,
        dropped=dropped,
    )


def connect(address: str | None, num_cpus: int) -> Any:
    """Join a Ray cluster (``address`` / ``RAY_ADDRESS``), reuse the one this process joined, or start
    a local one with ``num_cpus`` CPUs."""
    require_ray()
    import ray

    if ray.is_initialized():
        return ray
    try:
        if address or os.environ.get("RAY_ADDRESS"):
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise UsageError(
            f"--executor ray: cannot join Ray at {address or os.environ.get('RAY_ADDRESS')}: {e}"
        ) from e
    return ray


def run_ray(
    tasks: Sequence[RunTask],
    *,
    address: str | None = None,
    num_cpus: int = 2,
    scheduler: Any = None,
    on_result: Callable[[RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Every task as a Ray task; outcomes in plan order. ``scheduler``: limits, Retry-After and the spend
    cap are applied by the driver, which submits a run only when admitted (``runtime.limits``)."""
    out = []
    for o in _stream(tasks, connect(address, num_cpus), scheduler):
        out.append(o)
        if on_result:
            on_result(o)
    return sorted(out, key=lambda o: o.index)


def _stream(tasks: Sequence[RunTask], ray: Any, scheduler: Any) -> Iterator[RunOutcome]:
    from portagent.runtime.eval_execute import unrunnable
    from portagent.runtime.eval_scheduled import not_run

    remote = ray.remote(max_retries=RAY_RETRIES)(_make_run)
    cwd = os.getcwd()
    for _, outcome in _admitted(
        tasks,
        ray,
        scheduler,
        lambda t, env: remote.remote(t, env, cwd),
        scored=lambda o: o,
        lost=lambda t, why: unrunnable(t, why, 0.0),
        refused=not_run,
    ):
        yield outcome


def _admitted(
    tasks: Sequence[RunTask],
    ray: Any,
    scheduler: Any,
    submit: Callable[[RunTask, dict[str, str]], Any],
    *,
    scored: Callable[[T], RunOutcome],
    lost: Callable[[RunTask, str], T],
    refused: Callable[[RunTask, str], T],
    dropped: Callable[[T], None] | None = None,
) -> Iterator[tuple[RunTask, T]]:
    """Each task ``submit``ted as a Ray task when the scheduler admits it (all at once without limits),
    yielded as it finishes. A task lost past Ray's retries is ``lost``; a result the scheduler sends back
    goes to ``dropped`` and its task runs again; once the spend cap stops scheduling, the tasks not
    submitted are ``refused``."""
    env = task_env()
    limited = scheduler is not None and scheduler.active
    if limited:  # each Ray worker process limits its requests to its share of the provider's rate
        env.update(scheduler.request_env(max(1, int(ray.cluster_resources().get("CPU", 1)))))
        scheduler.attempts.clear()
    pending = deque(tasks)
    running: dict[Any, RunTask] = {}
    while pending or running:
        while pending and (not limited or scheduler.admit(pending[0])):
            task = pending.popleft()
            running[submit(task, env)] = task
        if limited and scheduler.stopped and pending:
            while pending:
                task = pending.popleft()
                yield task, refused(task, scheduler.stopped)
        if not running:
            import time

            time.sleep(scheduler.wait_s(pending[0].provider) if limited and pending else 0.01)
            continue
        done, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
        for ref in done:
            task = running.pop(ref)
            try:
                result: T = ray.get(ref)
            except Exception as e:  # the task failed past its retries (a lost node): it fails, says why
                result = lost(task, f"Ray task failed: {type(e).__name__}: {str(e)[:300]}")
            if limited and scheduler.finished(task, scored(result)):
                if dropped is not None:
                    dropped(result)
                pending.appendleft(task)
            else:
                yield task, result
