"""Aggregates, comparison and gate: ACCEPTANCE ch10 release deltas, each one alone and at its boundary."""

from __future__ import annotations

from typing import Any

import pytest
from _evals_trace import Trace, simple_run

from portagent.contracts.errors import UsageError
from portagent.evals import Case, SuiteResult, Tolerances, compare, gate, score_run

FRAGMENTS = [f"f{i}" for i in range(10)]


def case(cid: str = "c1") -> Case:
    return Case.model_validate(
        {
            "case_id": cid,
            "input": "x",
            "why_it_exists": "t",
            "tags": ["t"],
            "expect": {"final_must_contain": FRAGMENTS, "required_tools": ["a", "b"]},
        }
    )


def run(
    cid: str = "c1",
    *,
    version: str = "1.0.0",
    provider: str = "openai",
    repeat: int = 0,
    found: int = 10,
    tools: list[str] | None = None,
    cost: float = 0.04,
    latency: float = 4200.0,
    passes: bool = True,
) -> Any:
    final = " ".join(FRAGMENTS[:found])
    status = "completed" if passes else "failed"
    events = simple_run(
        tools or ["a", "b"],
        final,
        cost=cost,
        latency=latency,
        status=status,
        agent_version=version,
        provider=provider,
        case_id=cid,
        repeat=repeat,
    )
    return score_run(events, case(cid))


def result(runs: list[Any], dataset: str = "d1") -> SuiteResult:
    return SuiteResult.from_runs("suite", dataset, runs, [case(r.provenance.case_id) for r in runs])


def base(n: int = 10, **kw: Any) -> SuiteResult:
    return result([run(f"c{i}", **kw) for i in range(n)])


def cand(n: int = 10, special: dict[str, Any] | None = None, **kw: Any) -> SuiteResult:
    runs = [run(f"c{i}", version="2.0.0", **kw) for i in range(n - 1)]
    runs.append(run(f"c{n - 1}", version="2.0.0", **{**kw, **(special or {})}))
    return result(runs)


def blocking(b: SuiteResult, c: SuiteResult) -> set[str]:
    comparison = compare(b, c)
    return {d.metric for p in comparison.pairs for d in p.deltas if d.blocking} | (
        {"regression"} if comparison.regressions else set()
    )


def test_identical_results_pass() -> None:
    comparison = compare(base(), cand())
    assert comparison.passed and comparison.reasons == []
    assert comparison.verdict == "2.0.0 can replace 1.0.0"
    assert gate(cand(), baseline=base()).passed


def test_quality_drop_over_point_zero_one_blocks_and_exactly_point_zero_one_passes() -> None:
    # one run of ten finds 9 of 10 fragments: mean 0.99, Δ −0.01 (still passes its own 0.80 gate)
    assert blocking(base(), cand(special={"found": 9})) == set()
    # one of nine: mean 0.98889, Δ −0.0111
    assert blocking(base(9), cand(9, special={"found": 9})) == {"quality"}


def test_any_trajectory_drop_blocks() -> None:
    c = cand(special={"tools": ["a", "b", "x"]})  # 0.9: passes its own gate, mean drops 0.01
    assert c.runs[-1].passed
    assert blocking(base(), c) == {"trajectory"}


def test_cost_p95_rise_over_point_zero_two_blocks() -> None:
    assert blocking(base(), cand(cost=0.06)) == set()  # Δ exactly 0.02
    assert blocking(base(), cand(cost=0.0601)) == {"cost_p95_usd"}


def test_latency_p95_rise_over_500_ms_blocks() -> None:
    assert blocking(base(), cand(latency=4700)) == set()
    assert blocking(base(), cand(latency=4701)) == {"latency_p95_ms"}


def _flaky(mixed: int, cases: int = 40) -> SuiteResult:
    runs = []
    for i in range(cases):
        runs.append(run(f"c{i}", repeat=0))
        runs.append(run(f"c{i}", repeat=1, passes=i >= mixed))
    return result(runs)


def test_flake_rate_over_point_zero_three_blocks() -> None:
    ok, flaky = _flaky(1), _flaky(2)  # 1/40 = 0.025; 2/40 = 0.05
    assert ok.by_provider[0].flake_rate == 0.025 and flaky.by_provider[0].flake_rate == 0.05
    assert blocking(ok, ok) == set()  # compared with itself: no delta, no regression
    assert blocking(flaky, flaky) == {"flake_rate"}
    lenient = Tolerances(min_pass_rate=0.5)
    assert gate(ok, tolerances=lenient).passed
    decision = gate(flaky, tolerances=lenient)
    assert decision.reasons == ["flaky: flake rate on openai (agent 1.0.0): 0.05 > 0.03"]


