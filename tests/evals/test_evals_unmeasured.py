"""A run where nothing was measured (a drifted replay, a provider failure, a run never started or never
made) is never a pass, even when its case's expectations are met by an empty or failed run
(``status: null`` or ``failed``, ``forbidden_tools``, ``approval: false``). A budget stop is the agent's
outcome: a case that expects it still passes."""

from __future__ import annotations

from typing import Any

import pytest
from _evals_trace import Trace

from portagent.contracts.suite import Case, Thresholds
from portagent.contracts.trace import ErrorEvent, RunCompleted
from portagent.evals import SuiteResult, gate, score_run
from portagent.evals.report_junit import render_junit


def _case(**expect: Any) -> Case:
    return Case.model_validate({"case_id": "c1", "input": "x", "why_it_exists": "t", "expect": expect})


LENIENT = [
    {"status": None},
    {"status": "failed"},
    {"status": None, "forbidden_tools": ["get_order"], "approval": False},
]


def _ended(stop_reason: str, *, drift: bool = False) -> list[Any]:
    t = Trace().started()
    t.model()
    if drift:
        t._add(ErrorEvent, error_type="CassetteDrift", message="cassette drift: the SDK sent POST /v1/x")
    t._add(RunCompleted, status="failed", stop_reason=stop_reason, cost_usd=0.0, duration_ms=9.0)
    return t.events


@pytest.mark.parametrize("expect", LENIENT)
@pytest.mark.parametrize(
    ("events", "issue", "category"),
    [
        (_ended("cassette_drift", drift=True), "cassette_drift", "drift"),
        (_ended("provider_error"), "provider_error", "provider_error"),
    ],
)
def test_a_run_with_an_issue_never_passes_and_the_gate_blocks(
    expect: dict[str, Any], events: list[Any], issue: str, category: str, tmp_path: Any
) -> None:
    case = _case(**expect)
    s = score_run(events, case)
    assert all(s.checks.values())  # every factor the case judges holds …
    assert s.issue == issue and not s.passed  # … but nothing was measured
    assert any(n.startswith("nothing measured") for n in s.notes), s.notes
    result = SuiteResult.from_runs("s", "d", [s], [case])
    d = gate(result)
    assert not d.passed and d.blocked_by == [category], d.reasons
    assert "failed :" not in d.reasons[0]  # no empty factor list
    from portagent.evals.report import Results

    junit = render_junit(Results(tmp_path, result, None), d)
    assert 'failures="1"' in junit and f'type="{category}"' in junit


def test_an_empty_trace_never_passes_even_under_a_lenient_trace_threshold() -> None:
    """A run that could not be made has no events; a case lowering ``thresholds.trace`` must not pass it."""
    case = _case(status=None)
    s = score_run([], case, Thresholds(trace=0.0))
    assert all(s.checks.values()) and not s.passed
    assert "nothing measured: the trace holds no run" in s.notes


def test_a_budget_stop_the_case_expects_still_passes() -> None:
    t = Trace().started()
    t.model()
    t._add(
        RunCompleted, status="budget_exhausted", stop_reason="budget_exhausted", cost_usd=0.1, duration_ms=9.0
    )
    s = score_run(t.events, _case(status="budget_exhausted"))
    assert s.passed and s.issue is None and s.notes == []


def _passing(case_id: str, version: str, *, ok: bool = True) -> Any:
    t = Trace(agent_version=version, case_id=case_id).started()
    t.model()
    t._add(RunCompleted, status="completed" if ok else "failed", stop_reason="final_output", duration_ms=9.0)
    return score_run(t.events, _case(status="completed").model_copy(update={"case_id": case_id}))


def _side(version: str, cases: dict[str, bool]) -> SuiteResult:
    runs = [_passing(c, version, ok=ok) for c, ok in cases.items()]
    metas = [_case().model_copy(update={"case_id": c}) for c in cases]
    return SuiteResult.from_runs("s", "d", runs, metas)


