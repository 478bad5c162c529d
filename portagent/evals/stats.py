"""Small, exact statistics for eval results (pure functions, standard library only).

- ``wilson_interval(k, n)``: Wilson score interval at z = 1.96 (the design source's value),
  ``(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``; ``n = 0`` gives ``(0, 1)``.
- ``pass_at_k(n, c, k)``: probability that at least one of k runs drawn without replacement from n
  recorded runs (c of them passing) passes — the unbiased estimator ``1 − C(n−c, k) / C(n, k)``
  (Chen et al. 2021, HumanEval).
- ``pass_hat_k(n, c, k)``: probability that all k drawn runs pass — ``C(c, k) / C(n, k)``
  (pass^k, Yao et al. 2024, τ-bench). Both need ``1 ≤ k ≤ n``.
- ``flake_rate(groups)``: share of groups (case × provider × agent version) with both passing and
  failing runs, over the groups with at least two runs; None when no group was repeated (one run
  cannot show flakiness, so "0 %" would be a claim nobody measured).
- ``cost_per_accepted_task(total, accepted, human)``: ``Σ(c_i + h_i) / Σ 1[G_i = 1]``; None when no
  run was accepted (the cost of an accepted task is then unbounded, and JSON has no infinity).
- ``percentile(values, q)``: nearest-rank (the ⌈q/100 · n⌉-th smallest value): always a value that
  was observed, never interpolated; on small samples it leans to the pessimistic side, which is what
  a p95 budget wants.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

Z95 = 1.96


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``n``."""
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 ≤ successes ≤ n, got {successes}/{n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # the bounds are exactly 0 and 1 at the extremes; float rounding would give 0.9999999999999999
    low = 0.0 if successes == 0 else max(0.0, center - margin)
    high = 1.0 if successes == n else min(1.0, center + margin)
    return low, high


def _check_k(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 ≤ c ≤ n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 ≤ k ≤ n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k runs passes), unbiased from n runs with c passes."""
    _check_k(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all k runs pass) — pass^k — unbiased from n runs with c passes."""
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def flake_rate(groups: Iterable[Sequence[bool]]) -> float | None:
    """Share of repeated groups whose runs disagree; None when no group has two runs."""
    repeated = [g for g in groups if len(g) >= 2]
    if not repeated:
        return None
    return sum(1 for g in repeated if any(g) and not all(g)) / len(repeated)


def cost_per_accepted_task(total_cost_usd: float, accepted: int, human_cost_usd: float = 0.0) -> float | None:
    """Total (machine + human) cost divided by the runs that passed the gate; None when none did."""
    if accepted < 0:
        raise ValueError(f"accepted must be ≥ 0, got {accepted}")
    if accepted == 0:
        return None
    return (total_cost_usd + human_cost_usd) / accepted


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in (0, 100]); None for no values."""
    if not 0 < q <= 100:
        raise ValueError(f"q must be in (0, 100], got {q}")
    ordered = sorted(values)
    if not ordered:
        return None
    # round() first: 95 / 100 * 20 must be rank 19, not ceil(19.000000000000004) = 20
    rank = max(1, math.ceil(round(q * len(ordered) / 100, 9)))
    return ordered[rank - 1]