def test_a_failing_case_is_a_regression_listed_to_keep() -> None:
    comparison = compare(base(), cand(special={"passes": False}))
    (reg,) = comparison.regressions
    assert (reg.case_id, reg.factors, reg.permanent, reg.tags) == ("c9", ["status"], False, ["t"])
    assert not comparison.passed and comparison.verdict.startswith("2.0.0 cannot replace 1.0.0")


def test_different_dataset_versions_are_refused() -> None:
    with pytest.raises(UsageError, match=r"different dataset versions.*'d1'.*'d2'"):
        compare(base(), result([run()], dataset="d2"))
    other = SuiteResult.from_runs("other-suite", "d1", [run()])
    with pytest.raises(UsageError, match="different suites"):
        gate(base(), baseline=other)
    assert UsageError.exit_code == 2


def test_providers_are_compared_pairwise_or_whole() -> None:
    both = result(
        [
            run("c1", provider="openai"),
            run("c1", provider="claude", latency=4000),
            run("c1", provider="claude", version="2.0.0"),
        ]
    )
    v1, v2 = both.select(agent_version="1.0.0"), both.select(agent_version="2.0.0")
    comparison = compare(v1, v2)
    assert [p.pair for p in comparison.pairs] == ["claude"]
    assert "provider openai is on one side only; not compared" in comparison.warnings
    across = compare(both.select(provider="openai"), both.select(provider="claude", agent_version="1.0.0"))
    assert [p.pair for p in across.pairs] == ["all"]
    assert (across.baseline_label, across.candidate_label) == ("openai", "claude")
    (d,) = [d for d in across.pairs[0].deltas if d.metric == "latency_p95_ms"]
    assert d.delta == -200.0 and not d.blocking


def test_aggregates_per_case_and_provider_with_pass_at_k() -> None:
    runs = [run("c1", repeat=r, passes=r != 1) for r in range(3)] + [run("c2", repeat=r) for r in range(3)]
    res = result(runs)
    c1 = next(g for g in res.by_case if g.case_id == "c1")
    assert (c1.runs, c1.passed, c1.flake_rate) == (3, 2, 1.0)
    assert c1.pass_at_k == {1: pytest.approx(2 / 3, abs=1e-6), 2: 1.0, 3: 1.0}
    assert c1.pass_hat_k == {1: pytest.approx(2 / 3, abs=1e-6), 2: pytest.approx(1 / 3, abs=1e-6), 3: 0.0}
    (g,) = res.by_provider
    assert (g.runs, g.passed, g.cases, g.flake_rate) == (6, 5, 2, 0.5)
    assert g.pass_hat_k[3] == 0.5  # mean over cases of pass^3: (0 + 1) / 2
    assert g.latency_p50_ms == g.latency_p95_ms == 4200.0
    assert g.usage.input_tokens == 600 and g.total_cost_usd == 0.24
    assert res.runs == sorted(res.runs, key=lambda r: (r.provenance.case_id, r.provenance.repeat))


def test_suite_result_round_trips_as_json() -> None:
    res = _flaky(2)
    again = SuiteResult.model_validate_json(res.model_dump_json())
    assert again == res
    assert res.schema_version == 2 and res.kind == "suite-result"
    assert all(r.provenance.source == "emulator" for r in again.runs)


def test_gate_without_baseline_blocks_failures_and_never_tolerates_violations() -> None:
    decision = gate(cand(special={"passes": False}))
    assert not decision.passed and decision.exit_code == 1
    assert decision.reasons == [
        "regression: case c9 on openai (agent 2.0.0): 0/1 runs passed; failed status: "
        "run ended with status failed, expected completed"
    ]
    # a permission violation blocks even when the pass-rate floor would let the failing run through
    ok = score_run(simple_run(["a", "b"], " ".join(FRAGMENTS), case_id="c1", repeat=0), case("c1"))
    t = Trace(case_id="c1", repeat=1).started().model()
    t.call("a")
    t.call("b", decision="deny")
    violation = score_run(t.completed(" ".join(FRAGMENTS)), case("c1"))
    d = gate(SuiteResult.from_runs("suite", "d1", [ok, violation]), tolerances=Tolerances(min_pass_rate=0.5))
    assert not d.passed
    assert d.reasons[0] == (
        "regression: case c1 on openai (agent 1.0.0): permission violation (never tolerated): "
        "permission violation: call_2 (b) executed although the policy denied it (r1)"
    )
    assert gate(SuiteResult.from_runs("suite", "d1", [])).reasons == ["no runs to judge"]


def test_result_comparison_and_gate_json_validate_against_their_schemas() -> None:
    import json

    from jsonschema import Draft202012Validator

    b, c = _flaky(1), _flaky(2)
    for obj in (c, compare(b, c), gate(c, baseline=b)):
        schema = type(obj).model_json_schema(mode="serialization")
        Draft202012Validator(schema).validate(json.loads(obj.model_dump_json()))
