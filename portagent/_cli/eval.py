"""``portagent eval SUITE (--replay | --emulator | --live) [--providers …] [--repeats N] [--workers N] [--out DIR]``.

Runs every case × provider × repeat × agent version of the suite through a pool of worker processes,
scores each run, writes the results folder (report.json, eval.json, ci_gate.json, report.md,
junit.xml, report.html, runs/) and prints a summary table. Exit 0 when the gate passes, 1 when it
blocks (or a cassette is missing), 2 on usage errors, 3 when only run or provider errors block it.
"""

from __future__ import annotations

import argparse
import functools
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: the CLI loads the eval core when a command runs
    from pathlib import Path

    from portagent.evals.compare import Comparison
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results
    from portagent.runtime.eval_plan import Mode
    from portagent.runtime.eval_run import EvalPlan


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="run a suite on its providers and agent versions, score it, gate it",
        description="Run every case x provider x repeat x agent version of a suite, score each run, "
        "write the results folder and its reports. Exit 0 when the gate passes, 1 when "
        "it blocks, 2 on usage errors, 3 when only run or provider errors block it (nothing was measured: "
        "a retry may pass).",
    )
    p.add_argument("suite", help="suite file (kind: suite)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--replay", action="store_true", help="replay the recorded cassettes offline (no key, no network)"
    )
    src.add_argument(
        "--emulator",
        nargs="?",
        const="",
        metavar="SCRIPT",
        help="run against portagent's emulator (default: the suite's emulator_script)",
    )
    src.add_argument("--live", action="store_true", help="call the real vendor APIs (needs their API keys)")
    p.add_argument(
        "--providers", action="append", metavar="P[,P…]", help="providers to run (default: the suite's)"
    )
    p.add_argument(
        "--cassettes",
        default="cassettes",
        metavar="DIR",
        help="cassette root for --replay (default: ./cassettes)",
    )
    p.add_argument(
        "--repeats", type=int, metavar="N", help="runs per case x provider x version (default: the suite's)"
    )
    p.add_argument(
        "--workers", type=int, metavar="N", help="worker processes (default: CPU count, at most 4)"
    )
    add_run_timeout_arg(p)
    p.add_argument("--case", action="append", dest="cases", metavar="ID", help="only this case (repeatable)")
    p.add_argument("--out", metavar="DIR", help="results folder (default: out/<suite>-<UTC time>)")
    p.add_argument("--overwrite", action="store_true", help="replace the results in a non-empty --out folder")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted eval in --out: keep the runs it finished, run the others",
    )
    p.add_argument(
        "--reuse",
        metavar="RESULTS",
        help="keep the runs of an earlier results folder (it may be --out) whose inputs are unchanged — "
        "spec, policy, tools and handler code, case request, cassette or emulator script, portagent and "
        "SDK versions — scoring them again instead of making them (labelled reused); not with --live",
    )
    p.add_argument(
        "--baseline",
        metavar="RESULTS",
        help="results folder the result is gated against (its runs' tools are compared too)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="a tool changed without a version bump blocks the gate (default: a warning)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="local: a pool of worker processes (default); ray: each run a Ray task (the ray extra)",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="with --executor ray: the Ray cluster to join (default: RAY_ADDRESS, else a local Ray "
        "with --workers CPUs)",
    )
    add_scheduling_args(p, "runs", "the eval (judges included)", "are reported not_run with the reason")
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="run only the graders' judges on their human-labelled answers and report agreement "
        "(accuracy, Cohen's kappa, confusion); exit 1 when a grader that asks to gate may not",
    )


