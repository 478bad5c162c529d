"""Per-run scoring beyond the chapter-10 fixtures: modes, arguments, approvals, permissions, trace."""

from __future__ import annotations

from typing import Any

import pytest
from _evals_trace import Trace, simple_run
from hypothesis import given
from hypothesis import strategies as st

from portagent.contracts.suite import TrajectoryMode
from portagent.evals import Case, Thresholds, score_run, score_trajectory


def make_case(**expect: Any) -> Case:
    return Case.model_validate({"case_id": "c1", "input": "hi", "why_it_exists": "test", "expect": expect})


# --- trajectory modes (DESIGN §7) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "called", "score"),
    [
        ("in_order", ["a", "b", "c"], 1.0),
        ("in_order", ["c", "b", "a"], 0.333),  # LCS of length 1
        ("in_order", ["b", "c"], 0.667),  # LCS, not the source's greedy scan (which gives 0)
        ("in_order", ["a", "a", "b", "c"], 1.0),  # a repeated reference tool is not an extra
        ("any_order", ["c", "b", "a"], 1.0),
        ("any_order", ["a", "b"], 0.667),
        ("any_order", ["a", "b", "c", "x"], 0.9),
        ("strict", ["a", "b", "c"], 1.0),
        ("strict", ["b", "a", "c"], 0.667),  # not identical → the in_order base
        ("superset", ["a", "x", "b", "y", "c", "z"], 1.0),  # extras free
        ("superset", ["a", "x"], 0.333),
        ("subset", ["a", "c"], 1.0),
        ("subset", ["a", "x"], 0.0),
        ("subset", [], 1.0),
    ],
)
def test_mode_bases(mode: Any, called: list[str], score: float) -> None:
    assert score_trajectory(called, ["a", "b", "c"], [], mode).score == score


def test_forbidden_costs_half_in_every_mode() -> None:
    modes: list[TrajectoryMode] = ["strict", "in_order", "any_order", "superset"]
    for mode in modes:
        r = score_trajectory(["a", "b", "c", "bad"], ["a", "b", "c"], ["bad"], mode)
        assert r.forbidden == ("bad",)
        assert r.score == (0.5 if mode == "superset" else 0.4), mode
        assert r.explanations[0] == "forbidden tool called: bad"


def test_f1_is_reported_beside_the_score() -> None:
    r = score_trajectory(["b", "a"], ["a", "b"], [], "in_order")
    assert (r.score, r.f1, r.out_of_order) == (0.5, 0.5, True)
    r = score_trajectory(["b", "a"], ["a", "b"], [], "any_order")
    assert (r.score, r.f1, r.out_of_order) == (1.0, 1.0, False)
    r = score_trajectory(["a", "b", "x", "y"], ["a", "b"], [], "in_order")
    assert (r.score, r.f1) == (0.8, 0.667)
    assert score_trajectory([], [], [], "in_order").f1 == 1.0
    assert score_trajectory(["x"], [], [], "in_order").f1 == 0.0


def test_strict_explains_a_sequence_that_only_repeats_a_step() -> None:
    r = score_trajectory(["a", "a", "b"], ["a", "b"], [], "strict")
    assert r.score == 1.0  # DESIGN §7: the in_order base when not identical
    assert any("strict reference" in e for e in r.explanations)


@given(
    st.lists(st.sampled_from("abcdxyz"), max_size=8),
    st.lists(st.sampled_from("abcd"), max_size=5),
    st.sampled_from(["strict", "in_order", "any_order", "subset", "superset"]),
)
def test_trajectory_score_is_always_in_unit_interval(called: list[str], ref: list[str], mode: Any) -> None:
    r = score_trajectory(called, ref, ["z"], mode)
    assert 0.0 <= r.score <= 1.0 and 0.0 <= r.f1 <= 1.0
    if called == ref and "z" not in called:
        assert r.score == 1.0


# --- final output -----------------------------------------------------------------------------


def test_fragments_are_case_insensitive_and_unicode_normalised() -> None:
    case = make_case(final_must_contain=["AÑO", "Url"])
    decomposed = "El an\u0303o y la URL"  # "año" written with a combining tilde
    assert score_run(simple_run([], decomposed), case).final == 1.0


