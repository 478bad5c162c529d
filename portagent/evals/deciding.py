"""The gate's decision on a results folder: how it is made (``decide``: gated on its own, against its own
baseline and candidate, or against another folder), which settings it was made with (``gate_settings``,
kept in eval.json) and making it again as it was made (``recorded_gate``) — what ``eval``, ``gate`` and
``report`` share. The folder itself is ``evals.report``."""

from __future__ import annotations

from pathlib import Path

from portagent.contracts.errors import UsageError
from portagent.evals.compare import Comparison
from portagent.evals.gate import GateDecision
from portagent.evals.report import GateSettings, Results, load_results, write_json


def decide(
    results: Results,
    baseline: Results | None = None,
    min_pass_rate: float | None = None,
    *,
    strict: bool = False,
) -> tuple[GateDecision, Comparison | None]:
    """The gate decision (``_decide``), blocked as well by a failed ``context_gate`` the result carries."""
    from portagent.evals.context_metrics import apply_context_gate

    decision, comparison = _decide(results, baseline, min_pass_rate, strict=strict)
    return apply_context_gate(decision, results.result.context), comparison


def _decide(
    results: Results,
    baseline: Results | None = None,
    min_pass_rate: float | None = None,
    *,
    strict: bool = False,
) -> tuple[GateDecision, Comparison | None]:
    """The gate decision of a results folder (and the comparison, when there is one).

    With ``baseline``: the result is gated against it. Without, a folder holding a baseline and a
    candidate (eval.json roles) gates the candidate against the baseline; otherwise the result is
    gated on its own. The tools the baseline's runs recorded (their ``run.json``) are compared with
    the candidate's: a tool changed without a version bump is a warning, blocking with ``strict``.
    """
    from portagent.evals.compare import Tolerances, compare
    from portagent.evals.gate import gate
    from portagent.evals.tool_versions import results_tools, run_warnings, unversioned_changes

    tol = Tolerances(min_pass_rate=min_pass_rate) if min_pass_rate is not None else Tolerances()
    meta = results.meta
    suite_path, cassettes = (meta.suite, meta.cassettes) if meta else (None, None)
    if baseline is not None:  # another folder's result
        base, cand, base_folder = baseline.result, results.result, baseline.folder
    else:  # this folder's own baseline and candidate, when it holds both
        base_v = meta.version_of("baseline") if meta else None
        cand_v = meta.version_of("candidate") if meta else None
        if not (base_v and cand_v):
            return gate(
                results.result, tolerances=tol, suite_path=suite_path, cassettes=cassettes, strict=strict
            ), None
        base = results.result.select(agent_version=base_v)
        cand = results.result.select(agent_version=cand_v)
        base_folder = results.folder
    changes = unversioned_changes(
        results_tools(base_folder, base.runs), results_tools(results.folder, cand.runs), since="the baseline"
    )
    return gate(
        cand,
        baseline=base,
        tolerances=tol,
        suite_path=suite_path,
        cassettes=cassettes,
        tool_changes=run_warnings(changes),
        strict=strict,
    ), compare(base, cand, tol, suite_path=suite_path, cassettes=cassettes)


def gate_settings(
    folder: Path, baseline: Results | None, min_pass_rate: float | None = None, *, strict: bool = False
) -> GateSettings:
    """The settings a decision on the results in ``folder`` is made with, the baseline pinned by path and
    by its report.json's hash."""
    import hashlib
    import os

    if baseline is None:
        return GateSettings(strict=strict, min_pass_rate=min_pass_rate)
    base = baseline.folder.resolve()
    return GateSettings(
        baseline=str(base),
        baseline_relative=os.path.relpath(base, folder.resolve()),
        baseline_report_sha256=hashlib.sha256((base / "report.json").read_bytes()).hexdigest(),
        strict=strict,
        min_pass_rate=min_pass_rate,
    )


def recorded_gate(results: Results) -> tuple[Results | None, float | None, bool]:
    """The baseline, ``min_pass_rate`` and ``strict`` the folder's decision was made with (eval.json).
    A recorded baseline that is gone, unreadable or changed is a usage error: judging without it (or
    against other results) would silently write another decision."""
    import hashlib

    if results.meta is None and (results.folder / "ci_gate.json").is_file():
        # the folder holds a decision but not how it was made: deciding again with the defaults would
        # rewrite it (another baseline, threshold, strictness) while "report" promises to re-render only
        raise UsageError(
            f"{results.folder}: has a gate decision (ci_gate.json) but no eval.json, which records how it was "
            "decided; 'portagent report' re-renders a decision and never makes another one. Restore eval.json, "
            f"or write the results again with 'portagent eval … --out {results.folder} --overwrite'"
        )
    settings = results.meta.gate if results.meta is not None else None
    if settings is None:
        return None, None, False
    if settings.baseline is None:
        return None, settings.min_pass_rate, settings.strict
    where = f"{results.folder}: its gate decision was made against the baseline {settings.baseline}"
    advice = (
        "restore that baseline folder, or decide again with 'portagent gate "
        f"{results.folder} --baseline RESULTS' (or '--no-baseline'; it records the new setting) and "
        "re-render after it"
    )
    places = [Path(settings.baseline)]
    if settings.baseline_relative is not None:
        places.append(results.folder / settings.baseline_relative)
    folder = next((p for p in places if (p / "report.json").is_file()), None)
    if folder is None:
        raise UsageError(f"{where}, which is no longer there (no report.json); {advice}")
    digest = hashlib.sha256((folder / "report.json").read_bytes()).hexdigest()
    if digest != settings.baseline_report_sha256:
        raise UsageError(f"{where}; {folder}/report.json has changed since; {advice}")
    try:
        baseline = load_results(folder)
    except UsageError as e:
        raise UsageError(f"{where}, which cannot be read now ({e}); {advice}") from None
    return baseline, settings.min_pass_rate, settings.strict


def record_gate(results: Results, settings: GateSettings) -> Results:
    """``results`` with ``settings`` written into its eval.json (a folder without one is left as it is:
    it has no record to keep them in)."""
    if results.meta is None or results.meta.gate == settings:
        return results
    meta = results.meta.model_copy(update={"gate": settings})
    write_json(results.folder / "eval.json", meta)
    return Results(results.folder, results.result, meta)


def judged_versions(results: Results) -> set[str] | None:
    """The agent versions the gate judges in ``results`` (None: all): in a folder holding a baseline and a
    candidate, gated on its own roles (not against an outside baseline), only the candidate."""
    meta = results.meta
    if meta is None or (meta.gate is not None and meta.gate.baseline is not None):
        return None
    base_v, cand_v = meta.version_of("baseline"), meta.version_of("candidate")
    return {cand_v} if base_v and cand_v else None
