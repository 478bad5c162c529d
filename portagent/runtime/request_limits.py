"""Per-request limits on a provider's model calls in this process (issue 17): the gate the run journal's
loopback proxy (``recording/http_proxy.py``, ``HttpProxy.gate``) passes every request through before it
goes upstream.

The eval's scheduler (``runtime.limits``) decides when a *run* may start; this gate spaces the *requests*
themselves, so a run's own model calls — which go back to back — respect the provider's rate too:

- **requests per minute**: one unit of a leaky bucket (``aiolimiter.AsyncLimiter``) per request.
- **tokens per minute**: a request's tokens are only known from its answer (``usage`` in the body, for
  each vendor's shape, streamed or not); what the answers used is paid into the token bucket before the
  next request goes, so any window's tokens respect the rate, one request late at most.
- **Retry-After / backoff**: a 429, 503 or 529 pauses every request of the provider in this process — not
  only the SDK's own retry — for the answer's ``retry-after-ms`` / ``Retry-After`` (seconds or a date;
  Gemini's ``RetryInfo.retryDelay`` in the body), capped to ``max_retry_after_s``, or without one for an
  equal-jitter backoff ``d/2 + U(0, d/2)``, ``d = min(cap, base · 2^(n−1))`` (n: consecutive signals).
  The pause is set before the answer is relayed to the SDK, so the SDK's retry cannot slip past it.

The limits are per provider and per process: ``eval --live`` hands each worker process its share of a
provider's rate (the rate divided by the processes that may run that provider at once) through the
``PORTAGENT_REQUEST_LIMITS`` variable (``Scheduler.request_env``). The buckets live on one private event
loop thread per process (``aiolimiter`` is asyncio-only; the proxy serves each connection on a thread of
its own, which waits here).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

REQUEST_LIMITS_ENV = "PORTAGENT_REQUEST_LIMITS"
"""JSON ``{provider: {requests_per_minute, tokens_per_minute, burst_s, …}}``: this process's share."""

PAUSE_STATUSES = frozenset({429, 503, 529})
"""Answers that pause the provider (rate limited, unavailable, overloaded)."""


