"""Recording a suite's runs into cassette folders (``portagent record``, the pytest plugin's ``--record``).

Each recording is staged (``runtime.record``) and moved into place only when complete and, when asked,
verified by a replay in a worker process. Recordings are made one at a time in this process (the
emulator's fault counters and the recorded timing belong to that run alone), or as Ray tasks; under a
scheduler (``runtime.limits``: ``--live`` limits, Retry-After, the spend cap) each starts when admitted.
An interrupted or failed recording leaves no staging folder and no empty layout folder.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from portagent.adapters.base import REGISTRY
from portagent.contracts.errors import PortagentError, UsageError
from portagent.runtime.eval_execute import _bundle, _emulator, clear_run_state, close_emulators
from portagent.runtime.eval_plan import (
    RunOutcome,
    RunTask,
    approver_for,
    options_extra,
    request_for,
    script_hash,
)
from portagent.runtime.eval_pool import run_tasks
from portagent.runtime.fork_server import warm_workers
from portagent.runtime.keys import live_key

if TYPE_CHECKING:
    from portagent.runtime.limits import Scheduler

RecordOnly = Literal["all", "missing", "drifted"]


@dataclass
class RecordOutcome:
    """One cassette folder after ``record_tasks``."""

    task: RunTask
    action: Literal["recorded", "skipped", "failed"]
    """What happened to the folder."""
    detail: str = ""
    """Run status, why it was skipped, or the error."""
    staging: Path | None = None
    """A new recording not yet moved into place (``runtime.record``: placed only when complete and verified)."""
    run: RunOutcome | None = None
    """The recorded run as the scheduler of a limited recording reads it (what it used and spent, what its
    provider said: ``runtime.limits``); None when no scheduler asked."""


def is_drift(outcome: RunOutcome) -> bool:
    """The replay failed because the SDK sent what the cassette does not hold."""
    return "cassette_drift" in (outcome.error or "")


def record_tasks(
    tasks: Sequence[RunTask],
    *,
    source: Literal["emulator", "live"],
    only: RecordOnly = "all",
    record_mode: str = "all",
    emulator_script: Path | None = None,
    verify: bool = True,
    workers: int = 2,
    on_result: Callable[[RecordOutcome], None] | None = None,
    executor: str = "local",
    address: str | None = None,
    scheduler: Scheduler | None = None,
) -> list[RecordOutcome]:
    """Record each task's run into its cassette folder.

    Recording happens in this process, one run at a time, so the emulator's fault counters and the
    recorded timing belong to that run alone. ``only="missing"`` skips folders already recorded;
    ``only="drifted"`` replays every recorded folder first and re-records those that drift, including those
    recorded against the emulator with another script than the one used now (``evals.drift.script_changed``).
    ``verify`` replays each new recording and reports one that does not replay cleanly as failed (it
    would fail in CI anyway).

    Replays (drift checks, verification) go to worker processes: a run's tools may keep state in
    their module (the demo's ticket numbers), and a replay must start from the same state as its
    recording did — a fresh process, never the one that just recorded the same scope.

    ``executor="ray"``: recordings and replays are Ray tasks (``runtime.ray_executor``; ``address``).

    ``scheduler`` (``runtime.limits``; judges included): a recording starts only when its provider's
    limits, pauses and the spend cap allow, each model request is held to the provider's rate, and an
    effect-free recording that failed with a retryable provider error is made again after the pause.
    """

    from portagent.runtime.record import clean_staging

    for parent in sorted({t.cassette.parent for t in tasks if t.cassette is not None}):
        clean_staging(parent)  # what a killed recording left behind
    outcomes: dict[int, RecordOutcome] = {}
    try:
        ray: dict[str, Any] = {"executor": executor, "address": address, "scheduler": scheduler}
        done = _record_tasks(
            tasks, outcomes, source, only, record_mode, emulator_script, verify, workers, on_result, **ray
        )
        # the judges of the cases' graders judge the answers just recorded (runtime.judging)
        from portagent.runtime.judging import record_jobs

        recorded = {o.task.index for o in done if o.action == "recorded"}
        start = max((t.index for t in tasks), default=-1) + 1
        judges = record_jobs(tasks, recorded, source, only, start)
        if judges:
            for parent in sorted({t.cassette.parent for t in judges if t.cassette is not None}):
                clean_staging(parent)
            done += _record_tasks(
                judges,
                outcomes,
                source,
                "all",
                record_mode,
                emulator_script,
                verify,
                workers,
                on_result,
                **ray,
            )
        return done
    finally:
        from portagent.runtime.record import discard, prune_empty

        close_emulators()  # also when interrupted: an emulator left to the interpreter's exit hung it
        for o in outcomes.values():
            if o.staging is not None:  # never placed (interrupted, or its replay failed)
                discard(o.staging)
        for parent in sorted({t.cassette.parent for t in tasks if t.cassette is not None}):
            clean_staging(parent, own=True)  # what an interrupt left between creating and discarding
        for t in tasks:  # the layout folders of recordings never made (interrupted) or never placed
            if t.cassette is not None:
                prune_empty(t.cassette, levels=5)


def _record_tasks(
    tasks: Sequence[RunTask],
    outcomes: dict[int, RecordOutcome],
    source: Literal["emulator", "live"],
    only: RecordOnly,
    record_mode: str,
    emulator_script: Path | None,
    verify: bool,
    workers: int,
    on_result: Callable[[RecordOutcome], None] | None,
    executor: str = "local",
    address: str | None = None,
    scheduler: Scheduler | None = None,
) -> list[RecordOutcome]:
    from dataclasses import replace

    from portagent.recording.layout import is_recorded
    from portagent.runtime.record import missing_files

    todo: list[RunTask] = []
    for task in tasks:
        assert task.cassette is not None
        recorded = is_recorded(task.cassette, task.provider)
        if only == "missing" and recorded:
            outcomes[task.index] = RecordOutcome(task, "skipped", "already recorded")
        elif only == "drifted" and not recorded:
            outcomes[task.index] = RecordOutcome(task, "skipped", "not recorded (use --missing)")
        else:
            todo.append(task)
    if executor == "local" and todo and (verify or only == "drifted"):
        # The replays (drift checks, verification) run in the eval pool's workers: its fork server imports
        # the run path (and a lone provider's SDK) now, while this process records, as `eval` warms it
        # while it plans. Started later by the pool itself it preloaded nothing: each worker imported it
        # all, and so did every later eval's workers in a process that records then evals (a notebook).
        warm_workers([t.provider for t in todo])
    # The replays compare a recording's emulator script hash with the script this recording uses (the
    # --emulator SCRIPT given, judges included, else the case's): a changed script is drift (evals.drift).
    script = emulator_script if source == "emulator" else None
    if only == "drifted" and todo:
        checks = run_tasks(
            [
                replace(t, mode="replay", out_dir=None, emulator_script=script or t.emulator_script)
                for t in todo
            ],
            workers=workers,
            executor=executor,
            address=address,
        )
        drifted = {o.index for o in checks.outcomes if is_drift(o)}
        for o in checks.outcomes:
            if o.index not in drifted:
                t = next(t for t in todo if t.index == o.index)
                outcomes[o.index] = RecordOutcome(
                    t,
                    "skipped",
                    "replays cleanly" if not o.error else f"replay fails without drift: {o.error}",
                )
        todo = [t for t in todo if t.index in drifted]
    if executor == "ray":
        from portagent.runtime.ray_executor import record_ray

        made: Iterable[tuple[RunTask, RecordOutcome]] = record_ray(
            todo,
            source=source,
            record_mode=record_mode,
            script=emulator_script,
            address=address,
            num_cpus=workers,
            scheduler=scheduler,
        )
    elif scheduler is not None and scheduler.active:
        made = _scheduled_records(todo, scheduler, source, record_mode, emulator_script)
    else:
        made = ((task, _record_one(task, source, record_mode, emulator_script)) for task in todo)
    for task, out in made:
        if out.staging is not None:
            lacking = missing_files(out.staging, task.provider)
            if lacking:
                out = _failed(out, f"the recording is incomplete ({', '.join(lacking)} missing)")
            elif not verify:
                out = _placed(out, out.detail)
        outcomes[task.index] = out
        if on_result and not (verify and out.action == "recorded"):
            on_result(out)
    close_emulators()
    fresh = [t for t in todo if outcomes[t.index].action == "recorded" and outcomes[t.index].staging]
    if verify and fresh:
        staged = {t.index: outcomes[t.index].staging for t in fresh}
        checks = run_tasks(
            [
                replace(
                    t,
                    mode="replay",
                    out_dir=None,
                    cassette=staged[t.index],
                    emulator_script=script or t.emulator_script,
                )
                for t in fresh
            ],
            workers=workers,
            executor=executor,
            address=address,
        )
        for o in checks.outcomes:
            prev = outcomes[o.index]
            same = (
                o.score.status == prev.detail.split(" ")[0] and not is_drift(o) and o.score.provenance.run_id
            )
            if o.error and not same:
                outcomes[o.index] = _failed(prev, f"recorded, but its replay fails: {o.error}")
            else:
                outcomes[o.index] = _placed(prev, prev.detail + ", replays cleanly")
            if on_result:
                on_result(outcomes[o.index])
    if on_result:
        for t in tasks:
            if outcomes[t.index].action == "skipped":
                on_result(outcomes[t.index])
    return [outcomes[t.index] for t in tasks]


def _placed(prev: RecordOutcome, detail: str) -> RecordOutcome:
    """Move a complete (and, when asked, verified) recording into its folder."""
    from portagent.runtime.record import place

    assert prev.staging is not None and prev.task.cassette is not None
    try:
        place(prev.staging, prev.task.cassette, prev.task.provider)
    except (OSError, PortagentError) as e:
        return _failed(prev, f"could not move the recording into place: {e}")
    return RecordOutcome(prev.task, "recorded", detail)


def _failed(prev: RecordOutcome, why: str) -> RecordOutcome:
    """A new recording that is not moved into place; an earlier recording in its folder is kept."""
    from portagent.runtime.record import discard

    if prev.staging is not None:
        discard(prev.staging)
    kept = " (not moved into place; the folder keeps its earlier recording, if any)"
    return RecordOutcome(prev.task, "failed", why + kept)


def _record_one(
    task: RunTask, source: str, record_mode: str, script_override: Path | None, *, for_scheduler: bool = False
) -> RecordOutcome:
    """Record one task into a staging folder. ``for_scheduler``: keep the run, scored, for the scheduler."""
    from portagent.runtime.eval_execute import scored, unrunnable

    t0 = time.perf_counter()
    try:
        output, staging, refused = asyncio.run(_record(task, source, record_mode, script_override))
    except PortagentError as e:
        why = e.render()
    except Exception as e:
        why = "".join(traceback.format_exception_only(type(e), e)).strip()
    else:
        r = output.result
        first = (r.error or "").splitlines()[0] if r.error else ""
        first = first if len(first) <= 200 else first[:199] + "…"
        if refused:
            # the script has no answer for this run (no conversation matches, one ran out of turns, a
            # request it cannot read): the recording holds the emulator's complaint, not the agent's
            # behaviour, whatever the SDK made of it (an exception, or an answer quoting the error)
            from portagent.runtime.record import discard

            discard(staging)
            shown = refused if len(refused) <= 200 else refused[:199] + "…"
            why = f"the emulator script cannot answer this run: {shown}"
            return RecordOutcome(
                task, "failed", why, run=unrunnable(task, why, t0) if for_scheduler else None
            )
        detail = r.status + (f" ({r.stop_reason})" if r.stop_reason != "final_output" else "")
        if r.status == "failed" and first:
            detail += f": {first}"
        run = scored(task, output.events, r, None, source, [], t0) if for_scheduler else None
        return RecordOutcome(task, "recorded", detail, staging, run)
    return RecordOutcome(task, "failed", why, run=unrunnable(task, why, t0) if for_scheduler else None)


def _scheduled_records(
    tasks: Sequence[RunTask],
    scheduler: Scheduler,
    source: str,
    record_mode: str,
    script: Path | None,
) -> Iterator[tuple[RunTask, RecordOutcome]]:
    """Recordings one at a time, each when the scheduler admits it (``--live`` limits, Retry-After, the
    spend cap). A recording the scheduler sends back (a retryable provider failure of an effect-free
    run) is discarded and made again after its provider's pause."""
    from portagent.runtime.eval_scheduled import one_at_a_time
    from portagent.runtime.record import discard

    def make(task: RunTask) -> RecordOutcome:
        return _record_one(task, source, record_mode, script, for_scheduler=True)

    def dropped(o: RecordOutcome) -> None:
        if o.staging is not None:
            discard(o.staging)

    for o in one_at_a_time(tasks, scheduler, make, scored=run_of, refused=not_recorded, dropped=dropped):
        yield o.task, o


def run_of(o: RecordOutcome) -> RunOutcome:
    """What the scheduler reads of a recording made ``for_scheduler``."""
    assert o.run is not None, "recorded without for_scheduler"
    return o.run


def not_recorded(task: RunTask, why: str) -> RecordOutcome:
    """A recording the scheduler never started (the spend cap), with why."""
    return RecordOutcome(task, "failed", why.replace("not run:", "not recorded:", 1))


async def _record(task: RunTask, source: str, record_mode: str, script_override: Path | None) -> Any:
    from portagent.adapters.port import Endpoint
    from portagent.runtime.record import stage_run
    from portagent.runtime.replay import replay_ids

    assert task.cassette is not None
    bundle = _bundle(task.agent.path)
    clear_run_state(task.scope)
    emu = None
    if source == "emulator":
        script = script_override or task.emulator_script
        if script is None:
            raise UsageError(f"case {task.case.case_id} has no emulator_script; give --emulator SCRIPT")
        emu = _emulator(script)
        emu.reset()
        seen = len(emu.requests())
        endpoint = Endpoint(
            source="emulator",
            base_url=emu.base_url,
            api_key=REGISTRY[task.provider].dummy_key,
            script_hash=script_hash(script),
        )
    else:
        endpoint = Endpoint(source="live", api_key=live_key(task.provider, bundle))
    ids = replay_ids(bundle.root, bundle.spec.version, task.case.case_id, task.provider, task.repeat)
    output, staging = await stage_run(
        bundle,
        request_for(task.case, task.provider, task.repeat, bundle),
        task.cassette,
        endpoint,
        approver=approver_for(task.case, task.approver),
        record_mode=record_mode,
        scope=task.scope,
        ids=ids,
        extra=options_extra(task.case, task.provider, task.repeat, bundle),
    )
    # The emulator marks its own refusals in its request log; one runs' requests are the entries this
    # run added (recordings in a process are made one at a time).
    refused = (
        next((e.get("error") or "" for e in emu.requests()[seen:] if e.get("refusal")), "") if emu else ""
    )
    return output, staging, refused
