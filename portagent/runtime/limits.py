"""Live runs that respect vendors: the scheduler that decides when the next run of a provider may start.

The eval's pool asks ``Scheduler.admit(task)`` before handing a run to a worker and tells it
``Scheduler.finished(task, outcome)`` when the run is back. Per provider (``Suite.limits``, ``eval --limit``):

- **max_concurrency**: runs in flight at once (the pool also starts no more workers than this).
- **requests / tokens per minute**: two leaky buckets (``aiolimiter.AsyncLimiter``). A run's requests
  are not known before it runs, so it is admitted for its provider's running mean (until the first run
  of the provider is back, one run at a time); what it really used is settled when it ends — a run that
  used more leaves a debt the next admission pays first. ``burst_s`` sets how much of a minute's rate
  may go at once. Each request is held too, in the process that makes it (``runtime.request_limits``:
  the run journal's proxy waits on that process's share of the rate, ``Scheduler.request_env``).
- **Retry-After and backoff**: a run whose provider answered 429 / 503 / 529 (even when the vendor client's
  own retry then got through) pauses every new run of that provider for the ``Retry-After`` it sent, or,
  without one, for a jittered backoff ``d/2 + U(0, d/2)`` with ``d = min(cap, base · 2^(n−1))`` (n: the
  provider's consecutive signals). A run that *failed* with a retryable provider error is run again
  after that pause — only when it called nothing but ``read``/``compute`` tools, so a second attempt
  repeats no effect — up to ``max_attempts``.
- **max_spend_usd** (the whole eval, judges included): new runs start only while the spend so far, plus
  the in-flight runs at the mean cost of a run, stays under the cap; once it is reached, every run not
  started is reported ``not_run`` with the reason.

Limits, pauses and retries apply to ``--live`` (replays and the emulator have no vendor to respect);
the spend cap applies in every mode (replayed and emulated costs are priced like live ones).
The buckets live on a private event loop of the eval process: ``aiolimiter`` is asyncio-only, and the
pool's loop is a plain one.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from portagent.contracts.suite import ProviderLimits
from portagent.runtime.eval_plan import RunOutcome, RunTask

POLL_S = 0.05
"""How often a provider blocked only by its buckets is asked again."""


@dataclass
class ProviderReport:
    """What the scheduler did for one provider (``eval.json`` → ``scheduling``)."""

    provider: str
    admitted: int = 0
    retries: int = 0
    rate_limited_runs: int = 0
    pauses: list[dict[str, Any]] = field(default_factory=list)
    """Each pause: ``{"after": run label, "seconds": s, "why": "retry-after" | "backoff"}``."""
    max_in_flight: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "admitted": self.admitted,
            "retries": self.retries,
            "rate_limited_runs": self.rate_limited_runs,
            "pauses": self.pauses,
            "max_in_flight": self.max_in_flight,
        }


class _Lane:
    """One provider's limits and state."""

    def __init__(self, provider: str, limits: ProviderLimits) -> None:
        self.limits = limits
        self.report = ProviderReport(provider)
        self.in_flight = 0
        self.finished = 0
        self.used_requests = 0
        self.used_tokens = 0
        self.debt = [0.0, 0.0]  # requests, tokens
        self.paused_until = 0.0
        self.signals = 0  # consecutive rate-limit signals (backoff exponent)
        self.buckets: list[Any] = [
            _bucket(limits.requests_per_minute, limits.burst_s),
            _bucket(limits.tokens_per_minute, limits.burst_s),
        ]

    def estimate(self) -> list[float]:
        """Requests and tokens a run of this provider is admitted for (its running mean)."""
        if not self.finished:
            return [1.0, 0.0]
        return [self.used_requests / self.finished, self.used_tokens / self.finished]


def _bucket(per_minute: float | None, burst_s: float) -> Any:
    from portagent.runtime.request_limits import bucket

    return bucket(per_minute, burst_s)