@dataclass(frozen=True)
class RequestLimits:
    """One provider's per-request limits in one process (the ``ProviderLimits`` fields that apply)."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_s: float = 60.0
    max_retry_after_s: float = 600.0
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestLimits:
        names = {f.name for f in fields(cls)}
        values: dict[str, Any] = {
            k: (float(v) if v is not None else None) for k, v in data.items() if k in names
        }
        return cls(**values)


def bucket(per_minute: float | None, burst_s: float) -> Any:
    """A leaky bucket for ``per_minute`` units, ``burst_s`` seconds of it at once (at least one unit)."""
    from aiolimiter import AsyncLimiter

    if per_minute is None:
        return None
    capacity = per_minute * burst_s / 60
    if capacity < 1:  # at least one unit at a time, spaced at the rate
        return AsyncLimiter(1, 60 / per_minute)
    return AsyncLimiter(capacity, burst_s)


@dataclass
class GateReport:
    """What a gate did (for tests and the journal's reader)."""

    requests: int = 0
    waited_s: float = 0.0
    pauses: list[dict[str, Any]] = field(default_factory=list)
    """Each: ``{"status": 429, "seconds": s, "why": "retry-after" | "backoff"}``."""
    tokens: int = 0


class RequestGate:
    """One provider's gate in this process (see the module docstring). Thread-safe: the proxy's
    connection threads call it concurrently."""

    def __init__(
        self,
        provider: str,
        limits: RequestLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.provider = provider
        self.limits = limits
        self.report = GateReport()
        self._clock = clock
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._signals = 0
        self._debt = 0.0  # tokens answers used, not yet paid into the token bucket
        self._requests = bucket(limits.requests_per_minute, limits.burst_s)
        self._tokens = bucket(limits.tokens_per_minute, limits.burst_s)

    # -- the proxy's hook ---------------------------------------------------------------------------

    def before_forward(self, body: bytes) -> None:
        """Block until the request may go upstream (pause over, its share of the buckets taken)."""
        t0 = self._clock()
        asyncio.run_coroutine_threadsafe(self._admit(), _loop()).result()
        with self._lock:
            self.report.requests += 1
            self.report.waited_s += self._clock() - t0

    def on_response(self, status: int, headers: Mapping[str, str]) -> None:
        """The upstream's status and headers, before they are relayed: a 429/503/529 pauses the provider."""
        if status not in PAUSE_STATUSES:
            if 200 <= status < 300:
                with self._lock:
                    self._signals = 0
            return
        self._pause(status, retry_after(headers))

    def on_complete(self, status: int, body: bytes) -> None:
        """The whole answer: its tokens are owed to the token bucket; a Gemini 429's body hint."""
        if status in PAUSE_STATUSES:
            hint = _gemini_retry_delay(body)
            if hint is not None:
                self._pause(status, hint, counted=True)
            return
        used = usage_tokens(body)
        with self._lock:
            self.report.tokens += used
            if self._tokens is not None:
                self._debt += used

    # -- inside ---------------------------------------------------------------------------------------

    async def _admit(self) -> None:
        await self._pause_over()
        if self._requests is not None:
            await self._requests.acquire(1)
        if self._tokens is not None:
            while True:
                with self._lock:
                    pay = min(self._debt, float(self._tokens.max_rate))
                    self._debt -= pay
                if pay <= 0:
                    break
                await self._tokens.acquire(pay)
        await self._pause_over()  # a 429 that arrived while it waited for the buckets

    async def _pause_over(self) -> None:
        while (wait := self._paused_until - self._clock()) > 0:
            await asyncio.sleep(wait)

    def _pause(self, status: int, hint: float | None, *, counted: bool = False) -> None:
        lim = self.limits
        with self._lock:
            if not counted:
                self._signals += 1
            if hint is not None:
                seconds, why = min(hint, lim.max_retry_after_s), "retry-after"
            else:
                d = min(lim.backoff_cap_s, lim.backoff_base_s * 2 ** (self._signals - 1))
                seconds, why = d / 2 + self._rng.uniform(0, d / 2), "backoff"
            until = self._clock() + seconds
            if until > self._paused_until:
                self._paused_until = until
                self.report.pauses.append({"status": status, "seconds": round(seconds, 3), "why": why})


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds, fractional ones too, or an HTTP
    date); None when absent or unreadable."""
    low = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = low.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            import email.utils

            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                return None
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


_RETRY_DELAY = re.compile(rb'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def _gemini_retry_delay(body: bytes) -> float | None:
    m = _RETRY_DELAY.search(body)
    return float(m.group(1)) if m else None


_INPUT_KEYS = ("input_tokens", "prompt_tokens", "promptTokenCount")
_OUTPUT_KEYS = ("output_tokens", "completion_tokens", "candidatesTokenCount")
_EXTRA_KEYS = ("cache_creation_input_tokens", "thoughtsTokenCount", "toolUsePromptTokenCount")
"""Tokens a vendor reports beside its input and output counts, and counts against its token rate:
Anthropic's ``input_tokens`` leaves out the tokens written to the prompt cache (they count toward its
input-tokens-per-minute limit; cache *reads* do not, so they are left out here too); Gemini's
candidates leave out the thinking tokens and the prompt the tool-use results added (its
``totalTokenCount`` includes both). OpenAI's input and output already include their cached and
reasoning parts."""


def usage_tokens(body: bytes) -> int:
    """The tokens an answer counts against its vendor's token rate: input + output as each vendor reports
    them, plus what a vendor reports beside them (``_EXTRA_KEYS``) — OpenAI Responses / Chat Completions,
    Anthropic Messages, Gemini, whole or streamed (SSE ``data:`` lines, a JSON array). Counts repeated
    across a stream's events are cumulative, so the largest of each is taken. 0 when none is found."""
    docs: list[Any] = []
    text = body.decode("utf-8", errors="replace")
    try:
        docs.append(json.loads(text))
    except ValueError:
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    docs.append(json.loads(line[5:].strip()))
                except ValueError:
                    continue
    best: dict[str, int] = {}
    counted = {*_INPUT_KEYS, *_OUTPUT_KEYS, *_EXTRA_KEYS}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in counted:
                    if isinstance(v, int) and not isinstance(v, bool):
                        best[k] = max(best.get(k, 0), v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(docs)
    return (
        max((best.get(k, 0) for k in _INPUT_KEYS), default=0)
        + max((best.get(k, 0) for k in _OUTPUT_KEYS), default=0)
        + sum(best.get(k, 0) for k in _EXTRA_KEYS)
    )


# -- this process's gates -----------------------------------------------------------------------------

_STATE: dict[str, Any] = {"pid": 0, "raw": None, "gates": {}, "loop": None}
_STATE_LOCK = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    with _STATE_LOCK:
        loop = _STATE["loop"]
        if loop is None or _STATE["pid"] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="portagent-request-limits", daemon=True).start()
            _STATE["loop"], _STATE["pid"] = loop, os.getpid()
            _STATE["gates"], _STATE["raw"] = {}, None
        return loop  # type: ignore[no-any-return]


def request_gate(provider: str) -> RequestGate | None:
    """The gate for ``provider``'s requests in this process, from ``PORTAGENT_REQUEST_LIMITS``; None
    when it names no limit for the provider (the proxy then forwards at once). One gate per provider
    and process, kept while the variable is unchanged, so consecutive runs share its buckets."""
    raw = os.environ.get(REQUEST_LIMITS_ENV)
    if not raw:
        return None
    _loop()
    with _STATE_LOCK:
        if _STATE["raw"] != raw:
            _STATE["raw"], _STATE["gates"] = raw, {}
        gates: dict[str, RequestGate | None] = _STATE["gates"]
        if provider not in gates:
            try:
                spec = json.loads(raw).get(provider)
                limits = RequestLimits.from_dict(spec) if isinstance(spec, dict) else None
            except (ValueError, TypeError, AttributeError):
                limits = None  # set by portagent itself: an unreadable value limits nothing
            gates[provider] = RequestGate(provider, limits) if limits is not None else None
        return gates[provider]
