"""The explicit router (design source ch. 09): score every capability, gate it, pick, leave a receipt.

Pure functions over ``contracts.router``: nothing here runs a route. The order is the book's —
score first, then the gate, so a high score never overrides missing scope, the wrong effect or an
over-budget cost — with the gaps the book's own code leaves closed:

- **least privilege**: a route whose effect is *higher* than the request's is stopped (the book's code
  let a ``read`` request run on a ``publish`` route); fallbacks go only to equal or lower effect;
- **latency budget**: a p95 over the request's budget reviews (or stops, per spec) the route; the book
  only noted it;
- **every alternative** is kept in the receipt (the book kept three).

Arithmetic is decimal and rounding half-up, so the worked example's 0.455 prints 0.46 as the book does.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from portagent.contracts._base import Contract
from portagent.contracts.router import (
    Capability,
    GateOutcome,
    RouteAlternative,
    RouteDecision,
    RouteRequest,
    RouterSpec,
    RouteWeights,
    effect_rank,
)

REASON_LOW_SEMANTIC = "poor semantic fit"
REASON_LOW_EFFECT = "insufficient effect"
REASON_HIGH_EFFECT = "higher effect than requested (least privilege)"
REASON_SLOW = "over the p95 latency budget"
REASON_COSTLY = "over the cost budget"
REASON_VALID = "valid candidate"
DECISION_RUN = "best route runnable within permissions and budget"
DECISION_REVIEW = "best route, but it needs approval for its effect or environment"
DECISION_STOP = "no route meets permissions, cost and contract"


class RouteSignals(Contract):
    """The six normalised signals of one candidate (each 0–1)."""

    semantic: float
    """S: semantic fit."""
    quality: float
    """Q: expected quality."""
    availability: float
    """A: availability."""
    latency: float
    """L: p95 latency / latency budget, capped at 1."""
    cost: float
    """C: cost / cost budget, capped at 1."""
    risk: float
    """K: the effect's operational risk."""


def _d(x: float) -> Decimal:
    # through str: 0.1 stays 0.1, not its binary neighbour, so half-up rounds what the book wrote
    return Decimal(str(x))


def normalize(value: float, maximum: float) -> Decimal:
    """``min(value / maximum, 1)``; 1 when the budget is 0 (anything costs all of nothing)."""
    if maximum <= 0:
        return Decimal(1)
    return min(_d(value) / _d(maximum), Decimal(1))


def overlap(required: list[str], offered: list[str]) -> Decimal:
    """Share of ``required`` found in ``offered``; 0.5 when nothing is required (no evidence either way)."""
    req = set(required)
    if not req:
        return Decimal("0.5")
    return Decimal(len(req & set(offered))) / Decimal(len(req))


def route_score(signals: RouteSignals, weights: RouteWeights) -> float:
    """``α·S + β·Q + γ·A − δ·L − ε·C − ζ·K``, rounded half-up to ``weights.places``."""
    w, s = weights, signals
    total = (
        _d(w.semantic) * _d(s.semantic)
        + _d(w.quality) * _d(s.quality)
        + _d(w.availability) * _d(s.availability)
        - _d(w.latency) * _d(s.latency)
        - _d(w.cost) * _d(s.cost)
        - _d(w.risk) * _d(s.risk)
    )
    return float(total.quantize(Decimal(1).scaleb(-w.places), rounding=ROUND_HALF_UP))


def signals_for(spec: RouterSpec, cap: Capability, req: RouteRequest) -> RouteSignals:
    return RouteSignals(
        semantic=float(overlap(req.required_tags, cap.tags)),
        quality=cap.quality,
        availability=cap.availability,
        latency=float(normalize(cap.p95_latency_ms, req.max_latency_ms)),
        cost=float(normalize(cap.cost_usd, req.max_cost_usd)),
        risk=spec.effect_risk[cap.effect],
    )


