"""Judge runs: the graders of a suite (``expect.graders``) judged by portagent agents, run like any run.

    agent runs ──► answers ──► judge jobs ──► run_tasks (the same pool) ──► verdicts ──► RunScore.graders
                               verdict: one per graded run and grader (judge, rubric)
                               pair:    two per pairwise comparison (A first, then B first)
                               calibration: one per human-labelled answer

A judge run is a ``RunTask`` whose agent is the grader's judge spec, whose provider is the grader's, and
whose input is the rendered prompt (``evals.graders``). So it is recorded by ``portagent record`` into
the cassette layout (``<root>/<suite>/<judge>@<version>/<judge case id>/<provider>/r0``), replayed
offline by ``eval --replay`` like any run (the prompt holds the replayed answer, the same bytes as when
it was recorded), traced into the results folder under ``judges/`` and costed apart from the agent.

Judge case ids name what was judged: ``<grader>.<case>.<version>.<provider>.r<k>`` (verdict),
``<grader>.<case>.<provider or version>.r<k>.ab|ba`` (pair), ``<grader>.cal<i>.<prompt hash>``
(calibration: the hash, so an edited example or instruction is a missing recording, never drift).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from portagent.contracts.errors import RecordingError, UsageError
from portagent.contracts.loaded_suite import LoadedSuite
from portagent.contracts.suite import Case, Thresholds
from portagent.evals.calibration import CalibrationItem, CalibrationResult, calibrate
from portagent.evals.graders import (
    GraderResult,
    PairJudgment,
    PairwiseResult,
    answer_text,
    check_judge_schema,
    judge_prompt,
    pair_winner,
    pairwise_prompt,
    pairwise_result,
    read_verdict,
    verdict_passes,
)
from portagent.evals.judging import Judging, summarise, with_graders
from portagent.runtime.eval_plan import (
    Mode,
    ResolvedGrader,
    RunOutcome,
    RunTask,
    check_live_keys,
    check_portable,
    check_providers_installed,
    resolve_graders,
)

JobKind = Literal["verdict", "pair", "calibration"]


@dataclass(frozen=True)
class JudgeSetup:
    """Where an eval's judge runs come from and go."""

    suite_id: str
    mode: Mode
    cassettes: Path
    """Absolute cassette root (replay reads judge cassettes there; ``record`` writes them there)."""
    results: Path | None = None
    """Results folder: judge traces go under ``judges/`` (None: memory only)."""
    emulator_script: Path | None = None
    """``--emulator SCRIPT``: overrides every judge's script, like the agent's."""


@dataclass(frozen=True)
class JudgeJob:
    """One judge run and what it judges."""

    task: RunTask
    kind: JobKind
    grader: ResolvedGrader
    subject: int = -1
    """verdict: the agent task's index."""
    subjects: tuple[int, ...] = ()
    """The agent tasks whose answers it judges (one for a verdict, two for a pair)."""
    pair: tuple[str, str, str, int] = ("", "", "", 0)
    """pair: (case, A label, B label, repeat)."""
    order: str = ""
    """pair: ``ab`` (A shown first) or ``ba``."""
    example: int = -1
    """calibration: the example's index."""


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def judge_case_id(*parts: str) -> str:
    """A judge run's case id from its parts (letters, digits, ``_.-``; at most 128 characters)."""
    text = _UNSAFE.sub("_", ".".join(parts)).lstrip("._-") or "judge"
    if len(text) > 128:
        text = text[:111] + "." + hashlib.sha256(text.encode()).hexdigest()[:16]
    return text


def _task(setup: JudgeSetup, index: int, rg: ResolvedGrader, jid: str, prompt: str) -> RunTask:
    from portagent.recording.layout import run_folder

    judge, provider = rg.judge, rg.spec.provider
    return RunTask(
        index=index,
        suite_id=setup.suite_id,
        agent=judge,
        case=Case(case_id=jid, input=prompt, why_it_exists=f"judge run of grader {rg.spec.name}"),
        thresholds=Thresholds(),
        provider=provider,
        repeat=0,
        mode=setup.mode,
        approver="auto-deny",
        cassette=run_folder(setup.cassettes, setup.suite_id, judge.name, judge.version, jid, provider, 0),
        emulator_script=setup.emulator_script or rg.emulator_script,
        out_dir=setup.results / "judges" / judge.label / jid / provider if setup.results else None,
    )