def split_csv(values: list[str] | None, flag: str = "--providers") -> list[str] | None:
    """Comma-separated flag values; None when the flag is absent. A flag given with nothing in it is a usage
    error, never "all" (``--providers ""`` must not silently run every provider)."""
    if values is None:
        return None
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if not out:
        from portagent.contracts.errors import UsageError

        raise UsageError(f"{flag}: no value given (name at least one, comma-separated)")
    return out


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def add_run_timeout_arg(p: Any) -> None:
    """``--run-timeout``, for ``eval`` and ``demo`` (``runtime.eval_workers.RUN_TIMEOUT_S``)."""
    p.add_argument(
        "--run-timeout",
        metavar="SECONDS",
        help="time limit of one run: a run past it stops its worker and fails with the reason, the eval goes "
        "on (default: 120 for --replay, 300 for --emulator, 900 for --live); a worker's start-up (its SDK "
        "import) is timed apart, with at least 120 s",
    )


def run_timeout_s(value: str | None) -> float | None:
    """``--run-timeout``'s seconds (None when absent); anything but a number of seconds above 0 is a usage
    error (a limit of 0 would stop every run)."""
    if value is None:
        return None
    import math

    from portagent.contracts.errors import UsageError

    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise UsageError(f"--run-timeout must be a number of seconds above 0 (e.g. 120), got {value!r}")
    return seconds


def add_scheduling_args(p: Any, runs: str, whole: str, unstarted: str) -> None:
    """``--max-spend-usd`` and ``--limit``, for ``eval`` and ``record`` (``runtime.limits``)."""
    p.add_argument(
        "--max-spend-usd",
        type=float,
        metavar="USD",
        help=f"stop scheduling {runs} once {whole} has spent this much; the {runs} not started {unstarted}",
    )
    p.add_argument(
        "--limit",
        action="append",
        metavar="P:FIELD=V[,…]",
        help="per-provider limits for --live over the suite's limits: max_concurrency, "
        "requests_per_minute, tokens_per_minute, burst_s, max_attempts, backoff_base_s, backoff_cap_s "
        "(e.g. openai:max_concurrency=4,requests_per_minute=500; repeatable)",
    )


def check_spend(max_spend_usd: float | None) -> None:
    from portagent.contracts.errors import UsageError

    if max_spend_usd is not None and not max_spend_usd > 0:
        raise UsageError(f"--max-spend-usd must be more than 0, got {max_spend_usd:g}")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.contracts.errors import UsageError

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    if args.repeats is not None and args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {args.repeats}")
    run_timeout_s(args.run_timeout)
    if not Path(args.suite).is_file():
        raise UsageError(f"{args.suite}: suite file not found")
    mode: Mode = "replay" if args.replay else "live" if args.live else "emulator"
    script = Path(args.emulator).resolve() if args.emulator else None
    if script is not None and not script.is_file():
        raise UsageError(f"--emulator {args.emulator}: emulator script not found")
    out = Path(args.out) if args.out else None
    if args.resume and out is None:
        raise UsageError("--resume continues the eval in --out DIR; give the folder of the interrupted eval")
    if args.resume and args.overwrite:
        raise UsageError(
            "--resume keeps the finished runs in --out and --overwrite replaces them: choose one"
        )
    reuse = Path(args.reuse) if args.reuse else None
    if reuse is not None:
        if mode == "live":
            raise UsageError("--reuse keeps replayed and emulated runs; a live run is never reused")
        if args.resume:
            raise UsageError("--resume already keeps the finished runs in --out: drop --reuse")
    if args.address and args.executor != "ray":
        raise UsageError("--address names a Ray cluster: use it with --executor ray")
    if args.executor == "ray" and args.run_timeout is not None:
        # Ray queues a task until a CPU is free, so the driver cannot tell a run's own time (ray_executor)
        raise UsageError(
            "--run-timeout is enforced by the local worker pool, not on Ray: drop it with --executor ray"
        )
    if args.executor == "ray":
        from portagent.runtime.ray_executor import require_ray

        require_ray()
    check_spend(args.max_spend_usd)
    if args.calibrate:
        if args.resume or args.baseline or args.reuse:
            raise UsageError(
                "--calibrate runs only the judges: --resume, --baseline and --reuse do not apply"
            )
        return calibrate_suite(
            args.suite,
            mode=mode,
            cassettes=args.cassettes,
            out=out,
            overwrite=args.overwrite,
            workers=args.workers or default_workers(),
            emulator_script=script,
        )
    baseline = None
    if args.baseline:
        from portagent.evals.report import load_results

        if out is not None:
            refuse_baseline_in_out(Path(args.baseline), out)
        baseline = load_results(args.baseline)  # refused (exit 2) before anything runs
    from portagent.runtime.fork_server import stop_warm_workers, warm_workers

    # Given --providers, the workers' fork server warms up (the run path and vcrpy, and a lone provider's SDK:
    # 1.5 s of imports and more) from here, while this process imports the eval core, loads the suite and
    # plans, as the demo does; each of them waited for the other. Without it, once the plan names them (a
    # lone provider's SDK is preloaded only if known). Not for --reuse (warmed only if a run is to be made)
    # nor Ray. An eval refused from here on ends it at once: it holds the output pipes until its imports end.
    providers = split_csv(args.providers)
    warming = False
    if providers and args.executor == "local" and reuse is None:
        warming = warm_workers(providers)
    try:
        results, decision, _ = _run(args, mode, out, script, baseline, reuse)
    except KeyboardInterrupt:
        import sys

        if warming:  # interrupted while it imports: it would hold the output for seconds more
            stop_warm_workers()
        where = f"; the runs finished so far are kept in {out}: add --resume to continue" if out else ""
        sys.stderr.write(f"portagent: interrupted{where}\n")
        return 130
    except BaseException:
        if warming:
            stop_warm_workers()
        raise
    from portagent.evals.github import report_to_github

    report_to_github(decision, results)  # GITHUB_ACTIONS=true: annotations + job summary
    return int(decision.exit_code)