def test_a_case_on_one_side_only_is_reported_never_a_crash(tmp_path: Any) -> None:
    """Added, renamed or dropped cases: a new case and a dropped passing case are warnings; a dropped
    case that failed on the baseline blocks (leaving it out must not turn a block into a pass)."""
    from portagent.evals import compare
    from portagent.evals.report import Results
    from portagent.evals.report_html import render_html
    from portagent.evals.report_md import render_markdown

    base = _side("1", {"kept": True, "dropped-ok": True, "dropped-bad": False})
    cand = _side("2", {"kept": True, "added": True})
    c = compare(base, cand)
    assert not c.passed
    assert [f.case_id for f in c.findings if f.blocking] == ["dropped-bad"]
    assert c.reasons == [
        "regression on openai: case dropped-bad not run by the candidate; it failed on the baseline "
        "(passed 0): run it, do not drop it"
    ]
    assert any("case added on openai: only on the candidate" in w for w in c.warnings), c.warnings
    assert any("case dropped-ok on openai: only on the baseline" in w for w in c.warnings), c.warnings
    d = gate(cand, baseline=base)
    assert not d.passed and d.blocked_by == ["regression"]
    res = Results(tmp_path, cand, None)
    assert "dropped-bad" in render_markdown(res, d, c)
    render_html(res, d, c)
    # without the failing case the candidate may replace the baseline
    assert compare(_side("1", {"kept": True, "dropped-ok": True}), cand).passed


def test_runs_never_started_are_their_own_category_in_compare_and_gate() -> None:
    from portagent.evals import compare

    skipped = score_run([], _case(status="completed").model_copy(update={"case_id": "kept"}))
    skipped = skipped.model_copy(
        update={"provenance": _passing("kept", "2").provenance, "issue": "not_run", "passed": False}
    )
    cand = SuiteResult.from_runs("s", "d", [skipped], [_case().model_copy(update={"case_id": "kept"})])
    c = compare(_side("1", {"kept": True}), cand)
    assert [f.category for f in c.findings] == ["not_run"] and c.reasons[0].startswith("not run on openai")
    assert gate(cand).blocked_by == ["not_run"]


def test_the_gate_verdict_counts_every_blocking_finding_it_lists() -> None:
    """The gate adds its own findings (a case failing on its own) to the comparison's: the sentence
    counts them all, and never says "can replace" while the gate blocks."""
    from portagent.evals import compare

    base = _side("1", {"same-bad": False, "worse": True, "ok": True})
    cand = _side("2", {"same-bad": False, "worse": False, "ok": True})
    assert compare(base, cand).verdict == "2 cannot replace 1: 1 blocking finding"
    d = gate(cand, baseline=base)
    blocking = [f for f in d.findings if f.blocking]
    assert len(blocking) == len(d.reasons) == 3  # same-bad, worse (gate) + worse (comparison)
    assert d.verdict == "2 cannot replace 1: 3 blocking findings"
    unchanged = gate(_side("2", {"same-bad": False}), baseline=_side("1", {"same-bad": False}))
    assert not unchanged.passed and unchanged.verdict == "2 cannot replace 1: 1 blocking finding"
    assert gate(_side("2", {"ok": True}), baseline=_side("1", {"ok": True})).verdict == "2 can replace 1"


def test_args_expected_is_normalised_like_the_traced_arguments() -> None:
    """The gateway traces NFC text and numbers where the tool's schema wants them; an expectation written
    as the model sent it (NFD, ``"3"``) matches, with the tool's schema as the eval passes it."""
    nfd = "Re\u0301sume\u0301"
    t = Trace().started()
    t.model()
    t.call("search_faq", {"query": "R\u00e9sum\u00e9", "limit": 3})
    t._add(RunCompleted, status="completed", stop_reason="final_output", final_output="ok", duration_ms=9.0)
    schema = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}
    for expected in ({"query": nfd}, {"limit": "3"}, {"query": nfd, "limit": 3}):
        case = _case(args={"mode": "subset", "expected": {"search_faq": expected}})
        s = score_run(t.events, case, tool_schemas={"search_faq": schema})
        assert s.passed, (expected, s.notes)
    # without a schema text is still NFC, but a string stays a string
    assert score_run(
        t.events, _case(args={"mode": "subset", "expected": {"search_faq": {"query": nfd}}})
    ).passed
    loose = score_run(t.events, _case(args={"mode": "subset", "expected": {"search_faq": {"limit": "3"}}}))
    assert not loose.passed


