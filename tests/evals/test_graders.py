"""The pure parts of graders (issue 17): verdict reading, pair counting, Cohen's kappa and eligibility."""

from __future__ import annotations

import pytest

from portagent.contracts.suite import GraderSpec
from portagent.evals.calibration import CalibrationItem, calibrate, cohen_kappa
from portagent.evals.graders import PairJudgment, pair_winner, pairwise_result, read_verdict

JUDGE = GraderSpec(name="g", type="judge", judge="j.yaml", instructions="is it right?")
RUBRIC = GraderSpec(
    name="r",
    type="rubric",
    judge="j.yaml",
    criteria=["names the document"],
    anchors={0: "none", 0.5: "vague", 1: "names it"},
    threshold=0.5,
)


def test_cohen_kappa_known_values() -> None:
    # textbook example: 50 items, agreement 35, yes rates 0.5 / 0.6 → p_o .70, p_e .50, kappa .40
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs, ["y", "n"]) == 0.4
    assert cohen_kappa([("y", "y"), ("n", "n")], ["y", "n"]) == 1.0
    assert cohen_kappa([("y", "y"), ("y", "y")], ["y", "n"]) is None  # p_e = 1: undefined
    assert cohen_kappa([], ["y", "n"]) is None


def test_eligibility_needs_the_declared_agreement() -> None:
    spec = JUDGE.model_copy(update={"gate": True, "min_kappa": 0.6})
    items = [
        CalibrationItem(index=0, human="pass", judge="pass"),
        CalibrationItem(index=1, human="fail", judge="fail"),
        CalibrationItem(index=2, human="pass", judge=None, error="the judge run failed"),
    ]
    c = calibrate(spec, "judge@1 on openai", items)
    assert (c.accuracy, c.eligible) == (0.6667, False)
    assert c.confusion == {
        "pass": {"pass": 1, "fail": 0, "error": 1},
        "fail": {"pass": 0, "fail": 1, "error": 0},
    }
    same = [CalibrationItem(index=i, human="pass", judge="pass") for i in range(3)]
    assert "undefined" in calibrate(spec, "j", same).reason  # one label everywhere shows nothing
    good = [*same, CalibrationItem(index=3, human="fail", judge="fail")]
    assert calibrate(spec, "j", good).eligible


def test_read_verdict_refuses_what_is_not_a_verdict() -> None:
    assert read_verdict(JUDGE, {"label": "pass", "score": 0.8, "explanation": "ok"}) == ("pass", 0.8, "ok")
    assert read_verdict(JUDGE, '{"label": "pass", "score": 1, "explanation": "ok"}') == ("pass", 1.0, "ok")
    assert "not one of" in str(read_verdict(JUDGE, {"label": "maybe", "score": 0.5}))
    assert "not a number" in str(read_verdict(JUDGE, {"label": "pass", "score": True}))
    assert read_verdict(RUBRIC, {"label": "0.5", "score": 0.5, "explanation": "x"}) == ("0.5", 0.5, "x")
    assert read_verdict(RUBRIC, {"label": "1.0", "score": 1, "explanation": "x"}) == ("1", 1.0, "x")
    assert "name different anchors" in str(read_verdict(RUBRIC, {"label": "whatever", "score": 0.5}))
    assert "name different anchors" in str(read_verdict(RUBRIC, {"label": "0", "score": 1}))
    assert "not an anchor" in str(read_verdict(RUBRIC, {"label": "x", "score": 0.7}))
    assert "not JSON" in str(read_verdict(JUDGE, "pass"))


@pytest.mark.parametrize(
    ("ab", "ba", "winner"),
    [
        ("1", "2", "a"),
        ("2", "1", "b"),
        ("1", "1", "inconsistent"),
        ("tie", "tie", "tie"),
        ("1", "tie", "tie"),
        (None, "1", "error"),
    ],
)
def test_pair_winner_needs_both_orders(ab: str | None, ba: str | None, winner: str) -> None:
    assert pair_winner(ab, ba) == winner


def test_position_bias() -> None:
    judgments = [
        PairJudgment(repeat=0, ab="1", ba="1", winner="inconsistent"),
        PairJudgment(repeat=1, ab="1", ba="2", winner="a"),
    ]
    r = pairwise_result("g", "c", "A", "B", judgments)
    assert (r.wins_a, r.inconsistent, r.first_position_picks, r.second_position_picks) == (1, 1, 3, 1)
    assert r.position_bias == 0.5
