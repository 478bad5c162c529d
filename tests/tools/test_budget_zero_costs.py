"""The budget's shortcut for zero costs (no ``Decimal`` work for a tool without ``cost_usd`` or an unpriced call,
``max_cost_usd`` converted once) keeps every sum exact and every limit where it was. Added with that shortcut
(issue 18, a speed change): it pins behaviour the old arithmetic had, so it passes on the old code too."""

from __future__ import annotations

from decimal import Decimal

from portagent.contracts.agent import Budget
from portagent.core.budgets import RunBudget


def test_zero_costs_change_no_sum_and_exact_sums_stay_exact():
    b = RunBudget(Budget(max_cost_usd=0.15))
    for _ in range(3):
        assert b.check_tool(0.0).ok and b.charge_tool(0.0).ok  # tools without a cost
        assert b.add_model_cost(0.0).ok  # an unpriced model call
        assert b.charge_tool(0.05).ok
    assert b.spent == Decimal("0.15") and b.cost_usd == 0.15  # three 0.05: exactly the limit, not over
    assert b.cost_left == 0.0 and b.model_cost_usd == 0.0 and b.tool_cost_usd == 0.15
    over = b.check_tool(0.01)
    assert (over.ok, over.limit, over.limit_value, over.observed) == (False, "max_cost_usd", 0.15, 0.16)
    assert b.check_tool(0.0).ok and b.charge_tool(-0.0).ok  # a zero (or negative zero) cost never goes over


def test_a_run_without_a_cost_limit_still_counts_money():
    b = RunBudget(Budget(), spent_usd=0.0)
    assert b.max_cost is None and b.cost_left is None
    assert b.add_model_cost(0.0024).ok and b.add_tool_cost(Decimal("0.0001")).ok and b.charge_tool(0.0).ok
    assert b.spent == Decimal("0.0025") and b.snapshot()["cost_usd"] == 0.0025
    assert RunBudget(Budget(max_cost_usd=0.5), spent_usd=0.25).cost_left == 0.25


def test_a_cost_limit_of_nothing_admits_free_tools_only():
    """A run without a model (a router's executed routes) can be held to free tools: ``max_cost_usd=0``
    given to RunBudget is a limit of nothing, which an agent's Budget cannot say (it refuses 0)."""
    import math

    import pytest

    b = RunBudget(Budget(), max_cost_usd=0.0)
    assert b.max_cost == 0 and b.cost_left == 0.0
    assert b.check_tool(0.0).ok and b.charge_tool(0.0).ok
    refused = b.charge_tool(0.001)
    assert (refused.ok, refused.limit, refused.limit_value) == (False, "max_cost_usd", 0.0)
    assert RunBudget(Budget(max_cost_usd=5.0), max_cost_usd=1.0).max_cost == 1  # it replaces the budget's
    assert RunBudget(Budget(max_cost_usd=5.0)).max_cost == 5
    for bad in (-0.01, math.nan):
        with pytest.raises(ValueError, match="max_cost_usd must be 0 or more"):
            RunBudget(Budget(), max_cost_usd=bad)
