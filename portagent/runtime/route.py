"""Drive the explicit router: decide each request, leave its receipt as a run's trace, and (with an
executor) run the chosen route in that same run.

Each request becomes one small run — ``run.started``, ``route.decision``, ``run.completed`` — so the
evals that judge agent runs judge routing too: a case's ``expect.route`` is checked against the
decision's selected route (``evals/view.py``), and ``portagent gate`` blocks on it like on any factor.
The decision itself is ``portagent.tools.router.route`` (pure).

With a ``RouteExecutor`` (``portagent route --execute``) the decision is followed, in the same run, by
the governed call of the chosen ``local_tool`` route — the design source's ch. 11 trace
``run.started, route.decision, tool.call, tool.result, run.completed``:

- ``run``: the route's ToolSpec (from the router's ``tool_files``) is called through the ``ToolGateway``
  with the request's ``args`` — schema, policy, approvals, idempotency, budget (the request's
  ``max_cost_usd``) as for any tool call;
- ``review``: the same call, but the policy gets a rule making that tool need a person's approval: the
  run ends ``waiting_approval`` with the card; after ``approvals approve`` the same command runs it
  (the card is found by scope ``route:<router>:<request_id>:<input hash>``, tool and arguments: a card
  binds its own request only) — once: the effect ledger;
- a route that fails before a useful result (``handler_error``, ``timeout``, ``rate_limited``) falls
  back to the decision's ``fallbacks`` (equal or lower effect only) in order;
- ``stop``: nothing runs;
- ``mcp_tool``, ``a2a_agent`` and ``human_review`` routes are not executed here: the run completes
  with the decision and says so in its final output.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts.agent import Budget
from portagent.contracts.errors import UsageError
from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.router import RouteDecision, RouteRequest, RouterSpec, effect_rank
from portagent.contracts.tool import ToolSpec
from portagent.core.clock import Clock, IdFactory
from portagent.core.versions import PORTAGENT_VERSION
from portagent.tools.router import review_causes, route
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


FALLBACK_ERRORS = frozenset({"handler_error", "timeout", "rate_limited"})
"""Failures before a useful result: the next fallback route is tried (design source R9.5)."""
EXECUTED_KINDS = frozenset({"local_tool"})


@dataclass
class RouteExecutor:
    """What ``route --execute`` runs: the ToolSpecs the ``local_tool`` routes name, under a policy."""

    tools: dict[str, ToolSpec]
    policy: PermissionPolicy
    base_dir: Path
    tool_folders: dict[str, Path] = field(default_factory=dict)
    """Tool name → the folder of the tools file that declared it, where its handlers are looked for first
    (a tools file shared with agents keeps its handler module beside it)."""


def load_executor(spec: RouterSpec, spec_path: str | Path) -> RouteExecutor:
    """The router's ``tool_files`` and ``policy`` (relative to its spec); every ``local_tool`` route's
    ``target`` must name one of those tools, whose effect is no higher than the route's (UsageError otherwise,
    before anything runs)."""
    from portagent.contracts.loader import load_spec_file
    from portagent.contracts.tool import ToolSet

    base = Path(spec_path).resolve().parent
    tools: dict[str, ToolSpec] = {}
    tool_folders: dict[str, Path] = {}
    for ref in spec.tool_files:
        path = base / ref
        if not path.is_file():
            raise UsageError(f"router {spec.name}: tool_files: {ref} not found (next to {spec_path})")
        data = load_spec_file(path)
        found = (
            [data] if isinstance(data, ToolSpec) else list(data.tools) if isinstance(data, ToolSet) else None
        )
        if found is None:
            raise UsageError(f"router {spec.name}: {ref} is not a tools file (kind: tool or tools)")
        tools.update({t.name: t for t in found})
        tool_folders.update({t.name: path.parent for t in found})
    policy = PermissionPolicy()
    if spec.policy is not None:
        if not (base / spec.policy).is_file():
            raise UsageError(f"router {spec.name}: policy {spec.policy} not found (next to {spec_path})")
        policy = load_spec_file(base / spec.policy, PermissionPolicy)
    for cap in spec.registry:
        if cap.kind in EXECUTED_KINDS and cap.target not in tools:
            known = ", ".join(sorted(tools)) or "none: the router has no tool_files"
            raise UsageError(
                f"router {spec.name}: route {cap.route_id} runs tool {cap.target or '(no target)'!r}, "
                f"which no tool_files entry defines (tools: {known})"
            )
        tool = tools.get(cap.target) if cap.kind in EXECUTED_KINDS else None
        if tool is not None and effect_rank(tool.effect) > effect_rank(cap.effect):
            # the gate judges the route's declared effect: a read route running a mail-sending tool would
            # pass a read request's least-privilege check and send the mail
            raise UsageError(
                f"router {spec.name}: route {cap.route_id} is declared effect {cap.effect}, but its tool "
                f"{tool.name!r} has effect {tool.effect}; declare the route's effect as at least the tool's"
            )
    return RouteExecutor(tools, policy, base, tool_folders)


def decide(
    spec: RouterSpec,
    requests: Sequence[RouteRequest],
    *,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    trace_id: str | None = None,
    executor: RouteExecutor | None = None,
) -> list[RoutedRequest]:
    """Route every request; each gets a run (its own trace unless ``trace_id`` joins them to a caller's).
    With ``executor`` the chosen route runs in that run (the module's docstring)."""
    import asyncio

    return asyncio.run(adecide(spec, requests, clock=clock, ids=ids, trace_id=trace_id, executor=executor))


async def adecide(
    spec: RouterSpec,
    requests: Sequence[RouteRequest],
    *,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    trace_id: str | None = None,
    executor: RouteExecutor | None = None,
) -> list[RoutedRequest]:
    """``decide`` inside a running event loop."""
    from portagent.contracts._base import short_hash

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
            policy_hash=short_hash(executor.policy.hash_payload()) if executor is not None else "",
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
        final: dict[str, Any] = {
            "decision": decision.decision,
            "route": decision.selected_route,
            "score": decision.score,
            "reason": decision.reason,
        }
        status, stop_reason, cost, calls = "completed", "route_decided", 0.0, 0
        if executor is not None and decision.decision != "stop":
            with _handler_scope(executor):
                done = await _execute(spec, req, decision, executor, rec)
            status, stop_reason, cost, calls = done.status, done.stop_reason, done.cost_usd, done.calls
            final["execution"] = done.summary
        rec.emit(
            "run.completed",
            root=True,
            status=status,
            stop_reason=stop_reason,
            final_output=final,
            tool_calls=calls,
            cost_usd=cost,
            cost_source="computed",
        )
        text = "".join(e.model_dump_json(exclude_none=False) + "\n" for e in rec.events)
        out.append(RoutedRequest(req, decision, list(rec.events), text))
    return out


@dataclass(frozen=True)
class _Done:
    status: str
    stop_reason: str
    cost_usd: float
    calls: int
    summary: dict[str, Any]


def route_scope(spec: RouterSpec, req: RouteRequest) -> str:
    """The approval scope of a request's executed routes: ``route:<router>:<request_id>:<input hash>``.

    A reviewer approves a call for the request on the card (its input, user scope, environment are the
    card's evidence), not for any request that happens to pass the same arguments to the same tool: a
    request with another id or another input makes a card of its own, and only the same request run
    again finds the decided card. The hash covers the whole request, as ``run.started`` records it."""
    from portagent.contracts._base import canonical_json, sha256_hex

    digest = sha256_hex(canonical_json(req.model_dump(mode="json", exclude_defaults=True)))[:12]
    return f"route:{spec.name}:{req.request_id}:{digest}"


def _handler_scope(executor: RouteExecutor) -> contextlib.AbstractContextManager[Any]:
    """Handlers (``module:function`` strings) resolve as in an agent's run (``contracts/bundle.py``
    ``plan_handlers``): in the folder of the tools file that declared the tool first, then the router spec's
    folder, then the other tools files' folders, then ``sys.path`` — without putting a folder on
    ``sys.path`` (``core/handler_folders.py``)."""
    from portagent.contracts.bundle import folder_name
    from portagent.tools.handlers import plan_scope, within

    base = folder_name(executor.base_dir)
    declared = [
        (tool, folder_name(executor.tool_folders.get(name, executor.base_dir)))
        for name, tool in executor.tools.items()
    ]
    return within(plan_scope([base], declared))


async def _execute(
    spec: RouterSpec, req: RouteRequest, decision: RouteDecision, executor: RouteExecutor, rec: TraceRecorder
) -> _Done:
    """Run the decided route (then its fallbacks while one fails before a useful result) in ``rec``'s run."""
    from portagent.contracts.policy import PolicyRule
    from portagent.core.budgets import RunBudget
    from portagent.tools.context import GatewayContext
    from portagent.tools.gateway import ToolGateway

    by_id = {c.route_id: c for c in spec.registry}
    gates = {a.route_id: a.gate for a in decision.alternatives}
    chosen = [r for r in [decision.selected_route, *decision.fallbacks] if r is not None]
    review = [
        PolicyRule(
            id=f"router-review:{r}",
            tool=by_id[r].target,
            decision="approval_required",
            reason=f"router {spec.name}: route {r} needs review ({'; '.join(review_causes(spec, by_id[r], req))})",
        )
        for r in chosen
        if gates.get(r) == "review" and by_id[r].kind in EXECUTED_KINDS
    ]
    policy = executor.policy.model_copy(update={"rules": [*review, *executor.policy.rules]})
    # ``max_cost_usd: 0`` asks for free routes only — a limit of nothing, not "no limit": a tool that costs
    # anything is refused
    budget = RunBudget(Budget(), max_cost_usd=req.max_cost_usd)
    ctx = GatewayContext(
        run_id=rec.run_id,
        scope=route_scope(spec, req),
        provider=ROUTER_PROVIDER,
        agent=spec.name,
        actor="user",
        scopes=list(req.user_scope),
        env=req.environment,
        context={"request_id": req.request_id},
        budget=budget,
        recorder=rec,
        clock=rec.clock,
        ids=rec.ids,
    )
    gateway = ToolGateway(executor.tools, ctx, policy=policy, approver="defer")
    tried: list[dict[str, Any]] = []
    status, stop_reason = "completed", "route_executed"
    for route_id in chosen:
        cap = by_id[route_id]
        if cap.kind not in EXECUTED_KINDS:
            tried.append(
                {
                    "route": route_id,
                    "executed": False,
                    "why": f"{cap.kind} routes are not executed by portagent route",
                }
            )
            # handed on, as when it is the decision's own route: after a failed local route this is the
            # fallback the request ends on, not a failure of the run
            status, stop_reason = "completed", "route_decided"
            break
        obs = await gateway.call(cap.target, dict(req.args))
        tried.append({"route": route_id, "tool": cap.target, "ok": obs.ok, "error": obs.error})
        if obs.ok:
            tried[-1]["output"] = obs.to_model()
            status, stop_reason = "completed", "route_executed"
            break
        if obs.error == "approval_required":
            tried[-1]["approval_id"] = gateway.pending_approvals[-1] if gateway.pending_approvals else None
            status, stop_reason = "waiting_approval", "approval_pending"
            break
        if obs.error == "budget_exhausted":
            details = obs.details if isinstance(obs.details, dict) else {}
            status, stop_reason = "budget_exhausted", str(details.get("limit", "max_cost_usd"))
            break
        status, stop_reason = "failed", "route_failed"
        if obs.error not in FALLBACK_ERRORS:
            break
    summary = {"routes": tried, "fell_back": len(tried) > 1}  # moved past the chosen route, run or not
    return _Done(status, stop_reason, round(budget.cost_usd, 8), budget.tool_calls, summary)


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