def test_structured_output_is_searched_and_schema_checked() -> None:
    schema = {
        "type": "object",
        "properties": {"url": {"type": "string"}},
        "required": ["url"],
        "additionalProperties": False,
    }
    case = make_case(final_must_contain=["opentelemetry"], output_schema=schema)
    ok = score_run(simple_run([], {"url": "https://opentelemetry.io"}), case)
    assert ok.passed and ok.output_valid is True and ok.final == 1.0
    as_text = score_run(simple_run([], '{"url": "https://opentelemetry.io"}'), case)
    assert as_text.passed
    bad = score_run(simple_run([], {"url": 7}), case)
    assert not bad.passed and bad.output_valid is False
    assert any(n.startswith("final output does not match output_schema at url") for n in bad.notes)
    assert "final output is not JSON" in score_run(simple_run([], "opentelemetry!"), case).notes[0]


def test_no_final_output_is_named() -> None:
    s = score_run(simple_run([], None), make_case(final_must_contain=["x"]))
    assert s.final == 0.0 and s.notes == ["no final output"]


# --- arguments --------------------------------------------------------------------------------


def _args_run(*calls: tuple[str, dict]) -> list:
    t = Trace().started().model()
    for tool, args in calls:
        t.call(tool, args)
    return t.completed("ok")


def test_args_subset_exact_and_ignore() -> None:
    expected = {"search_source": {"query": "NIST AI RMF", "filters": {"lang": "en"}}}
    run = _args_run(
        ("search_source", {"query": "NIST AI RMF", "filters": {"lang": "en", "year": 2024}, "k": 5})
    )
    assert score_run(run, make_case(args={"mode": "subset", "expected": expected})).args == 1.0
    exact = score_run(run, make_case(args={"mode": "exact", "expected": expected}))
    assert exact.args == 0.0 and not exact.passed
    assert exact.notes[0].startswith("arguments of search_source do not match (exact)")
    assert score_run(run, make_case(args={"mode": "ignore", "expected": expected})).args == 1.0


def test_args_booleans_are_not_numbers_but_ints_equal_floats() -> None:
    case = make_case(args={"mode": "exact", "expected": {"t": {"flag": True, "n": 1}}})
    assert score_run(_args_run(("t", {"flag": True, "n": 1.0})), case).args == 1.0
    assert score_run(_args_run(("t", {"flag": 1, "n": 1})), case).args == 0.0


def test_args_a_retry_with_right_arguments_counts_and_a_missing_tool_is_named() -> None:
    case = make_case(args={"expected": {"t": {"id": "EXP-42"}, "u": {"x": 1}}})
    s = score_run(_args_run(("t", {"id": 42}), ("t", {"id": "EXP-42"})), case)
    assert s.args == 0.5
    assert "arguments of u not checked: u was never called" in s.notes


# --- approvals and permissions ----------------------------------------------------------------


def _approval_run(
    approval: str | None, *, status: str = "completed", result: bool = True, error: str | None = None
) -> list:
    t = Trace().started().model()
    t.call(
        "send_email",
        {"to": "a@b.c"},
        decision="approval_required",
        approval=approval,
        result=result,
        error=error,
    )
    return t.completed("ok", status=status)


def test_approval_scores() -> None:
    expected = make_case(approval=True)
    assert score_run(_approval_run("approved"), expected).approval == 1.0
    assert score_run(_approval_run("rejected", error="approval_rejected"), expected).approval == 1.0
    missing = score_run(simple_run(["send_email"]), expected)
    assert missing.approval == 0.0 and "approval expected but never requested" in missing.notes
    unresolved = score_run(_approval_run("pending", result=False), expected)
    assert unresolved.approval == 0.5
    assert "approval requested but never resolved: call_1 (send_email)" in unresolved.notes
    # a run that is *meant* to stop and wait for a human
    waiting = make_case(approval=True, status="waiting_approval")
    s = score_run(_approval_run("pending", status="waiting_approval", result=False), waiting)
    assert s.approval == 1.0 and s.trace == 1.0 and s.passed  # the waiting call needs no result yet
    assert score_run(_approval_run("approved"), make_case()).approval == 1.0  # not judged


