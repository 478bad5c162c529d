"""Run state, budgets, clock/ids and the runner."""
