"""RunBudget: the run's counters against its ``Budget`` (model turns, tool calls, cost).

Semantics (ACCEPTANCE ch. 06, ADR 0002):

- exactly the maximum is allowed, maximum + 1 is rejected;
- every tool call that reaches the gateway counts toward ``max_tool_calls`` (rejected calls too),
  and the count checked includes the call being checked;
- a tool's ``cost_usd`` is checked *before* permission (would ``spent + cost`` exceed
  ``max_cost_usd``?) but charged only when its handler actually runs;
- model cost is added by the runner (``add_model_cost``) and shares ``max_cost_usd`` with tools;
- a remote agent's reported cost is added after its call ran (``add_tool_cost``): a run it takes over
  ``max_cost_usd`` stops after that call, as a model call's cost does.

Money is kept as ``Decimal`` built from the floats' shortest repr, so ``0.05 - 0.01`` is ``0.04``
and three 0.05 calls fit a 0.15 budget exactly (binary floats would say 0.15000000000000002).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from portagent.contracts.agent import Budget

Limit = Literal["max_turns", "max_tool_calls", "max_cost_usd", "timeout_s"]


_ZERO = Decimal(0)


def _money(value: float | Decimal) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if not value:  # the usual tool cost (none set) and an unpriced call: no decimal conversion
        return _ZERO
    return Decimal(repr(float(value)))


@dataclass(frozen=True)
class BudgetCheck:
    """The answer of one check: ``ok``, or which limit would be passed and by how much."""

    ok: bool
    limit: Limit | None = None
    limit_value: float | None = None
    observed: float | None = None

    @property
    def message(self) -> str:
        if self.ok:
            return "within budget"
        if self.limit == "max_cost_usd":
            return (
                f"cost budget exhausted: this call would bring the run to {self.observed:g} USD, "
                f"over max_cost_usd {self.limit_value:g}"
            )
        return f"{self.limit} exhausted: {self.observed:g} > {self.limit_value:g}"

    def event_fields(self) -> dict[str, float | str]:
        """Fields of the ``budget.exceeded`` trace event."""
        assert self.limit is not None and self.limit_value is not None and self.observed is not None
        return {"limit": self.limit, "limit_value": self.limit_value, "observed": self.observed}


OK = BudgetCheck(ok=True)


class RunBudget:
    """Counters of one run. Thread-safe: parallel tool calls share one budget.

    ``budget=None`` means no limits (counters still run), which is what a bare gateway uses.
    ``spent_usd`` starts the run with cost already spent (counted as tool cost).
    ``max_cost_usd`` replaces the budget's cost limit, and may be 0: a run without a model (a router's
    executed routes) can be held to free tools only, which an agent's ``Budget`` cannot say (an agent
    that may spend nothing could not call its model, so the contract refuses 0).
    """

    def __init__(
        self, budget: Budget | None = None, *, spent_usd: float = 0.0, max_cost_usd: float | None = None
    ) -> None:
        if max_cost_usd is not None and not max_cost_usd >= 0:  # also NaN
            raise ValueError(f"max_cost_usd must be 0 or more, not {max_cost_usd!r}")
        self.budget = budget
        self._lock = threading.Lock()
        self.turns = 0
        self.tool_calls = 0
        self._model_cost = _ZERO
        self._tool_cost = _money(spent_usd)
        limit = max_cost_usd if max_cost_usd is not None else (budget.max_cost_usd if budget else None)
        self._max_cost = None if limit is None else _money(limit)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def max_cost(self) -> Decimal | None:
        return self._max_cost  # the budget is a frozen contract: converted once

    @property
    def spent(self) -> Decimal:
        """Model + executed tool cost, exact."""
        return self._model_cost + self._tool_cost

    @property
    def cost_usd(self) -> float:
        return float(self.spent)

    @property
    def tool_cost_usd(self) -> float:
        return float(self._tool_cost)

    @property
    def model_cost_usd(self) -> float:
        return float(self._model_cost)

    @property
    def cost_left(self) -> float | None:
        """``max_cost_usd - spent`` (None without a cost limit)."""
        m = self.max_cost
        return None if m is None else float(m - self.spent)

    # -- model turns (the runner counts them from model.call events) ----------------------------

    def count_turn(self) -> BudgetCheck:
        """Count one model call; the answer says whether it is still within ``max_turns``."""
        with self._lock:
            self.turns += 1
            if self.budget is not None and self.turns > self.budget.max_turns:
                return BudgetCheck(False, "max_turns", float(self.budget.max_turns), float(self.turns))
            return OK

    def add_model_cost(self, cost_usd: float) -> BudgetCheck:
        """Add a model call's cost; the answer says whether the run is now over ``max_cost_usd``."""
        cost = _money(cost_usd)
        with self._lock:
            if cost:
                self._model_cost += cost
            m = self._max_cost
            if m is not None and self.spent > m:
                return BudgetCheck(False, "max_cost_usd", float(m), float(self.spent))
            return OK

    # -- tool calls (the gateway) ----------------------------------------------------------------

    def count_tool_call(self) -> int:
        """Count a call that reached the gateway; returns the new count."""
        with self._lock:
            self.tool_calls += 1
            return self.tool_calls

    def check_tool(self, cost_usd: float) -> BudgetCheck:
        """Is the call being checked (already counted) within ``max_tool_calls``, and would its cost
        keep the run within ``max_cost_usd``? Nothing is charged."""
        with self._lock:
            return self._check_locked(_money(cost_usd))

    def charge_tool(self, cost_usd: float) -> BudgetCheck:
        """Charge a tool's cost just before its handler runs — atomically re-checked, so parallel
        calls that each passed ``check_tool`` cannot overspend together."""
        cost = _money(cost_usd)
        with self._lock:
            m = self._max_cost
            if m is not None and self.spent + cost > m:
                return BudgetCheck(False, "max_cost_usd", float(m), float(self.spent + cost))
            if cost:
                self._tool_cost += cost
            return OK

    def add_tool_cost(self, cost_usd: float | Decimal) -> BudgetCheck:
        """Add what a call reported it cost once it ran (a remote A2A agent's ``cost_usd``): spent money is
        always counted; the answer says whether the run is now over ``max_cost_usd``."""
        cost = _money(cost_usd)
        with self._lock:
            if cost:
                self._tool_cost += cost
            m = self._max_cost
            if m is not None and self.spent > m:
                return BudgetCheck(False, "max_cost_usd", float(m), float(self.spent))
            return OK

    def _check_locked(self, cost: Decimal) -> BudgetCheck:
        if self.budget is not None and self.tool_calls > self.budget.max_tool_calls:
            return BudgetCheck(
                False, "max_tool_calls", float(self.budget.max_tool_calls), float(self.tool_calls)
            )
        m = self._max_cost
        if m is not None and self.spent + cost > m:
            return BudgetCheck(False, "max_cost_usd", float(m), float(self.spent + cost))
        return OK

    def snapshot(self) -> dict[str, float | int | None]:
        """Counters for reports and ``run.completed``."""
        return {
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "cost_usd": self.cost_usd,
            "cost_left": self.cost_left,
        }