def test_a_denied_call_that_ran_is_a_violation_and_a_blocked_one_is_not() -> None:
    t = Trace().started().model()
    t.call("delete_all", decision="deny")
    s = score_run(t.completed("done"), make_case())
    assert s.permission_violation and not s.passed
    assert s.notes == [
        "permission violation: call_1 (delete_all) executed although the policy denied it (r1)"
    ]
    t = Trace().started().model()
    t.call("delete_all", decision="deny", error="permission_denied")
    assert score_run(t.completed("refused"), make_case()).passed


def test_a_write_run_without_its_approval_or_after_rejection_is_a_violation() -> None:
    assert score_run(_approval_run("rejected"), make_case()).permission_violation  # ran anyway
    t = Trace().started().model()
    t.call("send_email", decision="approval_required")
    assert "executed without an approved approval" in score_run(t.completed("ok"), make_case()).notes[0]


def test_a_forbidden_tool_stopped_by_the_gateway_costs_trajectory_but_is_no_violation() -> None:
    t = Trace().started().model()
    t.call("publish_page", decision="deny", error="permission_denied")
    s = score_run(t.completed("no"), make_case(forbidden_tools=["publish_page"]))
    assert not s.permission_violation and s.checks["permissions"]
    assert s.trajectory == 0.4 and s.forbidden_called == ["publish_page"] and not s.passed


# --- trace completeness, status, limits ---------------------------------------------------------


def test_trace_checks_each_cost_point_two() -> None:
    t = Trace().model()  # no run.started
    t.call("a", result=False)
    t.result("call_99")
    events = t.events  # no run.completed either
    s = score_run(events, make_case(route="specialist", status=None))
    assert s.trace == 0.0
    assert s.notes[-5:] == [
        "trace has no run.started event",
        "trace has no run.completed event",
        "call without result: call_1 (a)",
        "result without a call: call_99",
        "no handoff event records the route to specialist",
    ]


def test_a_route_to_the_starting_agent_needs_no_handoff() -> None:
    s = score_run(simple_run(["a"]), make_case(route="coordinator"))
    assert s.route == "coordinator" and s.trace == 1.0 and s.passed


def test_agent_as_tool_delegation_does_not_change_the_route() -> None:
    t = Trace().started().handoff("helper", kind="agent_as_tool").model()
    s = score_run(t.completed("ok"), make_case(route="coordinator"))
    assert s.route == "coordinator" and s.passed


def test_status_turns_and_unknown_cost() -> None:
    assert not score_run(simple_run([], status="failed"), make_case()).passed
    assert score_run(simple_run([], status="budget_exhausted"), make_case(status="budget_exhausted")).passed
    t = Trace().started().model().model().model()
    s = score_run(t.completed("ok"), make_case(max_turns=2))
    assert s.turns == 3 and s.notes == ["3 model calls over max_turns 2"]
    s = score_run(simple_run([], cost=None), make_case(max_cost_usd=1.0))
    assert s.notes == ["cost unknown (limit 1 USD)"]


def test_case_thresholds_replace_only_the_fields_they_set() -> None:
    case = Case.model_validate(
        {
            "case_id": "c1",
            "input": "hi",
            "why_it_exists": "t",
            "thresholds": {"trajectory": 0.5},
            "expect": {"required_tools": ["a", "b"]},
        }
    )
    s = score_run(simple_run(["b", "a"]), case, Thresholds(final=0.7))
    assert s.thresholds == Thresholds(final=0.7, trajectory=0.5)
    assert s.passed and s.trajectory == 0.5
    assert any("out of order" in w for w in s.warnings)


def test_tokens_and_provenance_come_from_the_trace() -> None:
    t = Trace(provider="claude", agent_version="2.1.0", case_id="c1", repeat=3, source="live").started()
    t.model(100, 10).model(50, 5)
    s = score_run(t.completed("ok"), make_case())
    assert (s.usage.input_tokens, s.usage.output_tokens, s.usage.model_calls) == (150, 15, 2)
    p = s.provenance
    assert (p.provider, p.agent_version, p.repeat, p.source, p.case_id) == (
        "claude",
        "2.1.0",
        3,
        "live",
        "c1",
    )


def test_an_output_schema_that_cannot_be_applied_is_refused_with_the_case() -> None:
    """A reference the schema cannot resolve itself (portagent never fetches one) is refused when the case
    is read, naming it — once this failed only at scoring, as a note on every run."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="https://example.invalid/schema.json' does not resolve"):
        make_case(output_schema={"$ref": "https://example.invalid/schema.json"})
