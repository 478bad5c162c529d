"""Trajectory score: the called tools against a reference sequence (DESIGN §7, ACCEPTANCE ch10).

    score = max(0, base − min(0.10 × extra calls, 0.30) − 0.50 × [a forbidden tool was called])

rounded to 3 places. ``extra calls`` counts every call to a tool outside the reference (forbidden
ones included, as in the design source: the bad run is 0.5 − 0.1 − 0.5 → 0). The base depends on
the mode:

- ``in_order``: share of the reference found as an ordered subsequence of the calls — the longest
  common subsequence over the reference length (the source's greedy scan under-counts when the first
  expected tool is missing; the LCS is the best ordered match);
- ``any_order``: share of the reference found as a multiset;
- ``strict``: 1 if the calls equal the reference, else the ``in_order`` base;
- ``superset``: 1 if every reference tool was called, else the share (distinct tools) called; extra
  calls are not penalised;
- ``subset``: 1 if no tool outside the reference was called, else 0.

An F1 is reported beside it (LCS-based for ``strict``/``in_order``, multiset overlap otherwise); it
helps reading partial credit and never gates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from portagent.contracts.suite import TrajectoryMode

EXTRA_PENALTY = 0.10
EXTRA_PENALTY_CAP = 0.30
FORBIDDEN_PENALTY = 0.50
ORDERED_MODES: frozenset[str] = frozenset({"strict", "in_order"})


@dataclass(frozen=True)
class TrajectoryResult:
    """A trajectory judgement with its explanations."""

    score: float
    """The gated score, in [0, 1], 3 places."""
    base: float
    """The mode's base before penalties."""
    f1: float
    """F1 of calls vs reference (reported, not gated)."""
    missing: tuple[str, ...]
    """Reference tools never called (multiset difference; distinct tools for ``superset``)."""
    extras: tuple[str, ...]
    """Calls to tools outside the reference, in call order."""
    forbidden: tuple[str, ...]
    """Forbidden tools called, distinct, in order of first call."""
    out_of_order: bool
    """Ordered mode, and the tools were there but not in the reference order."""
    explanations: tuple[str, ...]
    """One sentence per deduction, in a fixed order: forbidden, missing, order, extras."""


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def multiset_overlap(a: Sequence[str], b: Sequence[str]) -> int:
    return sum((Counter(a) & Counter(b)).values())


def _arrow(tools: Sequence[str]) -> str:
    return " → ".join(tools) if tools else "(none)"


def _share(found: int, total: int) -> float:
    return 1.0 if total == 0 else found / total


def _f1(matched: int, n_actual: int, n_ref: int) -> float:
    if n_actual == 0 and n_ref == 0:
        return 1.0
    if matched == 0:
        return 0.0
    p, r = matched / n_actual, matched / n_ref
    return round(2 * p * r / (p + r), 3)


def score_trajectory(
    called: Sequence[str],
    reference: Sequence[str],
    forbidden: Sequence[str],
    mode: TrajectoryMode,
) -> TrajectoryResult:
    """Judge the called tool names against the reference under ``mode``."""
    called, reference = list(called), list(reference)
    ref_set, forbidden_set = set(reference), set(forbidden)
    ordered = mode in ORDERED_MODES
    lcs = lcs_length(reference, called)
    overlap = multiset_overlap(reference, called)

    if mode == "in_order":
        base = _share(lcs, len(reference))
    elif mode == "strict":
        base = 1.0 if called == reference else _share(lcs, len(reference))
    elif mode == "any_order":
        base = _share(overlap, len(reference))
    elif mode == "superset":
        base = _share(len(ref_set & set(called)), len(ref_set))
    else:  # subset
        base = 1.0 if all(t in ref_set for t in called) else 0.0

    extras = tuple(t for t in called if t not in ref_set)
    penalty = 0.0 if mode == "superset" else min(EXTRA_PENALTY * len(extras), EXTRA_PENALTY_CAP)
    hit_forbidden = tuple(dict.fromkeys(t for t in called if t in forbidden_set))
    if hit_forbidden:
        penalty += FORBIDDEN_PENALTY
    score = max(0.0, round(base - penalty, 3))

    if mode == "superset":
        missing = tuple(t for t in dict.fromkeys(reference) if t not in set(called))
    else:
        missing = tuple((Counter(reference) - Counter(called)).elements())
        missing = tuple(sorted(missing, key=reference.index))
    out_of_order = ordered and overlap > lcs

    why: list[str] = [f"forbidden tool called: {t}" for t in hit_forbidden]
    why += [f"missing tool: {t} (expected {_arrow(reference)})" for t in dict.fromkeys(missing)]
    if out_of_order:
        why.append(f"tools out of order: expected {_arrow(reference)}, called {_arrow(called)}")
    elif mode == "strict" and called != reference and not missing:
        why.append(
            f"sequence differs from the strict reference: expected {_arrow(reference)}, called {_arrow(called)}"
        )
    plain_extras = [t for t in dict.fromkeys(extras) if t not in forbidden_set]
    if plain_extras:
        if mode == "superset":
            why.append(f"extra tools (tolerated in superset mode): {', '.join(plain_extras)}")
        elif mode == "subset":
            why.append(f"tools outside the reference (subset mode): {', '.join(plain_extras)}")
        else:
            n = sum(1 for t in extras if t not in forbidden_set)
            why.append(
                f"extra tool{'s' if n != 1 else ''} not in the reference ({n} call{'s' if n != 1 else ''}): "
                f"{', '.join(plain_extras)}"
            )

    f1 = _f1(lcs if ordered else overlap, len(called), len(reference))
    return TrajectoryResult(
        score, round(base, 3), f1, missing, extras, hit_forbidden, out_of_order, tuple(why)
    )