class Scheduler:
    """When may the next run of a provider start (see the module docstring)."""

    def __init__(
        self,
        limits: Mapping[str, ProviderLimits] | None = None,
        *,
        max_spend_usd: float | None = None,
        live: bool = True,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        whole: str = "the eval",
    ) -> None:
        self._whole = whole
        """What the spend cap covers, as its refusal names it (``the eval``, ``the recording``)."""
        self._limits = dict(limits or {}) if live else {}
        rated = [p for p, lim in self._limits.items() if lim.requests_per_minute or lim.tokens_per_minute]
        if rated and importlib.util.find_spec("aiolimiter") is None:
            from portagent.contracts.errors import UsageError

            raise UsageError(
                f"requests/tokens per minute for {', '.join(rated)} need the 'aiolimiter' package: "
                "pip install 'portagent[scale]'"
            )
        self._live = live
        self.max_spend_usd = max_spend_usd
        self._clock = clock
        self._rng = rng or random.Random()
        self._lanes: dict[str, _Lane] = {}
        self._loop = asyncio.new_event_loop()
        self.spent_usd = 0.0
        self._costed = 0
        self._in_flight = 0
        self.attempts: dict[int, int] = {}
        self._admitted: dict[int, list[float]] = {}
        self.stopped: str | None = None
        """Why no new run starts any more (the spend cap), once it happened."""

    @property
    def active(self) -> bool:
        """Does the scheduler change anything (limits for a live eval, or a spend cap)?"""
        return bool(self._limits) or self.max_spend_usd is not None

    def close(self) -> None:
        self._loop.close()

    def lane(self, provider: str) -> _Lane:
        if provider not in self._lanes:
            self._lanes[provider] = _Lane(provider, self._limits.get(provider, ProviderLimits()))
        return self._lanes[provider]

    def request_env(self, processes: int) -> dict[str, str]:
        """The per-request limits (``runtime.request_limits``) for processes that make this eval's runs,
        as the ``PORTAGENT_REQUEST_LIMITS`` variable: each rated provider's requests/tokens per minute
        divided by the processes that may run it at once (``processes``, or fewer by ``max_concurrency``),
        with its Retry-After cap and backoff. Empty when nothing is rated (or the eval is not live)."""
        import json

        from portagent.runtime.request_limits import REQUEST_LIMITS_ENV

        out: dict[str, dict[str, float | None]] = {}
        for provider, lim in self._limits.items():
            if not (lim.requests_per_minute or lim.tokens_per_minute):
                continue
            n = max(1, min(processes, lim.max_concurrency or processes))
            out[provider] = {
                "requests_per_minute": lim.requests_per_minute / n if lim.requests_per_minute else None,
                "tokens_per_minute": lim.tokens_per_minute / n if lim.tokens_per_minute else None,
                "burst_s": lim.burst_s,
                "max_retry_after_s": lim.max_retry_after_s,
                "backoff_base_s": lim.backoff_base_s,
                "backoff_cap_s": lim.backoff_cap_s,
            }
        return {REQUEST_LIMITS_ENV: json.dumps(out, sort_keys=True)} if out else {}

    @contextlib.contextmanager
    def requests_limited(self, processes: int = 1) -> Iterator[None]:
        """This process's requests limited (``request_env``) while the block runs (in-process runs)."""
        env = self.request_env(processes)
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def max_workers(self, provider: str) -> int | None:
        """The most worker processes worth starting for a provider (its ``max_concurrency``)."""
        return self.lane(provider).limits.max_concurrency if self._live else None

    # -- admission ----------------------------------------------------------------------------------

    def _spend_allows(self) -> bool:
        cap = self.max_spend_usd
        if cap is None:
            return True
        if self.spent_usd >= cap:
            self.stopped = self.stopped or (
                f"not run: {self._whole}'s spend reached ${self.spent_usd:.4f} of --max-spend-usd ${cap:g}"
            )
            return False
        if self._in_flight == 0:
            return True
        if not self._costed:  # no run's cost known yet: one at a time until one is
            return False
        mean = self.spent_usd / self._costed
        # the runs in flight will cost about the mean each: wait for them rather than overshoot
        return self.spent_usd + (self._in_flight + 1) * mean <= cap

    def wait_s(self, provider: str) -> float:
        """Seconds until ``admit`` may succeed for ``provider`` (a poll interval when only a bucket or the
        concurrency limit holds it; 0 when it may go now)."""
        lane = self.lane(provider)
        now = self._clock()
        if lane.paused_until > now:
            return lane.paused_until - now
        return 0.0 if self._may_start(lane, probe=True) else POLL_S

    def _may_start(self, lane: _Lane, *, probe: bool = False) -> bool:
        lim = lane.limits
        if lim.max_concurrency is not None and lane.in_flight >= lim.max_concurrency:
            return False
        rated = lane.buckets[0] is not None or lane.buckets[1] is not None
        if rated and not lane.finished and lane.in_flight:  # no estimate yet: one run at a time
            return False
        amounts = self._amounts(lane)
        return all(
            b is None or self._loop.run_until_complete(_has(b, a))
            for b, a in zip(lane.buckets, amounts, strict=True)
        )

    def _amounts(self, lane: _Lane) -> list[float]:
        est = lane.estimate()
        out = []
        for i, b in enumerate(lane.buckets):
            want = est[i] + lane.debt[i]
            out.append(min(want, b.max_rate) if b is not None else 0.0)
        return out

    def admit(self, task: RunTask) -> bool:
        """Start ``task`` now if every limit allows (acquiring its share of the buckets)."""
        lane = self.lane(task.provider)
        if not self._spend_allows():
            return False
        if self._live and (lane.paused_until > self._clock() or not self._may_start(lane)):
            return False
        if self._live:
            est = lane.estimate()
            self._admitted[task.index] = est
            for i, (b, pay) in enumerate(zip(lane.buckets, self._amounts(lane), strict=True)):
                if b is not None:
                    if pay > 0:
                        self._loop.run_until_complete(b.acquire(pay))
                    lane.debt[i] = est[i] + lane.debt[i] - pay  # what the bucket could not take yet
        lane.in_flight += 1
        self._in_flight += 1
        lane.report.admitted += 1
        lane.report.max_in_flight = max(lane.report.max_in_flight, lane.in_flight)
        self.attempts[task.index] = self.attempts.get(task.index, 0) + 1
        return True

    # -- results ------------------------------------------------------------------------------------

    def finished(self, task: RunTask, outcome: RunOutcome) -> bool:
        """Account a run that came back; True when it should run again (after the provider's pause)."""
        lane = self.lane(task.provider)
        lane.in_flight -= 1
        self._in_flight -= 1
        if outcome.score.cost_usd is not None:
            self.spent_usd += outcome.score.cost_usd
            self._costed += 1
        sig = outcome.signals
        if sig is None or not self._live:
            return False
        admitted = self._admitted.pop(task.index, [0.0, 0.0])
        lane.finished += 1
        lane.used_requests += sig.requests
        lane.used_tokens += sig.tokens
        # what the run used beyond what it was admitted for is paid by the next admission
        lane.debt[0] += max(0.0, sig.requests - admitted[0])
        lane.debt[1] += max(0.0, sig.tokens - admitted[1])
        if sig.rate_limited or sig.retryable:
            lane.report.rate_limited_runs += sig.rate_limited
            lane.signals += 1
            self._pause(lane, task, sig.retry_after_s)
        else:
            lane.signals = 0
        retry = (
            sig.retryable and sig.retry_safe and self.attempts.get(task.index, 1) < lane.limits.max_attempts
        )
        if retry:
            lane.report.retries += 1
        return retry

    def _pause(self, lane: _Lane, task: RunTask, retry_after: float | None) -> None:
        lim = lane.limits
        if retry_after is not None:
            seconds, why = min(retry_after, lim.max_retry_after_s), "retry-after"
        else:
            d = min(lim.backoff_cap_s, lim.backoff_base_s * 2 ** (lane.signals - 1))
            seconds, why = d / 2 + self._rng.uniform(0, d / 2), "backoff"
        until = self._clock() + seconds
        if until > lane.paused_until:
            lane.paused_until = until
            lane.report.pauses.append({"after": task.label, "seconds": round(seconds, 3), "why": why})

    def report(self) -> dict[str, Any]:
        """What the scheduler did (``eval.json`` → ``scheduling``)."""
        return {
            "spent_usd": round(self.spent_usd, 6),
            "max_spend_usd": self.max_spend_usd,
            "stopped": self.stopped,
            "providers": [lane.report.as_dict() for lane in self._lanes.values()],
        }