def refuse_baseline_in_out(baseline: Path, out: Path) -> None:
    """``--baseline`` may not be the ``--out`` folder, nor lie inside it. The eval replaces what is in
    ``--out`` (``--overwrite`` empties it, ``--resume`` rewrites its report.json), while its decision
    reads the baseline's runs after the runs are made and records the baseline by path and by its
    report.json's hash: the baseline would be deleted before it is read, or recorded as the new result
    itself, so that every later ``gate``/``report`` of the folder refuses it as changed. Refused before
    anything is read, deleted or run. (``--reuse`` of ``--out`` itself is fine: its runs are set aside.)"""
    from portagent.contracts.errors import UsageError

    folder = baseline.parent if baseline.name == "report.json" and baseline.is_file() else baseline
    inner, outer = folder.resolve(), out.resolve()
    if inner == outer or outer in inner.parents:
        where = "is the --out folder" if inner == outer else f"lies inside the --out folder {out}"
        raise UsageError(
            f"--baseline {baseline}: {where}, whose results this eval replaces: the baseline would be gone "
            f"before the gate reads it. Copy it aside first (cp -r {folder} {folder}.baseline, then "
            f"--baseline {folder}.baseline), or write the new results to another --out"
        )


def _run(args: argparse.Namespace, mode: Any, out: Any, script: Any, baseline: Any, reuse: Any) -> Any:
    return run_suite(
        args.suite,
        mode=mode,
        providers=split_csv(args.providers),
        repeats=args.repeats,
        workers=args.workers or default_workers(),
        cassettes=args.cassettes,
        out=out,
        overwrite=args.overwrite,
        case_ids=split_csv(args.cases, "--case"),
        emulator_script=script,
        progress=not args.no_progress,
        resume=args.resume,
        baseline=baseline,
        strict=args.strict,
        max_spend_usd=args.max_spend_usd,
        limits=args.limit,
        executor=args.executor,
        address=args.address,
        reuse=reuse,
        run_timeout=run_timeout_s(args.run_timeout),
    )


