"""Verdict categories (issue 15): a stale recording is a drift, never a regression; a real regression is
one; an improvement never blocks; every reason names its category; the re-record line is exact."""

from __future__ import annotations

import shlex
from typing import Any

from _evals_trace import Trace

from portagent.contracts.suite import Case
from portagent.contracts.trace import ErrorEvent, RunCompleted
from portagent.evals import SuiteResult, compare, gate, score_run
from portagent.evals.drift import CHANGED_PREFIX

CASE = Case.model_validate(
    {
        "case_id": "mail",
        "input": "x",
        "why_it_exists": "t",
        "expect": {"final_must_contain": ["sent"], "required_tools": ["send"], "must_not_execute": []},
    }
)


def _run(version: str, provider: str, repeat: int, *, outcome: str = "pass") -> Any:
    t = Trace(agent_version=version, provider=provider, case_id="mail", repeat=repeat).started()
    t.model()
    if outcome == "drift":
        t._add(
            ErrorEvent,
            error_type="CassetteDrift",
            message="cassette drift: the SDK sent POST /v1/x (no_match)",
        )
        t._add(RunCompleted, status="failed", stop_reason="cassette_drift", cost_usd=0.0, duration_ms=9.0)
        score = score_run(t.events, CASE)
        return score.model_copy(update={"warnings": [CHANGED_PREFIX + "the policy"]})
    t.call("send")
    final = "sent" if outcome == "pass" else "nothing"
    t._add(RunCompleted, status="completed", stop_reason="final_output", final_output=final, duration_ms=10.0)
    return score_run(t.events, CASE)


def _result(runs: list[Any]) -> SuiteResult:
    return SuiteResult.from_runs("s", "d", runs, [CASE])


def _side(version: str, outcome: str, providers: tuple[str, ...] = ("openai", "adk")) -> SuiteResult:
    return _result([_run(version, p, r, outcome=outcome) for p in providers for r in (0, 1)])


def test_a_stale_recording_is_drift_with_the_exact_rerecord_line_not_a_regression() -> None:
    base, cand = _side("1", "pass"), _side("2", "drift")
    d = gate(cand, baseline=base, suite_path="examples/s/suite.yaml", cassettes="cassettes")
    assert not d.passed and d.exit_code == 1
    assert d.blocked_by == ["drift"]
    assert d.regressions == []  # "Regressions to keep" lists only regressions
    assert all(r.startswith("recording drift") for r in d.reasons), d.reasons
    assert any("changed since the recording: the policy" in r for r in d.reasons)
    assert d.fixes == [
        "portagent record examples/s/suite.yaml --providers adk,openai --emulator --drifted --case mail"
    ]
    argv = shlex.split(d.fixes[0])
    assert argv[:3] == ["portagent", "record", "examples/s/suite.yaml"] and "--drifted" in argv
    # the drifted runs are left out of the metric deltas: no "quality dropped" regression
    c = compare(base, cand)
    assert {f.category for f in c.findings} == {"drift"}
    assert not any(d.blocking and d.metric == "quality" for p in c.pairs for d in p.deltas)


def test_after_rerecording_the_fixed_candidate_is_an_improvement_that_does_not_block() -> None:
    before, after = _side("2", "fail"), _side("2", "pass")
    c = compare(before, after)
    assert c.passed and c.reasons == []
    assert {f.category for f in c.findings} == {"improvement"} and not any(f.blocking for f in c.findings)
    assert {d.category for p in c.pairs for d in p.cases} == {"improvement"}


def test_a_real_regression_is_a_regression_to_keep() -> None:
    d = gate(_side("2", "fail"), baseline=_side("1", "pass"))
    assert d.blocked_by == ["regression"] and d.fixes == []
    assert {g.case_id for g in d.regressions} == {"mail"}
    assert all(r.startswith("regression") for r in d.reasons), d.reasons


def test_runs_that_disagree_across_repeats_are_flaky_not_a_regression() -> None:
    cand = _result([_run("2", "openai", 0), _run("2", "openai", 1, outcome="fail")])
    d = gate(cand, baseline=_side("1", "pass", ("openai",)))
    assert "flaky" in d.blocked_by
    assert any(r.startswith("flaky on openai: case mail passed 1 → 0.5") for r in d.reasons), d.reasons
    assert d.regressions == []  # not a case to keep: it differs across repeats


def test_junit_and_markdown_name_the_category(tmp_path: Any) -> None:
    from portagent.evals.report import Results
    from portagent.evals.report_junit import render_junit
    from portagent.evals.report_md import render_markdown

    cand = _side("2", "drift")
    res = Results(tmp_path, cand, None)
    d = gate(cand, suite_path="suite.yaml")
    assert 'type="drift"' in render_junit(res, d)
    md = render_markdown(res, d, None)
    assert "Blocked by: recording drift" in md and d.fixes[0] in md
    assert "Regressions to keep" not in md


def _timed(version: str, latencies: dict[int, list[float]]) -> SuiteResult:
    runs = []
    for repeat, values in latencies.items():
        for i, ms in enumerate(values):
            t = Trace(agent_version=version, case_id=f"c{i}", repeat=repeat).started()
            t.model()
            t.call("send")
            t._add(
                RunCompleted,
                status="completed",
                stop_reason="final_output",
                final_output="sent",
                duration_ms=ms,
            )
            runs.append(score_run(t.events, CASE.model_copy(update={"case_id": f"c{i}"})))
    return _result(runs)


def test_a_single_slow_repeat_does_not_block_latency() -> None:
    base = _timed("1", {0: [1000.0] * 5, 1: [1100.0] * 5})
    one_slow = _timed("2", {0: [1000.0] * 5, 1: [1000.0] * 4 + [9000.0]})
    c = compare(base, one_slow)
    assert c.passed, c.reasons
    assert any("latency_p95_ms" in w and "not sustained" in w for w in c.warnings)
    # slower in every repeat, beyond the baseline's slowest repeat: blocks
    slow = _timed("2", {0: [1700.0] * 5, 1: [1800.0] * 5})
    c = compare(base, slow)
    assert not c.passed and any(r.startswith("regression: latency_p95_ms") for r in c.reasons)


def test_a_single_slow_run_without_repeats_does_not_block_but_a_slow_result_does() -> None:
    base = _timed("1", {0: [1000.0] * 5})
    assert compare(base, _timed("2", {0: [1000.0] * 4 + [9000.0]})).passed
    assert not compare(base, _timed("2", {0: [1000.0, 1000.0, 1000.0, 9000.0, 9000.0]})).passed


def test_a_latency_rise_measured_on_cold_starts_only_does_not_block() -> None:
    """Every run the first of its process (one run per worker): each latency includes the SDK's start-up,
    which moves by seconds with the machine's load. Such a rise is reported, never blocking — the same rise
    on warm runs blocks (test_a_single_slow_repeat_does_not_block_latency)."""

    def cold(result: SuiteResult) -> SuiteResult:
        return _result([r.model_copy(update={"cold_start": True}) for r in result.runs])

    base = _timed("1", {0: [1000.0] * 5, 1: [1100.0] * 5})
    slow = _timed("2", {0: [1700.0] * 5, 1: [1800.0] * 5})
    assert not compare(base, slow).passed
    for b, c in ((cold(base), cold(slow)), (base, cold(slow)), (cold(base), slow)):
        result = compare(b, c)
        assert result.passed, result.reasons
        assert any("latency_p95_ms" in w and "cold starts only" in w for w in result.warnings), (
            result.warnings
        )
