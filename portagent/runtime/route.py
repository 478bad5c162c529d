"""Drive the explicit router: decide each request and leave its receipt as a run's trace.

Each request becomes one small run — ``run.started``, ``route.decision``, ``run.completed`` — so the
evals that judge agent runs judge routing too: a case's ``expect.route`` is checked against the
decision's selected route (``evals/view.py``), and ``portagent gate`` blocks on it like on any factor.
The decision itself is ``portagent.tools.router.route`` (pure); nothing here executes a route.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from portagent.contracts.router import RouteDecision, RouteRequest, RouterSpec
from portagent.core.clock import Clock, IdFactory
from portagent.core.versions import PORTAGENT_VERSION
from portagent.tools.router import route
from portagent.tracing.recorder import TraceRecorder

ROUTER_PROVIDER = "router"
"""The ``provider`` of a routing run's events: no vendor answers it."""


@dataclass(frozen=True)
class RoutedRequest:
    """One request's decision and the events of its run."""

    request: RouteRequest
    decision: RouteDecision
    events: list[Any]
    trace_text: str


def decide(
    spec: RouterSpec,
    requests: Sequence[RouteRequest],
    *,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    trace_id: str | None = None,
) -> list[RoutedRequest]:
    """Route every request; each gets a run (its own trace unless ``trace_id`` joins them to a caller's)."""
    ids = ids or IdFactory()
    out: list[RoutedRequest] = []
    for req in requests:
        rec = TraceRecorder(
            run_id=ids.run_id(),
            provider=ROUTER_PROVIDER,
            agent=spec.name,
            clock=clock,
            ids=ids,
            trace_id=trace_id,
        )
        rec.emit(
            "run.started",
            root=True,
            agent_version=spec.version,
            spec_hash=spec.canonical_hash()[:16],
            policy_hash="",
            sdk="portagent",
            sdk_version=PORTAGENT_VERSION,
            model="",
            case_id=req.request_id,
            source="live",  # decided now from the registry: nothing replayed, no vendor involved
            mode="direct",
            input=req.model_dump(mode="json", exclude_defaults=True),
        )
        decision = route(spec, req)
        rec.emit(
            "route.decision",
            request_id=req.request_id,
            decision=decision.decision,
            selected_route=decision.selected_route,
            selected_kind=decision.selected_kind,
            score=decision.score,
            reason=decision.reason,
            alternatives=[a.model_dump(mode="json") for a in decision.alternatives],
            fallbacks=decision.fallbacks,
            router_version=spec.version,
        )
        rec.emit(
            "run.completed",
            root=True,
            status="completed",
            stop_reason="route_decided",
            final_output={
                "decision": decision.decision,
                "route": decision.selected_route,
                "score": decision.score,
                "reason": decision.reason,
            },
            cost_usd=0.0,
            cost_source="computed",
        )
        text = "".join(e.model_dump_json(exclude_none=False) + "\n" for e in rec.events)
        out.append(RoutedRequest(req, decision, list(rec.events), text))
    return out


def write_routed(routed: Sequence[RoutedRequest], out: Path) -> None:
    """``out/decisions.json`` (every receipt) and ``out/<request_id>/trace.jsonl`` (each run)."""
    import json

    from portagent.core.files import write_text_atomic
    from portagent.core.secrets import mask_text

    for r in routed:
        write_text_atomic(out / r.request.request_id / "trace.jsonl", mask_text(r.trace_text))
    receipts = [r.decision.model_dump(mode="json") for r in routed]
    write_text_atomic(
        out / "decisions.json", mask_text(json.dumps(receipts, indent=2, ensure_ascii=False) + "\n")
    )
