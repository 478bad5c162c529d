"""``compare`` of two results whose case sets differ (a case added, dropped or renamed) computes its metric
deltas over the cases both sides ran. It used to average each side over its own cases, so a new hard case
blocked the candidate as "quality dropped" while the same comparison called that case "not compared" — and
a dropped hard case read as a rise. Cases on one side only are still judged on their own, and a permission
violation in a new case still blocks."""

from __future__ import annotations

from test_evals_compare import result, run

from portagent.evals import compare, gate


def test_a_new_failing_case_is_not_a_drop_in_quality_of_the_cases_both_ran() -> None:
    base = result([run("c0"), run("c1")])
    cand = result(
        [run("c0", version="2.0.0"), run("c1", version="2.0.0"), run("new", version="2.0.0", found=2)]
    )
    c = compare(base, cand)
    assert c.passed, c.reasons
    assert not any(d.blocking for p in c.pairs for d in p.deltas), c.pairs
    assert any("case new on openai: only on the candidate (not compared)" in w for w in c.warnings), (
        c.warnings
    )
    assert any(
        "metrics on openai: over the 2 case(s) both sides ran; 1 case(s) on one side only" in w
        for w in c.warnings
    )
    (pair,) = c.pairs
    assert pair.baseline.runs == pair.candidate.runs == 2
    # the new case is judged on its own merits by the gate: it fails there, named by its case
    d = gate(cand, baseline=base)
    assert not d.passed and any(f.case_id == "new" for f in d.findings if f.blocking), d.findings


def test_a_real_drop_on_the_shared_cases_still_blocks_with_a_case_added() -> None:
    base = result([run("c0"), run("c1")])
    cand = result(
        [run("c0", version="2.0.0", found=5), run("c1", version="2.0.0"), run("new", version="2.0.0")]
    )
    c = compare(base, cand)
    assert not c.passed
    assert any(d.metric == "quality" and d.blocking for p in c.pairs for d in p.deltas), c.pairs


def test_a_permission_violation_in_a_new_case_still_blocks() -> None:
    base = result([run("c0")])
    bad = run("new", version="2.0.0")
    bad = bad.model_copy(update={"permission_violation": True})
    cand = result([run("c0", version="2.0.0"), bad])
    c = compare(base, cand)
    assert not c.passed
    assert any(d.metric == "permission_violations" and d.blocking for p in c.pairs for d in p.deltas), c.pairs