def _runs(version: str, runs: dict[tuple[str, str, int], bool]) -> SuiteResult:
    """A side from (case, provider, repeat) → passed."""
    scores = []
    for (case_id, provider, repeat), ok in runs.items():
        t = Trace(agent_version=version, case_id=case_id, provider=provider, repeat=repeat).started()
        t.model()
        t._add(
            RunCompleted, status="completed" if ok else "failed", stop_reason="final_output", duration_ms=9.0
        )
        scores.append(score_run(t.events, _case(status="completed").model_copy(update={"case_id": case_id})))
    metas = [_case().model_copy(update={"case_id": c}) for c in sorted({k[0] for k in runs})]
    return SuiteResult.from_runs("s", "d", scores, metas)


def test_a_provider_or_repeats_the_candidate_left_out_block_when_they_failed_on_the_baseline() -> None:
    """QA: the baseline ran openai and adk and failed on openai; a candidate run with ``--providers adk``
    passed the gate ("adk can replace 1.0.0 on adk+openai", a warning only). Like a dropped case, a
    dropped provider — or fewer repeats of a case the baseline failed in some run — blocks; the verdict
    says which providers the candidate did not run."""
    from portagent.evals import compare

    base = _runs("1", {("c", "openai", 0): False, ("c", "adk", 0): True})
    adk_only = _runs("1", {("c", "adk", 0): True})
    c = compare(base, adk_only)
    assert not c.passed and c.reasons == [
        "regression on openai: provider openai not run by the candidate; it failed on the baseline "
        "(case c): run it (add it to --providers), do not drop it"
    ]
    assert c.verdict == "1 on adk (openai not run) cannot replace 1 on adk+openai: 1 blocking finding"
    d = gate(adk_only, baseline=base)
    assert not d.passed and d.blocked_by == ["regression"]
    assert d.verdict is not None and d.verdict.startswith("1 on adk (openai not run) cannot replace")
    # a dropped provider that passed on the baseline stays a warning, and the verdict says it was not run
    ok = compare(_runs("1", {("c", "openai", 0): True, ("c", "adk", 0): True}), adk_only)
    assert ok.passed and "provider openai is on one side only; not compared" in ok.warnings
    assert ok.verdict == "1 on adk (openai not run) can replace 1 on adk+openai"
    # a provider only the candidate runs is judged by the gate on its own: a warning, no label change
    more = compare(adk_only, base.model_copy())
    assert "provider openai is on one side only; not compared" in more.warnings
    assert more.candidate_label == "1 on adk+openai"

    # repeats: the baseline failed one of 3 repeats; a candidate running 1 repeat proves nothing
    flaky = _runs("1", {("c", "openai", r): r != 1 for r in range(3)})
    one = _runs("2", {("c", "openai", 0): True})
    c = compare(flaky, one)
    assert not c.passed and c.reasons == [
        "regression on openai: case c run 1 time(s) by the candidate, 3 by the baseline, which failed 1 of "
        "them: run it 3 times (--repeats 3), do not cut its repeats"
    ]
    assert not gate(one, baseline=flaky).passed
    assert compare(flaky, _runs("2", {("c", "openai", r): True for r in range(3)})).passed
    # fewer repeats of a case that always passed on the baseline: nothing left out failed
    assert compare(_runs("1", {("c", "openai", r): True for r in range(3)}), one).passed