def _pairs(tasks: Sequence[RunTask], rg: ResolvedGrader) -> list[tuple[str, str, str, RunTask, RunTask]]:
    """(case, A, B, A's task, B's task) of a pairwise grader: baseline vs candidate on each provider
    and repeat, or the first two providers on each agent version and repeat."""
    mine = [t for t in tasks if rg in t.graders]
    out = []
    if rg.spec.compare == "versions":
        roles = {t.agent.role: t.agent for t in mine}
        if "baseline" not in roles or "candidate" not in roles:
            return []
        a_ref, b_ref = roles["baseline"], roles["candidate"]
        for t in mine:
            if t.agent == a_ref:
                other = next(
                    (
                        u
                        for u in mine
                        if u.agent == b_ref
                        and (u.case.case_id, u.provider, u.repeat) == (t.case.case_id, t.provider, t.repeat)
                    ),
                    None,
                )
                if other is not None:
                    out.append(
                        (
                            t.case.case_id,
                            f"{a_ref.label} ({t.provider})",
                            f"{b_ref.label} ({t.provider})",
                            t,
                            other,
                        )
                    )
        return out
    providers = list(dict.fromkeys(t.provider for t in mine))[:2]
    if len(providers) < 2:
        return []
    for t in mine:
        if t.provider == providers[0]:
            other = next(
                (
                    u
                    for u in mine
                    if u.provider == providers[1]
                    and (u.case.case_id, u.agent, u.repeat) == (t.case.case_id, t.agent, t.repeat)
                ),
                None,
            )
            if other is not None:
                out.append(
                    (
                        t.case.case_id,
                        f"{providers[0]} ({t.agent.label})",
                        f"{providers[1]} ({t.agent.label})",
                        t,
                        other,
                    )
                )
    return out


def calibration_graders(tasks: Sequence[RunTask], loaded: LoadedSuite | None = None) -> list[ResolvedGrader]:
    """Distinct graders with human labels: those of the planned cases (given the suite, those of every
    case, planned or not). A suite grader that no case names is not among them: nothing records its
    judge runs (``record_jobs`` records the graders of the cases' answers)."""
    found: dict[str, ResolvedGrader] = {}
    pools: list[Sequence[ResolvedGrader]] = [t.graders for t in tasks]
    if loaded is not None:
        pools += list(resolve_graders(loaded).values())
    for graders in pools:
        for rg in graders:
            if rg.spec.calibration:
                found.setdefault(rg.spec.canonical_hash(), rg)
    return list(found.values())


def plan_jobs(
    tasks: Sequence[RunTask],
    answers: dict[int, Any],
    setup: JudgeSetup,
    *,
    verdicts: bool = True,
    calibration: Sequence[ResolvedGrader] = (),
    start: int = 0,
) -> list[JudgeJob]:
    """The judge runs of ``tasks`` given their answers (task index → final output; absent or None: the
    run gave none, so it is not judged), and of the calibration of ``calibration``'s graders."""
    jobs: list[JudgeJob] = []

    def add(kind: JobKind, rg: ResolvedGrader, jid: str, prompt: str, **kw: Any) -> None:
        jobs.append(JudgeJob(_task(setup, start + len(jobs), rg, jid, prompt), kind, rg, **kw))

    if verdicts:
        for t in tasks:
            answer = answers.get(t.index)
            for rg in t.graders:
                if rg.spec.type == "pairwise" or answer is None:
                    continue
                jid = judge_case_id(rg.spec.name, t.case.case_id, t.agent.version, t.provider, f"r{t.repeat}")
                add(
                    "verdict",
                    rg,
                    jid,
                    judge_prompt(rg.spec, t.case.input, answer_text(answer)),
                    subject=t.index,
                    subjects=(t.index,),
                )
        seen: set[str] = set()
        for rg in (g for t in tasks for g in t.graders if g.spec.type == "pairwise"):
            key = rg.spec.canonical_hash() + rg.judge.label
            if key in seen:
                continue
            seen.add(key)
            for case_id, a, b, ta, tb in _pairs(tasks, rg):
                ans_a, ans_b = answers.get(ta.index), answers.get(tb.index)
                if ans_a is None or ans_b is None:
                    continue
                side = ta.provider if rg.spec.compare == "versions" else ta.agent.version
                text_a, text_b = answer_text(ans_a), answer_text(ans_b)
                for order, first, second in (("ab", text_a, text_b), ("ba", text_b, text_a)):
                    jid = judge_case_id(rg.spec.name, case_id, side, f"r{ta.repeat}", order)
                    prompt = pairwise_prompt(rg.spec, ta.case.input, first, second)
                    add(
                        "pair",
                        rg,
                        jid,
                        prompt,
                        pair=(case_id, a, b, ta.repeat),
                        order=order,
                        subjects=(ta.index, tb.index),
                    )
    for rg in calibration:
        for i, ex in enumerate(rg.spec.calibration):
            prompt = judge_prompt(rg.spec, ex.input, ex.answer)
            digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
            add("calibration", rg, judge_case_id(rg.spec.name, f"cal{i}", digest), prompt, example=i)
    return jobs


