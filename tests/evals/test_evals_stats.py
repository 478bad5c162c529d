"""Statistics: ACCEPTANCE ch10 values and the documented formulas."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from portagent.evals import (
    cost_per_accepted_task,
    flake_rate,
    pass_at_k,
    pass_hat_k,
    percentile,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (19, 20, 0.7639, 0.9911),
        (18, 20, 0.6990, 0.9721),
        (860, 1000, 0.8371, 0.8801),
        (780, 1000, 0.7533, 0.8046),
    ],
)
def test_wilson_95(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_wilson_separates_signal_from_noise() -> None:
    assert wilson_interval(18, 20)[1] > wilson_interval(19, 20)[0]  # overlap: noise
    assert wilson_interval(780, 1000)[1] < wilson_interval(860, 1000)[0]  # apart: signal


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0 < hi < 0.35
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_cost_per_accepted_task() -> None:
    assert cost_per_accepted_task(5.00, 20) == pytest.approx(0.25)
    assert cost_per_accepted_task(8.00, 80) == pytest.approx(0.10)
    assert cost_per_accepted_task(8.00, 80, human_cost_usd=2.0) == pytest.approx(0.125)
    assert cost_per_accepted_task(5.00, 0) is None


def test_pass_at_k_and_pass_hat_k() -> None:
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))  # 0.7
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(3, 3, 3) == pass_hat_k(3, 3, 3) == 1.0
    assert pass_at_k(3, 0, 3) == pass_hat_k(3, 0, 3) == 0.0
    assert pass_at_k(4, 3, 2) == 1.0  # fewer failures than draws
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 0)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_bounds(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    eps = 1e-12
    assert -eps <= hat <= c / n + eps and c / n <= at + eps and at <= 1.0 + eps
    lo, hi = wilson_interval(c, n)
    assert lo <= c / n <= hi


def test_flake_rate() -> None:
    assert flake_rate([[True, True], [True, False], [False, False], [True, True, False]]) == 0.5
    assert flake_rate([[True], [False]]) is None  # nothing repeated: not measured
    assert flake_rate([[True], [True, True]]) == 0.0


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 21))
    assert percentile(values, 95) == 19
    assert percentile(values, 50) == 10
    assert percentile(values, 100) == 20
    assert percentile([4200.0, 5100.0], 95) == 5100.0
    assert percentile([], 95) is None
    with pytest.raises(ValueError):
        percentile(values, 0)


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50), st.floats(0.1, 100))
def test_percentile_returns_an_observed_value(values: list[float], q: float) -> None:
    assert percentile(values, q) in values