def run_suite(
    suite: str | Path,
    *,
    mode: Mode,
    providers: list[str] | None = None,
    repeats: int | None = None,
    workers: int = 2,
    cassettes: str | Path = "cassettes",
    out: Path | None = None,
    overwrite: bool = False,
    case_ids: list[str] | None = None,
    emulator_script: Path | None = None,
    progress: bool = True,
    resume: bool = False,
    baseline: Results | None = None,
    strict: bool = False,
    max_spend_usd: float | None = None,
    limits: list[str] | None = None,
    executor: str = "local",
    address: str | None = None,
    reuse: Path | None = None,
    plan: EvalPlan | None = None,
    run_timeout: float | None = None,
) -> tuple[Results, GateDecision, Comparison | None]:
    """Plan, run, write and summarise one eval; the demo reuses it. Returns (results, decision, comparison).

    ``plan``: the eval already planned (``plan_eval`` of ``suite`` with these ``mode``, ``providers``,
    ``cassettes`` and ``out`` as ``results``) by a caller that needed it first — the demo, which picks
    its providers from it; the suite is then neither loaded nor planned again. ``run_timeout``: the time
    limit of one run in seconds (None: its mode's default, ``runtime.eval_workers.RUN_TIMEOUT_S``)."""
    import time
    from datetime import UTC, datetime
    from pathlib import Path

    from portagent.evals.report import prepare_out_dir, write_eval
    from portagent.evals.report_terminal import console, print_summary
    from portagent.runtime.eval_run import plan_eval, run_eval

    started = datetime.now(UTC)
    if plan is None:
        from portagent.contracts.loaded_suite import load_suite

        loaded = load_suite(suite)
    else:
        loaded = plan.loaded
    if baseline is not None and (baseline.result.suite_id, baseline.result.dataset_version) != (
        loaded.suite.suite_id,
        loaded.suite.dataset_version,
    ):
        from portagent.contracts.errors import UsageError

        raise UsageError(
            f"--baseline {baseline.folder}: results of suite {baseline.result.suite_id!r} dataset "
            f"{baseline.result.dataset_version!r}, not of {loaded.suite.suite_id!r} dataset "
            f"{loaded.suite.dataset_version!r}; give a results folder of the same suite and dataset"
        )
    out_dir = (
        Path(out)
        if out is not None
        else Path("out") / f"{loaded.suite.suite_id}-{started.strftime('%Y%m%d-%H%M%S')}"
    )
    if baseline is not None:
        refuse_baseline_in_out(baseline.folder, out_dir)
    # this process owns the results folder from before anything in it is read, replaced or deleted until its
    # reports are written: a second eval, record or report aiming at it is refused (exit 2), nothing touched
    from portagent.core.files import own_folder

    with own_folder(out_dir, "--out"):
        # every check that can refuse the eval runs before the results folder is touched
        if plan is None:
            plan = plan_eval(
                loaded,
                mode=mode,
                providers=providers,
                repeats=repeats,
                cassettes=cassettes,
                results=out_dir,
                case_ids=case_ids,
                emulator_script=emulator_script,
            )
        if mode == "replay" and reuse is None:  # a cassette that cannot be read: refused before anything runs
            from portagent.runtime import eval_recordings

            eval_recordings.check_readable(plan.tasks, loaded, cassettes)
        if (
            not resume and reuse is None
        ):  # a results folder that may not be replaced: refused before this warm-up (an earlier one is ended)
            from portagent.evals.report import check_out_dir

            check_out_dir(out_dir, overwrite=overwrite)
        if executor == "local" and reuse is None:
            # the workers' fork server warms up (the run path, a lone provider's SDK: seconds) while the eval
            # gets ready, unless `eval --providers` or the demo started it earlier (and end it if refused):
            # a refused eval's server went on importing for nothing, and held the output for that
            from portagent.runtime.fork_server import warm_workers

            warm_workers([t.provider for t in plan.tasks])
        from portagent.runtime.limits import Scheduler, merged_limits

        scheduler = Scheduler(
            merged_limits(loaded.suite.limits, limits),
            max_spend_usd=max_spend_usd,
            live=mode == "live",
        )
        calibration = None
        if any(g.spec.gate for t in plan.tasks for g in t.graders):
            # a judge gates only when its agreement with human labels reaches the declared bar: measured
            # (judge runs like any other), and the eval refused below it, before the results folder is touched
            from portagent.runtime.eval_run import calibrate_eval
            from portagent.runtime.judging import refuse_ungated

            calibration = calibrate_eval(plan, workers=workers, gating_only=True)
            refuse_ungated(calibration, str(suite))
        carried: dict[int, Any] = {}
        if reuse is not None:  # read before the results folder is emptied: --reuse may name --out itself
            from portagent.runtime.reuse import carry_over, check_reusable

            check_reusable(reuse)
            carried = carry_over(plan.tasks, reuse, out_dir)
            if mode == "replay":  # a carried run reads no cassette: only the others are parsed
                from portagent.runtime import eval_recordings

                eval_recordings.check_readable(
                    [t for t in plan.tasks if t.index not in carried], loaded, cassettes
                )
            if executor == "local" and len(carried) < len(plan.tasks):
                from portagent.runtime.fork_server import warm_workers

                warm_workers([t.provider for t in plan.tasks if t.index not in carried])
        aside = None
        if resume:
            _check_resumable(out_dir)
        else:
            if (
                carried and reuse is not None
            ):  # --reuse of --out itself: the earlier results go aside, not away
                from portagent.evals.report import check_out_dir
                from portagent.runtime.reuse import set_aside

                check_out_dir(out_dir, overwrite=overwrite)
                aside = set_aside(out_dir, reuse)
            prepare_out_dir(out_dir, overwrite=overwrite)
        if carried:
            from portagent.runtime.reuse import restore

            try:
                for task in plan.tasks:
                    if task.index in carried:
                        restore(carried[task.index], task)
            except BaseException:
                if aside is not None:
                    console(stderr=True).print(
                        f"the earlier results are kept in {aside}", markup=False, soft_wrap=True
                    )
                raise
        if aside is not None:
            import shutil

            shutil.rmtree(aside, ignore_errors=True)
        n = len(plan.tasks)
        err = console(stderr=True)
        shown = min(workers, n)  # the pool starts no more workers than runs
        where = "Ray" if executor == "ray" else f"{shown} worker{'s' if shown != 1 else ''}"
        label = f"{loaded.suite.suite_id}: {n} runs ({mode}, {where})"
        t0 = time.perf_counter()
        warming = _ReportWarmUp()
        go = functools.partial(
            run_eval,
            plan,
            workers=workers,
            resume=resume,
            calibration=calibration,
            scheduler=scheduler,
            executor=executor,
            address=address,
            carried=carried.keys(),
            run_timeout=run_timeout,
        )
        if progress and err.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failing]} failing"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            ) as bar:
                job = bar.add_task(label, total=n, failing=0)
                failing = [0]

                def tick(o: Any) -> None:
                    warming.start()
                    failing[0] += not o.score.passed
                    bar.update(job, advance=1, failing=failing[0])

                run = go(on_result=tick)
        else:
            err.print(label + " …")
            run = go(on_result=lambda _o: warming.start())
        scheduler.close()
        from portagent.runtime.eval_recordings import refuse_broken_recordings

        refuse_broken_recordings(run.pool.outcomes, plan, loaded, cassettes, out_dir)
        if scheduler.active:
            run.scheduling = scheduler.report()
            if scheduler.stopped:
                skipped = sum(o.score.issue == "not_run" for o in run.pool.outcomes)
                err.print(f"{skipped} run(s) {scheduler.stopped}", markup=False, highlight=False)
        if run.pool.reused:
            err.print(f"resumed: {run.pool.reused} finished run(s) kept, {n - run.pool.reused} run")
        if reuse is not None:
            err.print(
                f"reused: {run.pool.carried} run(s) with unchanged inputs kept from {reuse}, "
                f"{n - run.pool.carried} made",
                markup=False,
                highlight=False,
            )
        duration = time.perf_counter() - t0
        warming.join()
        results, decision, comparison = write_eval(
            run,
            out_dir,
            started_at=started.isoformat(timespec="seconds"),
            duration_s=duration,
            baseline=baseline,
            strict=strict,
        )
        out_console = console()
        print_summary(results, decision, comparison, out=out_console)
        if results.result.judging is not None:
            from portagent.evals.judging import judging_lines

            for line in judging_lines(results.result.judging):
                out_console.print(line, markup=False, highlight=False)
        out_console.print(
            f"{n} runs in {duration:.1f} s ({n / duration:.1f} runs/s, {shown} "
            f"worker{'s' if shown != 1 else ''}) · results: {out_dir}/ (report.html, report.md, junit.xml, "
            "ci_gate.json)",
            markup=False,
            highlight=False,
        )
        return results, decision, comparison


