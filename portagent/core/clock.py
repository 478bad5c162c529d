"""Injectable clock and id factories: nothing deep in the logic calls ``datetime.now()`` or ``uuid4()``."""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...
    def monotonic(self) -> float: ...


class SystemClock:
    """Real time."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class FixedClock:
    """Deterministic clock: starts at ``start`` and moves ``step_ms`` on every reading."""

    def __init__(self, start: datetime | None = None, step_ms: float = 1.0) -> None:
        self._t = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._step = timedelta(milliseconds=step_ms)
        self._mono = 0.0

    def now(self) -> datetime:
        t = self._t
        self._t += self._step
        return t

    def monotonic(self) -> float:
        self._mono += self._step.total_seconds()
        return self._mono


def iso(dt: datetime) -> str:
    """``2026-01-01T00:00:00.000Z`` (UTC, milliseconds): every trace timestamp."""
    if dt.tzinfo is not UTC:  # SystemClock's readings are UTC already (this runs for every trace event)
        dt = dt.astimezone(UTC)
    return dt.isoformat(timespec="milliseconds")[:-6] + "Z"


class IdFactory:
    """W3C trace/span ids and run ids. Random by default; seeded ones are deterministic."""

    def __init__(self, seed: str | None = None) -> None:
        self._seed = seed
        self._counter = itertools.count(1)

    def _hex(self, n: int) -> str:
        if self._seed is None:
            return os.urandom(n // 2).hex()
        h = hashlib.sha256(f"{self._seed}:{next(self._counter)}".encode()).hexdigest()
        return h[:n]

    def trace_id(self) -> str:
        return self._hex(32)

    def span_id(self) -> str:
        return self._hex(16)

    def run_id(self) -> str:
        return "run_" + self._hex(16)

    def approval_id(self) -> str:
        return "apr_" + self._hex(12)

    def effect_id(self) -> str:
        return "eff_" + self._hex(12)


IdFactoryMaker = Callable[[str | None], IdFactory]
