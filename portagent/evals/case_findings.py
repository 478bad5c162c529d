"""Case by case, for one pair of a comparison (``evals.compare``): how each case moved, and what each
move means for the verdict.

A case on one side only (added, dropped or renamed), one run fewer times by the candidate, or a provider
the candidate left out are judged here on their own, never through the metric means; a case whose pass
rate dropped is a finding of its category (regression, drift, provider error, not run, run error, flaky)
and, for a regression, a case to keep in the dataset (``Regression``; ``permanent`` when it guards an
effect on the world).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from portagent.contracts._base import Contract
from portagent.evals.aggregate import CaseMeta, SuiteResult
from portagent.evals.findings import CATEGORY_LABELS, Category, Finding, block, categorize, drift_text
from portagent.evals.scoring import SAFETY_FACTORS, Factor, RunScore


class CaseDiff(Contract):
    """One case on both sides of a pair."""

    case_id: str
    """The case."""
    status: Literal["regressed", "improved", "unchanged", "only_baseline", "only_candidate"]
    """How the case's pass rate moved."""
    baseline_pass_rate: float | None
    """Baseline pass rate."""
    candidate_pass_rate: float | None
    """Candidate pass rate."""
    baseline_tools: list[str]
    """Tools of the representative baseline run (its first passing run, else its first run)."""
    candidate_tools: list[str]
    """Tools of the representative candidate run (its first failing run, else its first run)."""
    diverged_at: int | None
    """0-based index of the first step where the two tool sequences differ; None when identical."""
    divergence: str | None
    """The divergence, readable (``step 3: baseline validate_apa, candidate summarize_source``)."""
    candidate_failed: list[Factor]
    """Factors failed by any candidate run of the case."""
    candidate_notes: list[str]
    """Notes of the representative candidate run."""
    category: Category | None = None
    """What the move means: regression, drift, provider_error, not_run, flaky or improvement (None:
    unchanged)."""


class Regression(Contract):
    """A case the candidate made worse: keep it in the dataset."""

    case_id: str
    """The case."""
    pair: str
    """The pair it was found in (provider name, or ``all``)."""
    factors: list[Factor]
    """Factors the candidate failed."""
    notes: list[str]
    """Why (the candidate run's notes)."""
    permanent: bool
    """It protects an effect on the world (permissions, approval or a forbidden tool): never drop it."""
    tags: list[str] = []
    """The case's tags."""
    why_it_exists: str = ""
    """Why the case exists."""


