"""A run's states, on their own so a suite can name one without importing the trace models."""

from __future__ import annotations

from typing import Literal

RunStatus = Literal[
    "created",
    "running",
    "waiting_approval",
    "completed",
    "failed",
    "budget_exhausted",
    "cancelled",
    "duplicate",
]
"""States of a run."""
