"""The eval runner: every case × provider × repeat × agent version of a suite, scored (DESIGN §7, §8).

    load_suite ──► plan_runs ──► RunTask… ──► run_tasks (process pool) ──► RunOutcome… ──► SuiteResult
                   (checks: cassettes,        one worker = one provider:      score_run per run
                    repeats, providers)       it imports one SDK, once

A run is one ``RunTask``: an agent version, a case, a provider, a repeat and a mode —

- ``replay``: the cassette ``cassettes/<suite>/<agent>@<version>/<case>/<provider>/r<repeat>/`` is
  replayed offline (no server, no key); the request and approvals are the case's *current* ones, so
  a case edited since its recording shows up as cassette drift, never as a silently stale pass.
  Latency is the recorded one (``run.json``): replay wall time means nothing (DESIGN §6).
- ``emulator``: the run talks to portagent's emulator (one per worker and script, reset before
  every run so ``times: N`` faults fire the same way in every run).
- ``live``: the vendor's API, with the provider's key from the environment.

Every run gets its own ledger and approval namespace, ``eval:<suite>:<agent>@<version>:<case>:
<provider>:r<repeat>``, cleared before it starts: a rerun executes its writes again instead of
answering "duplicate", and seeded ids (``runtime.replay.replay_ids``) stay in step with the
recording. Runs never share state, so they can go to any worker in any order.

Workers are processes (``forkserver``: the parent may hold threads — the progress bar, an emulator —
that must not be forked). Each worker is bound to one provider, so it imports one vendor SDK once;
when a provider's queue is empty its worker exits and the free slot goes to the provider with the
most work left per worker. Each worker reports its peak resident memory when it leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from portagent.contracts.errors import UsageError
from portagent.contracts.loaded_suite import LoadedSuite

# The runner is the module other code imports; planning and the pool live beside it.
from portagent.runtime.eval_plan import (  # noqa: F401  (re-exported)
    AgentRef,
    Mode,
    RunOutcome,
    RunTask,
    approver_for,
    check_cassettes,
    check_live_keys,
    check_providers_installed,
    plan_runs,
    request_for,
    resolve_agents,
    run_scope,
    script_hash,
    select_providers,
)
from portagent.runtime.eval_pool import PoolReport, run_tasks

if TYPE_CHECKING:
    pass


@dataclass
class EvalPlan:
    """Every run of an eval, checked (``plan_eval``); nothing has run yet."""

    loaded: LoadedSuite
    agents: list[AgentRef]
    mode: Mode
    providers: list[str]
    repeats: int
    tasks: list[RunTask]
    judges: Any = None
    """``runtime.judging.JudgeSetup`` when a case has graders or calibration is asked for."""


@dataclass
class EvalRun:
    """A finished eval: its plan, the ``SuiteResult`` and what the pool did."""

    plan: EvalPlan
    result: Any
    """The ``SuiteResult``."""
    pool: PoolReport
    workers: int
    errors: list[str] = field(default_factory=list)
    """One line per run that could not be made or failed outright (drift, crash …)."""
    scheduling: dict[str, Any] | None = None
    """What the scheduler did (limits, pauses, retries, spend), when one was active (``runtime.limits``)."""


def plan_eval(
    loaded: LoadedSuite,
    *,
    mode: Mode,
    providers: Sequence[str] | None = None,
    repeats: int | None = None,
    cassettes: str | Path = "cassettes",
    results: Path | None = None,
    case_ids: Sequence[str] | None = None,
    emulator_script: Path | None = None,
    calibrate: bool = False,
    planned: Sequence[RunTask] | None = None,
) -> EvalPlan:
    """Check everything that can refuse an eval — providers installed, ``--live`` keys, agents, every
    cassette and repeat for replay — and plan its runs. ``results``: where run traces will go.

    ``planned``: the runs already planned by the caller with the same arguments (``plan_runs`` with
    ``check=False``, possibly for more providers — the demo looks at which are recorded first): those of
    the chosen providers are taken, numbered again and checked, instead of being planned a second time."""
    chosen = select_providers(loaded, providers)
    check_providers_installed(chosen)
    if mode == "live":
        check_live_keys(chosen, list(loaded.agents.values()))
    check = not (mode == "emulator" and emulator_script is not None) and not calibrate
    if planned is None:
        agents = resolve_agents(loaded)
        tasks = plan_runs(
            loaded,
            mode=mode,
            providers=chosen,
            repeats=repeats,
            cassettes=cassettes,
            results=results.resolve() if results else None,
            case_ids=case_ids,
            agents=agents,
            check=check,
        )
    else:
        tasks, agents = _taken(planned, chosen)
        agents = agents or resolve_agents(loaded)
        if mode == "replay" and check:
            check_cassettes(loaded, tasks, cassettes, repeats_given=repeats is not None)
    if emulator_script is not None:
        from dataclasses import replace

        tasks = [replace(t, emulator_script=Path(emulator_script).resolve()) for t in tasks]
    judges = None
    if calibrate or any(t.graders for t in tasks):
        judges = _plan_judging(loaded, tasks, mode, cassettes, results, emulator_script, calibrate=calibrate)
    return EvalPlan(
        loaded,
        agents,
        mode,
        chosen,
        repeats if repeats is not None else loaded.suite.repeats,
        tasks,
        judges,
    )


def _taken(planned: Sequence[RunTask], providers: Sequence[str]) -> tuple[list[RunTask], list[AgentRef]]:
    """The runs of ``providers`` among ``planned``, in ``plan_runs``'s order (agent, case, provider in
    the order given, repeat) and numbered from 0 as it numbers them; the agents they run."""
    from dataclasses import replace

    rank = {p: i for i, p in enumerate(providers)}
    first: dict[tuple[str, str], int] = {}
    for t in planned:
        first.setdefault((t.agent.label, t.case.case_id), t.index)
    kept = sorted(
        (t for t in planned if t.provider in rank),
        key=lambda t: (first[(t.agent.label, t.case.case_id)], rank[t.provider], t.repeat),
    )
    agents = list({t.agent.label: t.agent for t in planned}.values())
    return [replace(t, index=i) for i, t in enumerate(kept)], agents


def _plan_judging(
    loaded: LoadedSuite,
    tasks: Sequence[RunTask],
    mode: Mode,
    cassettes: str | Path,
    results: Path | None,
    emulator_script: Path | None,
    *,
    calibrate: bool,
) -> Any:
    """Check the judges (and, for replay, that every judge run is recorded) before anything runs."""
    from portagent.runtime.judging import (
        JudgeSetup,
        calibration_graders,
        check_judge_cassettes,
        check_judges,
        plan_jobs,
        recorded_answers,
    )

    calibrated = calibration_graders(tasks, loaded)
    if calibrate and not calibrated:
        named = {g.name for case in loaded.cases for g in loaded.suite.graders_of(case)}
        unnamed = [g.name for g in loaded.suite.graders if g.calibration and g.name not in named]
        if unnamed:
            raise UsageError(
                f"{loaded.path}: --calibrate measures the graders the cases use, and no case names "
                f"{', '.join(unnamed)} (the suite's only graders with calibration): name it in a case's "
                "expect.graders (gate: false reports its verdicts without gating), record, then calibrate"
            )
        raise UsageError(
            f"{loaded.path}: --calibrate needs a grader with calibration (human-labelled answers); "
            "none of the suite's graders has any"
        )
    check_judges(tasks, mode, calibrated, emulator_script)
    setup = JudgeSetup(
        loaded.suite.suite_id,
        mode,
        Path(cassettes).resolve(),
        results.resolve() if results else None,
        Path(emulator_script).resolve() if emulator_script else None,
    )
    if mode == "replay":
        gating = [g for g in calibrated if g.spec.gate]
        jobs = plan_jobs(
            tasks,
            recorded_answers(tasks),
            setup,
            verdicts=not calibrate,
            calibration=calibrated if calibrate else gating,
        )
        script = loaded.suite.emulator_script
        emulator = str(loaded.path.parent / script) if script else None
        check_judge_cassettes(jobs, loaded.path, emulator, Path(cassettes))
    return setup


def calibrate_eval(plan: EvalPlan, *, workers: int = 2, gating_only: bool = False) -> list[Any]:
    """Run the judges on their human-labelled answers (nothing written): one ``CalibrationResult`` per
    calibrated grader (``gating_only``: only the graders that ask to gate)."""
    from dataclasses import replace

    from portagent.runtime.judging import calibration_graders, calibration_results, plan_jobs, run_jobs

    if plan.judges is None:
        return []
    graders = [g for g in calibration_graders(plan.tasks, plan.loaded) if g.spec.gate or not gating_only]
    jobs = plan_jobs([], {}, replace(plan.judges, results=None), verdicts=False, calibration=graders)
    return calibration_results(jobs, run_jobs(jobs, workers=workers))


def run_eval(
    plan: EvalPlan,
    *,
    workers: int = 2,
    in_process: bool = False,
    on_result: Callable[[RunOutcome], None] | None = None,
    resume: bool = False,
    calibration: list[Any] | None = None,
    scheduler: Any = None,
    executor: str = "local",
    address: str | None = None,
    carried: Collection[int] = (),
    run_timeout: float | None = None,
) -> EvalRun:
    """Run a plan and aggregate it. ``resume``: runs an interrupted eval already finished into the plan's
    results folder are kept (scored from their trace), the others run (``eval --resume``). The cases'
    graders judge the answers afterwards (``runtime.judging``); ``calibration``: the graders' calibration
    results (a gating grader gates only when eligible there). ``run_timeout``: the time limit of one run in
    seconds (None: its mode's, ``eval_workers.RUN_TIMEOUT_S``); a run past it is a run error.
    """
    from portagent.evals.aggregate import SuiteResult

    pool = run_tasks(
        plan.tasks,
        workers=workers,
        in_process=in_process,
        on_result=on_result,
        resume=resume,
        scheduler=scheduler,
        executor=executor,
        address=address,
        carried=carried,
        run_timeout=run_timeout,
    )
    suite = plan.loaded.suite
    judging: Any = None
    judge_errors: list[str] = []
    if plan.judges is not None and any(t.graders for t in plan.tasks):
        judging, judge_errors = _judge(
            plan, pool, workers, in_process, calibration or [], scheduler, executor, address
        )
    result = SuiteResult.from_runs(
        suite.suite_id,
        suite.dataset_version,
        [o.score for o in pool.outcomes],
        plan.loaded.cases,
        review=suite.review,
    )
    if judging is not None:
        result = result.model_copy(update={"judging": judging})
    if suite.context_gate is not None:  # issue 16: the ch. 04 token-saving gate (docs/context.md)
        from portagent.evals.context_metrics import context_savings

        roles = {a.role: a.version for a in plan.agents}
        result = result.model_copy(
            update={
                "context": context_savings(result, roles["baseline"], roles["candidate"], suite.context_gate)
            }
        )
    errors = [f"{plan.tasks[o.index].label}: {o.error}" for o in pool.outcomes if o.error]
    return EvalRun(plan, result, pool, workers, errors + judge_errors)


def _judge(
    plan: EvalPlan,
    pool: PoolReport,
    workers: int,
    in_process: bool,
    calibration: list[Any],
    scheduler: Any = None,
    executor: str = "local",
    address: str | None = None,
) -> tuple[Any, list[str]]:
    """The judge runs of the agent runs' answers; each outcome's score gets its verdicts (in place)."""
    from portagent.runtime.judging import fold, plan_jobs, run_jobs

    answers = {o.index: o.output for o in pool.outcomes if o.output is not None}
    jobs = plan_jobs(plan.tasks, answers, plan.judges)
    outcomes = run_jobs(
        jobs,
        workers=workers,
        in_process=in_process,
        scheduler=scheduler,
        executor=executor,
        address=address,
    )
    scores, judging = fold(plan.tasks, {o.index: o.score for o in pool.outcomes}, jobs, outcomes, calibration)
    for o in pool.outcomes:
        o.score = scores[o.index]
    errors = [
        f"judge {j.task.case.case_id} ({j.task.agent.label} on {j.task.provider}): {outcomes[j.task.index].error}"
        for j in jobs
        if j.task.index in outcomes and outcomes[j.task.index].error
    ]
    return judging, errors