# -- checks before anything runs ----------------------------------------------------------------------


def check_judges(
    tasks: Sequence[RunTask],
    mode: Mode,
    extra: Sequence[ResolvedGrader] = (),
    script_override: Path | None = None,
) -> None:
    """Refuse, before anything runs, a judge that cannot judge: no verdict schema, its provider not
    installed, no key for ``--live``, or a spec its provider cannot run."""
    from portagent.contracts.bundle import load_agent

    graders = {rg.spec.canonical_hash() + rg.judge.label: rg for t in tasks for rg in t.graders}
    graders |= {rg.spec.canonical_hash() + rg.judge.label: rg for rg in extra}
    for rg in graders.values():
        problem = check_judge_schema(load_agent(rg.judge.path).spec.output_schema)
        if problem:
            raise UsageError(f"grader {rg.spec.name}: judge {rg.judge.path.name} cannot judge: {problem}")
        check_providers_installed([rg.spec.provider])
        if mode == "live":
            check_live_keys([rg.spec.provider], [rg.judge.path])
        check_portable([rg.judge], [rg.spec.provider])
        if mode == "emulator" and rg.emulator_script is None and script_override is None:
            raise UsageError(
                f"grader {rg.spec.name}: --emulator needs an emulator_script scripting the judge "
                "(the grader's or the suite's), or --emulator SCRIPT"
            )