class _ReportWarmUp:
    """``evals.report.warm_reports`` in a thread started at the first result: the parent only waits on its
    workers from then on, so the reports' one-time set-up (imports, the secret scanner's patterns: about
    half a second) is done by the last run instead of after it. Not earlier: it would slow the imports and
    the fork server start that the first workers wait for. A failure there is met again, and reported,
    where the reports are written."""

    def __init__(self) -> None:
        self._thread: Any = None

    def start(self) -> None:
        if self._thread is None:
            import threading

            self._thread = threading.Thread(target=self._work, name="portagent-warm-reports", daemon=True)
            self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    @staticmethod
    def _work() -> None:
        import contextlib

        from portagent.evals.report import warm_reports

        with contextlib.suppress(Exception):
            warm_reports()


def _check_resumable(out: Path) -> None:
    """``--resume`` continues in a results folder (or an empty or absent one), never in an arbitrary one."""
    from portagent.contracts.errors import UsageError

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    ours = any((out / name).exists() for name in ("runs", "eval.json", "report.json"))
    if out.is_dir() and any(out.iterdir()) and not ours:
        raise UsageError(
            f"--out {out}: not a portagent results folder (no runs/, eval.json or report.json); "
            "--resume continues an eval only in its own results folder"
        )
    out.mkdir(parents=True, exist_ok=True)