async def _has(bucket: Any, amount: float) -> bool:
    return bool(bucket.has_capacity(amount))


def merged_limits(suite: Mapping[Any, ProviderLimits], flags: list[str] | None) -> dict[str, ProviderLimits]:
    """The suite's ``limits`` with ``--limit PROVIDER:FIELD=VALUE[,FIELD=VALUE…]`` flags over them."""
    from pydantic import ValidationError

    from portagent.contracts.errors import UsageError
    from portagent.contracts.providers import PROVIDERS

    out = dict(suite)
    for flag in flags or []:
        provider, sep, rest = flag.partition(":")
        provider = provider.strip()
        if not sep or provider not in PROVIDERS or not rest.strip():
            raise UsageError(
                f"--limit {flag!r}: expected PROVIDER:FIELD=VALUE[,FIELD=VALUE…] with PROVIDER one of "
                f"{', '.join(PROVIDERS)} (e.g. --limit openai:max_concurrency=4,requests_per_minute=500)"
            )
        values: dict[str, str] = {}
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip() or not value.strip():
                raise UsageError(f"--limit {flag!r}: {item!r} is not FIELD=VALUE")
            values[key.strip()] = value.strip()
        base = out.get(provider, ProviderLimits()).model_dump(exclude_unset=True)
        try:
            out[provider] = ProviderLimits.model_validate({**base, **values})
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            known = ", ".join(ProviderLimits.model_fields)
            raise UsageError(f"--limit {flag!r}: {where}: {first['msg']} (fields: {known})") from None
    return out