def gate(spec: RouterSpec, cap: Capability, req: RouteRequest) -> tuple[GateOutcome, list[str]]:
    """The candidate's gate and every reason found, in the book's ``permission_gate`` order: effect,
    scope, cost — each a stop — then review for a world-changing effect in prod or a sending/publishing
    A2A agent. The effect check runs both ways (too low cannot serve; too high must not)."""
    reasons: list[str] = []
    stop = False
    if float(overlap(req.required_tags, cap.tags)) < spec.min_semantic:
        reasons.append(REASON_LOW_SEMANTIC)
    asked, offered = effect_rank(req.effect), effect_rank(cap.effect)
    if offered < asked:
        reasons.append(REASON_LOW_EFFECT)
        stop = True
    elif offered > asked:
        reasons.append(REASON_HIGH_EFFECT)
        stop = True
    missing = sorted(set(cap.required_scope) - set(req.user_scope))
    if missing:
        reasons.append(f"missing scopes: {missing}")
        stop = True
    slow = cap.p95_latency_ms > req.max_latency_ms
    if slow:
        reasons.append(REASON_SLOW)
        stop = stop or spec.latency_gate == "stop"
    if cap.cost_usd > req.max_cost_usd:
        reasons.append(REASON_COSTLY)
        stop = True
    if not reasons:
        reasons.append(REASON_VALID)
    if stop:
        return "stop", reasons
    if review_causes(spec, cap, req):
        return "review", reasons
    return "run", reasons


def review_causes(spec: RouterSpec, cap: Capability, req: RouteRequest) -> list[str]:
    """Why a candidate that is not stopped needs a person's approval (empty: it may run): its effect in
    ``prod``, a sending/publishing A2A agent, a p95 over the latency budget. Said on the route's approval
    card, where the decision's own reason would describe another route."""
    causes: list[str] = []
    if req.environment == "prod" and cap.effect in spec.review_in_prod:
        causes.append(f"{cap.effect} effect in prod")
    if cap.kind == "a2a_agent" and cap.effect in spec.review_a2a:
        causes.append(f"{cap.effect} effect on an A2A agent")
    if cap.p95_latency_ms > req.max_latency_ms and spec.latency_gate == "review":
        causes.append(REASON_SLOW)
    return causes


def route(spec: RouterSpec, req: RouteRequest) -> RouteDecision:
    """Score and gate every capability; the best-scoring one whose gate is not ``stop`` wins (ties keep
    registry order). The receipt lists every candidate."""
    judged: list[tuple[Capability, RouteAlternative]] = []
    for cap in spec.registry:
        outcome, reasons = gate(spec, cap, req)
        alt = RouteAlternative(
            route_id=cap.route_id,
            kind=cap.kind,
            effect=cap.effect,
            version=cap.version,
            score=route_score(signals_for(spec, cap, req), spec.weights),
            gate=outcome,
            reasons=reasons,
        )
        judged.append((cap, alt))
    judged.sort(key=lambda pair: -pair[1].score)  # stable: equal scores keep registry order
    alternatives = [alt for _, alt in judged]
    chosen = next(((c, a) for c, a in judged if a.gate != "stop"), None)
    if chosen is None:
        return RouteDecision(
            request_id=req.request_id,
            decision="stop",
            selected_route=None,
            selected_kind=None,
            score=None,
            reason=DECISION_STOP,
            alternatives=alternatives,
            router=spec.name,
            router_version=spec.version,
        )
    cap, alt = chosen
    ceiling = effect_rank(cap.effect)
    fallbacks = [
        a.route_id
        for c, a in judged
        if a.gate != "stop" and a.route_id != cap.route_id and effect_rank(c.effect) <= ceiling
    ]
    return RouteDecision(
        request_id=req.request_id,
        decision=alt.gate,
        selected_route=cap.route_id,
        selected_kind=cap.kind,
        selected_effect=cap.effect,
        score=alt.score,
        reason=DECISION_RUN if alt.gate == "run" else DECISION_REVIEW,
        alternatives=alternatives,
        fallbacks=fallbacks,
        router=spec.name,
        router_version=spec.version,
    )