def calibrate_suite(
    suite: str | Path,
    *,
    mode: Mode,
    cassettes: str | Path = "cassettes",
    out: Path | None = None,
    overwrite: bool = False,
    workers: int = 2,
    emulator_script: Path | None = None,
) -> int:
    """``eval --calibrate``: each calibrated grader's agreement with its human labels; writes
    ``calibration.json`` into ``out`` when given. 0 when every grader that asks to gate may, else 1."""
    import contextlib

    from portagent.contracts.loaded_suite import load_suite
    from portagent.core.files import own_folder
    from portagent.evals.judging import calibration_lines
    from portagent.evals.report import prepare_out_dir, write_text
    from portagent.evals.report_terminal import console
    from portagent.runtime.eval_run import calibrate_eval, plan_eval

    loaded = load_suite(suite)
    plan = plan_eval(loaded, mode=mode, cassettes=cassettes, emulator_script=emulator_script, calibrate=True)
    with own_folder(out, "--out") if out is not None else contextlib.nullcontext():
        if out is not None:
            prepare_out_dir(out, overwrite=overwrite)
        results = calibrate_eval(plan, workers=workers)
        o = console()
        for line in calibration_lines(results):
            o.print(line, markup=False, highlight=False)
        if out is not None:
            import json

            payload = {
                "kind": "calibration",
                "suite_id": loaded.suite.suite_id,
                "mode": mode,
                "graders": [c.model_dump(mode="json") for c in results],
            }
            write_text(out / "calibration.json", json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
            o.print(f"calibration: {out}/calibration.json", markup=False, highlight=False)
    return 0 if all(c.eligible or not c.gate for c in results) else 1