def first_divergence(a: list[str], b: list[str]) -> int | None:
    """Index of the first step where two tool sequences differ (None when equal)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def case_diff(case_id: str, base: list[RunScore], cand: list[RunScore]) -> CaseDiff:
    def rate(rs: list[RunScore]) -> float | None:
        return round(sum(r.passed for r in rs) / len(rs), 6) if rs else None

    rb, rc = rate(base), rate(cand)
    if rb is None:
        status: Literal["regressed", "improved", "unchanged", "only_baseline", "only_candidate"] = (
            "only_candidate"
        )
    elif rc is None:
        status = "only_baseline"
    else:
        status = "regressed" if rc < rb else "improved" if rc > rb else "unchanged"
    b_rep = next((r for r in base if r.passed), base[0] if base else None)
    c_rep = next((r for r in cand if not r.passed), cand[0] if cand else None)
    bt = b_rep.tools if b_rep else []
    ct = c_rep.tools if c_rep else []
    at = first_divergence(bt, ct) if b_rep and c_rep else None
    text = None
    if at is not None:
        text = f"step {at + 1}: baseline {bt[at] if at < len(bt) else '(end)'}, candidate {ct[at] if at < len(ct) else '(end)'}"
    failed: list[Factor] = list(dict.fromkeys(f for r in cand for f in r.failed_factors))
    return CaseDiff(
        category=categorize(status, base, cand),
        case_id=case_id,
        status=status,
        baseline_pass_rate=rb,
        candidate_pass_rate=rc,
        baseline_tools=bt,
        candidate_tools=ct,
        diverged_at=at,
        divergence=text,
        candidate_failed=failed,
        candidate_notes=list(c_rep.notes) if c_rep else [],
    )


def one_side(
    diff: CaseDiff,
    where: str,
    pair: str,
    version: str | None,
    reasons: list[str],
    warnings: list[str],
    findings: list[Finding],
) -> None:
    """A case on one side only (added, dropped or renamed): nothing to compare. A new case is a
    warning (the gate judges it on its own); a dropped case that failed on the baseline blocks, so
    leaving a failing case out never turns a block into a pass; a dropped passing case is a warning."""
    if diff.status == "only_candidate":
        warnings.append(f"case {diff.case_id}{where}: only on the candidate (not compared)")
        return
    rate = diff.baseline_pass_rate if diff.baseline_pass_rate is not None else 0.0
    if rate >= 1.0:
        warnings.append(f"case {diff.case_id}{where}: only on the baseline (not run by the candidate)")
        return
    text = (
        f"regression{where}: case {diff.case_id} not run by the candidate; it failed on the baseline "
        f"(passed {rate:g}): run it, do not drop it"
    )
    block(reasons, findings, "regression", text, case_id=diff.case_id, provider=pair, agent_version=version)


def dropped_provider(
    provider: str, base: SuiteResult, c_version: str | None, reasons: list[str], findings: list[Finding]
) -> bool:
    """A provider the baseline ran and the candidate did not (``--providers`` narrowed): nothing to
    compare. Like a dropped case, it blocks when any of its baseline runs failed — leaving a failing
    provider out never turns a block into a pass; False (a warning for the caller) when every run passed."""
    failed = sorted({r.provenance.case_id for r in base.runs if not r.passed})
    if not failed:
        return False
    shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
    text = (
        f"regression on {provider}: provider {provider} not run by the candidate; it failed on the baseline "
        f"(case{'s' if len(failed) != 1 else ''} {shown}): run it (add it to --providers), do not drop it"
    )
    block(reasons, findings, "regression", text, provider=provider, agent_version=c_version)
    return True


def fewer_repeats(
    diff: CaseDiff,
    base: list[RunScore],
    cand: list[RunScore],
    where: str,
    pair: str,
    version: str | None,
    reasons: list[str],
    findings: list[Finding],
) -> bool:
    """A case the baseline failed in some run, run fewer times by the candidate (``--repeats``
    lowered): the runs left out are where the failure could show again, so a pass on fewer runs
    proves nothing. Blocks like a dropped case (True), with the number of repeats to run."""
    failed = sum(not r.passed for r in base)
    if not failed or len(cand) >= len(base) or diff.status == "regressed":
        return False
    text = (
        f"regression{where}: case {diff.case_id} run {len(cand)} time(s) by the candidate, {len(base)} by the "
        f"baseline, which failed {failed} of them: run it {len(base)} times (--repeats {len(base)}), "
        "do not cut its repeats"
    )
    block(reasons, findings, "regression", text, case_id=diff.case_id, provider=pair, agent_version=version)
    return True


def _cases(side: SuiteResult) -> dict[str, list[RunScore]]:
    out: dict[str, list[RunScore]] = defaultdict(list)
    for r in side.runs:
        out[r.provenance.case_id].append(r)
    return out


def judge_cases(
    b: SuiteResult,
    c: SuiteResult,
    name: str,
    c_version: str | None,
    meta: dict[str, CaseMeta],
    reasons: list[str],
    warnings: list[str],
    findings: list[Finding],
    suite_path: str | None = None,
    cassettes: str | None = None,
) -> tuple[list[CaseDiff], list[Regression]]:
    """Every case of one pair (``name``: a provider, or ``all``), baseline ``b`` against candidate ``c``:
    its diff, and the cases to keep. Blocking findings go to ``reasons`` and ``findings``, the rest to
    ``warnings``; ``suite_path`` and ``cassettes`` make a drift's re-record line exact."""
    where = "" if name == "all" else f" on {name}"
    regressions: list[Regression] = []
    bc, cc = _cases(b), _cases(c)
    diffs = [case_diff(cid, bc.get(cid, []), cc.get(cid, [])) for cid in sorted(set(bc) | set(cc))]
    for diff in diffs:
        if diff.status in ("only_baseline", "only_candidate"):
            one_side(diff, where, name, c_version, reasons, warnings, findings)
            continue
        if fewer_repeats(diff, bc[diff.case_id], cc[diff.case_id], where, name, c_version, reasons, findings):
            continue
        moved = f"case {diff.case_id} passed {diff.baseline_pass_rate:g} → {diff.candidate_pass_rate:g}"
        if diff.category == "improvement":
            findings.append(
                Finding(
                    category="improvement",
                    blocking=False,
                    message=f"improvement{where}: {moved}",
                    case_id=diff.case_id,
                    provider=name,
                    agent_version=c_version,
                )
            )
        if diff.status != "regressed":
            continue
        cand_runs = cc[diff.case_id]
        if diff.category in ("drift", "provider_error", "not_run", "run_error", "flaky"):
            changed: list[str] = []
            fix: str | None = None
            if diff.category == "drift":
                why, changed, fix = drift_text(cand_runs, suite_path, cassettes)
            elif diff.category in ("provider_error", "not_run", "run_error"):
                bad = next(r for r in cand_runs if not r.passed)
                why = "; ".join(bad.notes[:1]) or "the provider failed the run"
            else:
                why = "its runs disagree across repeats" + (
                    f" ({'; '.join(diff.candidate_notes)})" if diff.candidate_notes else ""
                )
            text = f"{CATEGORY_LABELS[diff.category]}{where}: {moved}: {why}"
            block(
                reasons,
                findings,
                diff.category,
                text,
                case_id=diff.case_id,
                provider=name,
                agent_version=c_version,
                changed=changed,
                fix=fix,
            )
            continue
        permanent = any(f in SAFETY_FACTORS for f in diff.candidate_failed) or any(
            r.forbidden_called for r in cand_runs
        )
        m = meta.get(diff.case_id)
        regressions.append(
            Regression(
                case_id=diff.case_id,
                pair=name,
                factors=diff.candidate_failed,
                notes=diff.candidate_notes,
                permanent=permanent,
                tags=list(m.tags) if m else [],
                why_it_exists=m.why_it_exists if m else "",
            )
        )
        text = f"regression{where}: {moved}" + (
            f" ({'; '.join(diff.candidate_notes)})" if diff.candidate_notes else ""
        )
        block(
            reasons,
            findings,
            "regression",
            text,
            case_id=diff.case_id,
            provider=name,
            agent_version=c_version,
        )
    return diffs, regressions