def recorded_answers(tasks: Sequence[RunTask]) -> dict[int, Any]:
    """Each task's recorded final output (its cassette's ``run.json``); absent when not recorded."""
    out: dict[int, Any] = {}
    for t in tasks:
        if t.cassette is None:
            continue
        try:
            record = json.loads((t.cassette / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        result = record.get("result") or {}
        if result.get("final_output") is not None:
            out[t.index] = result["final_output"]
    return out


def check_judge_cassettes(
    jobs: Sequence[JudgeJob], suite_path: Path, emulator: str | None, root: Path
) -> None:
    """Replay needs every judge recording; name what is missing and the command that records it."""
    from portagent.recording.layout import is_recorded

    missing = [
        j for j in jobs if j.task.cassette is None or not is_recorded(j.task.cassette, j.task.provider)
    ]
    if not missing:
        return
    shown = "\n".join(f"  {j.task.cassette}" for j in missing[:5])
    more = f"\n  … and {len(missing) - 5} more" if len(missing) > 5 else ""
    source = f"--emulator {emulator}" if emulator else "--live"
    raise RecordingError(
        f"{len(missing)} judge recording(s) missing for --replay:\n{shown}{more}\n"
        f"judge runs are recorded with the suite's runs; record them with:\n"
        f"  portagent record {suite_path} {source} --out {root} --missing"
    )


# -- running and folding ------------------------------------------------------------------------------


IN_PROCESS_REPLAYS = 32
"""Up to this many replayed judge runs are made in the eval's own process: a replay takes tens of
milliseconds, a worker's start-up (process + SDK import) seconds."""


def run_jobs(
    jobs: Sequence[JudgeJob],
    *,
    workers: int,
    in_process: bool = False,
    scheduler: Any = None,
    executor: str = "local",
    address: str | None = None,
) -> dict[int, RunOutcome]:
    """Make every judge run (the eval's pool, or this process for a few replays); outcome by task index."""
    from portagent.runtime.eval_pool import run_tasks

    if not jobs:
        return {}
    few_replays = all(j.task.mode == "replay" for j in jobs) and len(jobs) <= IN_PROCESS_REPLAYS
    report = run_tasks(
        [j.task for j in jobs],
        workers=workers,
        in_process=in_process or few_replays,
        scheduler=scheduler,
        executor=executor,
        address=address,
    )
    return {o.index: o for o in report.outcomes}


def _verdict(job: JudgeJob, outcome: RunOutcome | None, gate: bool) -> GraderResult:
    spec = job.grader.spec
    cost = outcome.score.cost_usd if outcome is not None else None
    run_id = outcome.score.provenance.run_id if outcome is not None else ""
    base: dict[str, Any] = {
        "grader": spec.name,
        "type": spec.type,
        "gate": gate,
        "cost_usd": cost,
        "judge_run_id": run_id,
    }
    if outcome is None or outcome.error:
        return GraderResult(**base, error=f"the judge run failed: {outcome.error if outcome else 'not run'}")
    read = read_verdict(spec, outcome.output, _judge_schema(job))
    if isinstance(read, str):
        return GraderResult(**base, error=read)
    label, score, explanation = read
    return GraderResult(
        **base, label=label, score=score, explanation=explanation, passed=verdict_passes(spec, label, score)
    )


def _label(job: JudgeJob, outcome: RunOutcome | None) -> tuple[str | None, str]:
    if outcome is None or outcome.error:
        return None, f"the judge run failed: {outcome.error if outcome else 'not run'}"
    read = read_verdict(job.grader.spec, outcome.output, _judge_schema(job))
    if isinstance(read, str):
        return None, read
    return read[0], read[2]


def _judge_schema(job: JudgeJob) -> dict[str, Any] | None:
    """The judge's ``output_schema``, which its verdict must keep (``check_judges`` refused a judge
    without one before anything ran). Read from the spec the judge run was made with: the run's own
    ``output_valid`` is in its ``run.json``, which an eval without ``--out`` never writes."""
    from portagent.contracts.bundle import load_agent

    return load_agent(job.grader.judge.path).spec.output_schema


def calibration_results(jobs: Sequence[JudgeJob], outcomes: dict[int, RunOutcome]) -> list[CalibrationResult]:
    """Agreement of each calibrated grader's judge with its human labels."""
    by_grader: dict[str, list[JudgeJob]] = {}
    for j in jobs:
        if j.kind == "calibration":
            by_grader.setdefault(j.grader.spec.canonical_hash(), []).append(j)
    out = []
    for group in by_grader.values():
        rg = group[0].grader
        items = []
        made = _made([outcomes.get(j.task.index) for j in group])
        for j in group:
            o = outcomes.get(j.task.index)
            label, why = _label(j, o)
            items.append(
                CalibrationItem(
                    index=j.example,
                    human=rg.spec.calibration[j.example].label,
                    judge=label,
                    explanation=why if label is not None else "",
                    error=None if label is not None else why,
                )
            )
        costs = [o.score.cost_usd for o in made]
        usage = (
            len(made),
            sum(c is None for c in costs),
            sum(o.score.usage.input_tokens for o in made),
            sum(o.score.usage.output_tokens for o in made),
        )
        cost = sum(c for c in costs if c is not None)
        out.append(calibrate(rg.spec, f"{rg.judge.label} on {rg.spec.provider}", items, cost, usage))
    return out


def _made(outcomes: Sequence[RunOutcome | None]) -> list[RunOutcome]:
    """The judge runs that were made: not those missing, nor those the eval never started (``not_run``,
    e.g. stopped by ``--max-spend-usd``), which cost nothing and used no tokens."""
    return [o for o in outcomes if o is not None and o.score.issue != "not_run"]


def refuse_ungated(results: Sequence[CalibrationResult], suite: str) -> None:
    """A grader that asks to gate but is not eligible refuses the eval (before anything is written)."""
    bad = [c for c in results if c.gate and not c.eligible]
    if bad:
        lines = "; ".join(f"grader {c.grader} may not gate: {c.reason}" for c in bad)
        raise UsageError(
            f"{lines}. A judge is not ground truth until it agrees with human labels: see "
            f"`portagent eval {suite} --calibrate` for its confusion matrix, improve the judge or add "
            "labelled answers, or set gate: false to report its verdicts without gating"
        )


def fold(
    tasks: Sequence[RunTask],
    scores: dict[int, Any],
    jobs: Sequence[JudgeJob],
    outcomes: dict[int, RunOutcome],
    calibration: Sequence[CalibrationResult],
) -> tuple[dict[int, Any], Judging]:
    """Each agent run's score with its verdicts (gating ones in its gate), and the judging summary."""
    eligible = {c.grader for c in calibration if c.eligible}
    verdicts: dict[int, list[GraderResult]] = {}
    answered = {j.subject for j in jobs if j.kind == "verdict"}
    for j in jobs:
        if j.kind == "verdict":
            gate = j.grader.spec.gate and j.grader.spec.name in eligible
            verdicts.setdefault(j.subject, []).append(_verdict(j, outcomes.get(j.task.index), gate))
    for t in tasks:  # a run with no answer has no verdict: a gating grader fails it, says why
        if t.index in answered:
            continue
        for rg in t.graders:
            if rg.spec.type != "pairwise":
                gate = rg.spec.gate and rg.spec.name in eligible
                verdicts.setdefault(t.index, []).append(
                    GraderResult(
                        grader=rg.spec.name, type=rg.spec.type, gate=gate, error="the run gave no answer"
                    )
                )
    new_scores = {i: with_graders(s, verdicts.get(i, [])) for i, s in scores.items()}
    pairwise, pair_costs = _pairwise(jobs, outcomes)
    judged = _made([outcomes.get(j.task.index) for j in jobs])
    costs = [o.score.cost_usd for o in judged]
    totals = (  # calibration runs count as judging too
        len(judged) + sum(c.runs for c in calibration),
        sum(c for c in costs if c is not None) + sum(c.cost_usd for c in calibration),
        sum(c is None for c in costs) + sum(c.cost_unknown for c in calibration),
        sum(o.score.usage.input_tokens for o in judged) + sum(c.input_tokens for c in calibration),
        sum(o.score.usage.output_tokens for o in judged) + sum(c.output_tokens for c in calibration),
    )
    graders: dict[str, tuple[str, Any, bool]] = {}
    for t in tasks:
        for rg in t.graders:
            graders.setdefault(
                rg.spec.name,
                (
                    f"{rg.judge.label} on {rg.spec.provider}",
                    rg.spec.type,
                    rg.spec.gate and rg.spec.name in eligible,
                ),
            )
    return new_scores, summarise(
        list(new_scores.values()), pairwise, calibration, graders, pair_costs, totals
    )


def _pairwise(
    jobs: Sequence[JudgeJob], outcomes: dict[int, RunOutcome]
) -> tuple[list[PairwiseResult], dict[str, float]]:
    groups: dict[tuple[str, str, str, str], dict[int, dict[str, tuple[str | None, str]]]] = {}
    costs: dict[str, float] = {}
    for j in jobs:
        if j.kind != "pair":
            continue
        case_id, a, b, repeat = j.pair
        o = outcomes.get(j.task.index)
        costs[j.grader.spec.name] = costs.get(j.grader.spec.name, 0.0) + (
            (o.score.cost_usd or 0.0) if o else 0.0
        )
        groups.setdefault((j.grader.spec.name, case_id, a, b), {}).setdefault(repeat, {})[j.order] = _label(
            j, o
        )
    out = []
    for (name, case_id, a, b), reps in groups.items():
        judgments = []
        for repeat, orders in sorted(reps.items()):
            ab, why_ab = orders.get("ab", (None, "not run"))
            ba, why_ba = orders.get("ba", (None, "not run"))
            judgments.append(
                PairJudgment(
                    repeat=repeat, ab=ab, ba=ba, winner=pair_winner(ab, ba), explanations=[why_ab, why_ba]
                )
            )
        out.append(pairwise_result(name, case_id, a, b, judgments))
    return out, costs


def record_jobs(
    tasks: Sequence[RunTask], recorded_now: set[int], source: Mode, only: str, start: int
) -> list[RunTask]:
    """The judge runs ``portagent record`` records after the agent runs of ``tasks``: judging each
    recorded answer (read back from its cassette), each pair, and each calibrated grader's labelled
    answers. ``only`` other than ``all``: just the judge folders not recorded yet, and those judging an
    answer recorded now (``recorded_now``: agent task indexes)."""
    from portagent.recording.layout import is_recorded

    graded = [t for t in tasks if t.graders and t.cassette is not None]
    if not graded:
        return []
    first = graded[0].cassette
    assert first is not None
    setup = JudgeSetup(graded[0].suite_id, source, first.parents[4])
    jobs = plan_jobs(
        graded, recorded_answers(graded), setup, calibration=calibration_graders(graded), start=start
    )
    keep = []
    for j in jobs:
        assert j.task.cassette is not None
        if (
            only == "all"
            or not is_recorded(j.task.cassette, j.task.provider)
            or any(i in recorded_now for i in j.subjects)
        ):
            keep.append(j.task)
    return keep
